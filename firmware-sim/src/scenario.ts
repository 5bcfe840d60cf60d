import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { FirmwareSimulator } from './device.ts';
import { faultSchema } from './faults.ts';
import { presentationSchema } from './presentation.ts';

const after = z.number().int().min(0).max(3_600_000).default(0);

/** One scripted step: wait `after` ms (since the previous step), then do exactly one thing. */
export const stepSchema = z.union([
  z.object({ after, present: presentationSchema }).strict(),
  z.object({ after, remove: z.literal(true) }).strict(),
  z.object({ after, fault: faultSchema }).strict(),
  z.object({ after, clearFaults: z.literal(true) }).strict(),
  z.object({ after, unplug: z.object({ forMs: z.number().int().min(0).default(0) }).strict() }).strict(),
  z.object({ after, replug: z.literal(true) }).strict(),
  z.object({ after, log: z.string() }).strict(),
]);
export type ScenarioStep = z.output<typeof stepSchema>;

export const scenarioSchema = z
  .object({
    name: z.string().default('scenario'),
    /** Start over after the last step. */
    loop: z.boolean().default(false),
    /** Palm presented whenever a capture is armed with nobody at the sensor; false turns it off. */
    autoPresent: z.union([presentationSchema, z.literal(false)]).optional(),
    steps: z.array(stepSchema).min(1),
  })
  .strict();
export type Scenario = z.output<typeof scenarioSchema>;

export async function loadScenario(file: string): Promise<Scenario> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read scenario ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = scenarioSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid scenario ${file}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  return parsed.data;
}

export function describeStep(step: ScenarioStep): string {
  if ('present' in step) {
    const p = step.present;
    return `present ${p.identity}:${p.hand}${p.attack ? ` (${p.attack} attack)` : ''}`;
  }
  if ('remove' in step) return 'remove palm';
  if ('fault' in step) return `fault ${JSON.stringify(step.fault)}`;
  if ('clearFaults' in step) return 'clear faults';
  if ('unplug' in step) return `unplug${step.unplug.forMs ? ` for ${step.unplug.forMs} ms` : ''}`;
  if ('replug' in step) return 'replug';
  return step.log;
}

export interface ScenarioRun {
  /** Resolves after the last step (never, for a looping scenario, until cancelled). */
  done: Promise<void>;
  cancel(): void;
}

export function runScenario(
  sim: FirmwareSimulator,
  scenario: Scenario,
  onStep: (step: ScenarioStep, index: number) => void = () => {},
): ScenarioRun {
  if (scenario.autoPresent !== undefined) sim.setAutoPresent(scenario.autoPresent);
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const run = (i: number) => {
    if (cancelled) return;
    if (i >= scenario.steps.length) {
      if (scenario.loop) run(0);
      else finish();
      return;
    }
    const step = scenario.steps[i]!;
    timer = setTimeout(() => {
      if (cancelled) return;
      apply(sim, step);
      onStep(step, i);
      run(i + 1);
    }, step.after);
  };
  run(0);
  return {
    done,
    cancel() {
      cancelled = true;
      if (timer) clearTimeout(timer);
      finish();
    },
  };
}

function apply(sim: FirmwareSimulator, step: ScenarioStep): void {
  if ('present' in step) sim.present(step.present);
  else if ('remove' in step) sim.remove();
  else if ('fault' in step) sim.injectFault(step.fault);
  else if ('clearFaults' in step) sim.clearFaults();
  else if ('unplug' in step) sim.unplug(step.unplug.forMs);
  else if ('replug' in step) sim.replug();
}
