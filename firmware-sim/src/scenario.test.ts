import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FirmwareSimulator } from './device.ts';
import { testPatternSource } from './image-source.ts';
import { describeStep, loadScenario, runScenario, scenarioSchema } from './scenario.ts';

const dir = mkdtempSync(join(tmpdir(), 'palmid-scenario-'));
const write = (name: string, content: unknown) => {
  const p = join(dir, name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
};

describe('scenarios', () => {
  it('the bundled example is valid', async () => {
    const s = await loadScenario(new URL('../scenarios/attack-demo.json', import.meta.url).pathname);
    expect(s.steps.some((st) => 'present' in st && st.present.attack === 'print')).toBe(true);
  });

  it('names the bad field of an invalid scenario', async () => {
    const p = write('bad.json', { steps: [{ after: 0, present: { identity: 'a', hand: 'middle' } }] });
    await expect(loadScenario(p)).rejects.toThrow(/invalid scenario .*bad\.json: steps\.0/);
    await expect(loadScenario(write('junk.json', '{nope'))).rejects.toThrow(/cannot read scenario/);
    expect(
      scenarioSchema.safeParse({ steps: [{ after: 0, remove: true, log: 'two actions' }] }).success,
    ).toBe(false);
  });

  it('plays steps in order with their delays', async () => {
    const sim = new FirmwareSimulator({ source: testPatternSource });
    const seen: string[] = [];
    sim.on('palm', (p?: { identity: string }) => seen.push(p ? `present ${p.identity}` : 'removed'));
    sim.on('unplugged', () => seen.push('unplugged'));
    sim.on('replugged', () => seen.push('replugged'));
    const scenario = scenarioSchema.parse({
      autoPresent: false,
      steps: [
        { present: { identity: 'alice', hand: 'right' } },
        { after: 10, fault: { kind: 'crc-noise', probability: 0.5 } },
        { after: 10, remove: true },
        { after: 10, present: { identity: 'mallory', hand: 'right', attack: 'screen' } },
        { after: 10, clearFaults: true },
        { after: 10, unplug: { forMs: 10 } },
        { after: 40, log: 'done' },
      ],
    });
    const logged: string[] = [];
    const t0 = Date.now();
    await runScenario(sim, scenario, (step) => logged.push(describeStep(step))).done;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(75);
    expect(seen).toEqual(['present alice', 'removed', 'present mallory', 'unplugged', 'replugged']);
    expect(logged[3]).toBe('present mallory:right (screen attack)');
    expect(sim.snapshot().faults).toEqual([]);
    sim.stop();
  });

  it('a looping scenario runs until cancelled', async () => {
    const sim = new FirmwareSimulator({ source: testPatternSource });
    let n = 0;
    const run = runScenario(
      sim,
      scenarioSchema.parse({ loop: true, steps: [{ after: 5, log: 'tick' }] }),
      () => {
        n += 1;
      },
    );
    const end = Date.now() + 5000;
    while (n < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(n).toBeGreaterThanOrEqual(3); // it went round at least three times
    run.cancel();
    await run.done;
    const after = n;
    await new Promise((r) => setTimeout(r, 30));
    expect(n).toBe(after);
    sim.stop();
  });
});
