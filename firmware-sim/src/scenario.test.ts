import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
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
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: 0 });
    try {
      const sim = new FirmwareSimulator({ source: testPatternSource });
      const seen: string[] = [];
      const at = (what: string) => () => seen.push(`${Date.now()} ${what}`);
      sim.on('palm', (p?: { identity: string }) => at(p ? `present ${p.identity}` : 'removed')());
      sim.on('unplugged', at('unplugged'));
      sim.on('replugged', at('replugged'));
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
      let finished = false;
      const run = runScenario(sim, scenario, (step) => logged.push(`${Date.now()} ${describeStep(step)}`));
      void run.done.then(() => {
        finished = true;
      });
      await vi.advanceTimersByTimeAsync(89);
      expect(finished).toBe(false); // the last step is due at 0+10+10+10+10+10+40 = 90 ms
      await vi.advanceTimersByTimeAsync(1);
      expect(finished).toBe(true);
      // each step fires its own delay after the one before it; the unplug lasts its 10 ms
      expect(seen).toEqual([
        '0 present alice',
        '20 removed',
        '30 present mallory',
        '50 unplugged',
        '60 replugged',
      ]);
      expect(logged[3]).toBe('30 present mallory:right (screen attack)');
      expect(logged.map((l) => Number(l.split(' ')[0]))).toEqual([0, 10, 20, 30, 40, 50, 90]);
      expect(sim.snapshot().faults).toEqual([]);
      sim.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a looping scenario runs until cancelled', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const sim = new FirmwareSimulator({ source: testPatternSource });
    let n = 0;
    const run = runScenario(
      sim,
      scenarioSchema.parse({ loop: true, steps: [{ after: 5, log: 'tick' }] }),
      () => {
        n += 1;
      },
    );
    await vi.advanceTimersByTimeAsync(15);
    expect(n).toBe(3); // it went round three times, one step every 5 ms
    run.cancel();
    await run.done;
    await vi.advanceTimersByTimeAsync(30);
    expect(n).toBe(3); // and not once more after the cancel
    sim.stop();
  });
});
