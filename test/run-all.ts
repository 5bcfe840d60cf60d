/**
 * `npm test`: Biome lint and the TypeScript check run while vitest runs every test (docs/testing.md), so
 * the whole check takes about as long as the test run rather than the sum of the three. Vitest's output
 * streams; the lint and type-check output is printed after it, each under its own heading. Exits non-zero
 * when any of the three fails. Arguments go to `vitest run`.
 */
import { type ChildProcess, spawn } from 'node:child_process';

interface Step {
  name: string;
  command: string;
  args: string[];
  /** Print as it comes (vitest) or keep until the end (the checks, so that they do not interleave). */
  stream: boolean;
}

const steps: Step[] = [
  { name: 'vitest', command: 'npx', args: ['vitest', 'run', ...process.argv.slice(2)], stream: true },
  { name: 'lint', command: 'npm', args: ['run', '--silent', 'lint'], stream: false },
  { name: 'typecheck', command: 'npm', args: ['run', '--silent', 'typecheck'], stream: false },
];

const children = new Set<ChildProcess>();
const stop = (signal: NodeJS.Signals) => {
  for (const child of children) child.kill(signal);
  process.exitCode = 130;
};
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));

interface Result {
  step: Step;
  code: number;
  seconds: number;
  output: string;
}

function run(step: Step): Promise<Result> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(step.command, step.args, {
      stdio: step.stream ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let output = '';
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const done = (code: number) => {
      children.delete(child);
      resolve({ step, code, seconds: (performance.now() - started) / 1000, output });
    };
    child.once('error', (err) => {
      output += `${step.command}: ${err.message}\n`;
      done(127);
    });
    child.once('close', (code, signal) => done(code ?? (signal ? 128 : 1)));
  });
}

const results = await Promise.all(steps.map(run));
for (const r of results) {
  if (r.step.stream) continue;
  process.stdout.write(`\n── ${r.step.name} (${r.code === 0 ? 'ok' : `failed, exit ${r.code}`}) ──\n`);
  if (r.output.trim()) process.stdout.write(r.output.endsWith('\n') ? r.output : `${r.output}\n`);
}
process.stdout.write('\n');
for (const r of results)
  process.stdout.write(
    `${r.step.name.padEnd(10)} ${r.code === 0 ? 'ok    ' : 'FAILED'} ${r.seconds.toFixed(0)} s\n`,
  );
if (results.some((r) => r.code !== 0)) process.exitCode = 1;
