import { installFatalHandlers } from '@palmid/contracts/cli/fatal';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { listenControl } from './control.ts';
import { FirmwareSimulator } from './device.ts';
import { type FaultInput, faultSchema } from './faults.ts';
import { createSynthPalmSource, testPatternSource } from './image-source.ts';
import { openPty } from './links/pty.ts';
import { listenTcp } from './links/tcp.ts';
import { type Presentation, parsePresentation } from './presentation.ts';
import { describeStep, loadScenario, runScenario } from './scenario.ts';
import { SENSOR_DESCRIPTIONS, SENSORS } from './synth/sensors.ts';

const intArg = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  return n;
};

function faultArg(value: string, previous: FaultInput[]): FaultInput[] {
  let raw: unknown;
  try {
    raw = value.trim().startsWith('{') ? JSON.parse(value) : { kind: value };
  } catch {
    throw new InvalidArgumentError('expected a fault kind or a JSON object');
  }
  const parsed = faultSchema.safeParse(raw);
  if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues[0]?.message ?? 'invalid fault');
  return [...previous, parsed.data];
}

function palmArg(value: string): Presentation {
  try {
    return parsePresentation(value);
  } catch {
    throw new InvalidArgumentError('expected identity:hand[:attack], e.g. alice:right or mallory:left:print');
  }
}

const program = new Command('sim')
  .description(
    'Simulated palm-vein scanner speaking the palmid wire protocol.\n' +
      'Start it, then point the agent at it: npm run agent -- doctor --device tcp:127.0.0.1:7070',
  )
  .option('--tcp [port]', 'serve the device on a TCP port (default 7070)')
  .option('--host <host>', 'TCP address to bind', '127.0.0.1')
  .option('--pty [path]', 'expose the device as a pseudo-terminal via socat (prints the path)')
  .option('--scenario <file>', 'play a scripted scenario (presentations, attacks, faults)')
  .option(
    '--palm <identity:hand[:attack]>',
    'palm presented when a capture starts and nobody is there',
    palmArg,
  )
  .option('--no-auto-present', 'wait for a scripted presentation instead of presenting --palm')
  .addOption(new Option('--source <kind>', 'frame source').choices(['synth', 'pattern']).default('synth'))
  .addOption(
    new Option(
      '--sensor <profile>',
      `what the synthetic frames look like: ${SENSORS.map((s) => `${s} (${SENSOR_DESCRIPTIONS[s]})`).join('; ')}`,
    )
      .choices(SENSORS)
      .default('simulator'),
  )
  .option(
    '--fault <kind|json>',
    'inject a fault at start (repeatable), e.g. slow or {"kind":"crc-noise","probability":0.1}',
    faultArg,
    [],
  )
  .option(
    '--control <port>',
    'loopback HTTP control port (present palms, faults) for tests and demos; 0 picks one',
    intArg('--control'),
  )
  .option('--capture-ms <ms>', 'capture duration', intArg('--capture-ms'), 300)
  .option(
    '--no-render-ahead',
    "render each frame when its capture starts, not ahead while the sensor is idle (the render then competes with the host's work and can delay the read-out)",
  )
  .option('--seed <n>', 'seed for injected noise', intArg('--seed'), 1)
  .option('-v, --verbose', 'log every command the device receives')
  .addHelpText(
    'after',
    '\nExit codes: 0 ok, 1 failure (e.g. the port is taken), 2 bad usage or a bad scenario file.',
  )
  .showHelpAfterError()
  .exitOverride();

program.action(async (opts) => {
  const palm: Presentation = opts.palm ?? { identity: 'demo', hand: 'right' };
  const sim = new FirmwareSimulator({
    source: opts.source === 'pattern' ? testPatternSource : createSynthPalmSource(opts.sensor),
    autoPresent: opts.autoPresent === false ? false : palm,
    captureMs: opts.captureMs,
    seed: opts.seed,
    renderAhead: opts.renderAhead !== false,
  });
  for (const f of opts.fault as FaultInput[]) sim.injectFault(f);
  await sim.warmUp().catch((err: unknown) => {
    process.stderr.write(`sim: image source not ready (${String(err)}); captures may fail\n`);
  });

  const log = (line: string) =>
    process.stdout.write(`[sim ${new Date().toISOString().slice(11, 23)}] ${line}\n`);
  sim.on('state', (s: string) => opts.verbose && log(`state ${s}`));
  sim.on('command', (m: { kind: string }) => opts.verbose && log(`← ${m.kind}`));
  sim.on('unplugged', () => log('unplugged'));
  sim.on('replugged', () => log('plugged in'));

  const endpoints: Array<{ device: string; close(): Promise<void> }> = [];
  try {
    if (opts.pty !== undefined)
      endpoints.push(await openPty(sim, typeof opts.pty === 'string' ? opts.pty : undefined));
    if (opts.tcp !== undefined || opts.pty === undefined) {
      const port = typeof opts.tcp === 'string' ? intArg('--tcp')(opts.tcp) : 7070;
      endpoints.push(await listenTcp(sim, port, opts.host));
    }
  } catch (err) {
    process.stderr.write(`sim: ${err instanceof Error ? err.message : String(err)}\n`);
    sim.stop();
    process.exit(1);
  }

  const control = opts.control !== undefined ? await listenControl(sim, opts.control) : undefined;
  if (control) log(`control ready: ${control.url}`);

  log(
    `${sim.model}, firmware ${sim.firmware}, ${sim.width}×${sim.height}, frames from ${opts.source}${
      opts.source === 'synth' ? ` (sensor ${opts.sensor})` : ''
    }`,
  );
  for (const e of endpoints) {
    log(`device ready: ${e.device}`);
    log(`  try: npm run agent -- doctor --device ${e.device}`);
  }
  log(opts.autoPresent === false ? 'auto-present off' : `auto-present ${palm.identity}:${palm.hand}`);

  if (opts.scenario) {
    try {
      const scenario = await loadScenario(opts.scenario);
      log(`scenario "${scenario.name}" (${scenario.steps.length} steps${scenario.loop ? ', looping' : ''})`);
      void runScenario(sim, scenario, (step, i) => log(`step ${i + 1}: ${describeStep(step)}`)).done.then(
        () => {
          if (!scenario.loop) log('scenario finished; device stays up (Ctrl-C to stop)');
        },
      );
    } catch (err) {
      process.stderr.write(`sim: ${err instanceof Error ? err.message : String(err)}\n`);
      for (const e of endpoints) await e.close();
      sim.stop();
      process.exit(2);
    }
  }

  const shutdown = async () => {
    log('stopping');
    for (const e of endpoints) await e.close();
    await control?.close();
    sim.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
});

installFatalHandlers('sim');
try {
  await program.parseAsync(process.argv);
} catch (err) {
  // commander printed the message (or the help); bad usage is exit code 2 in every palmid CLI
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  throw err;
}
