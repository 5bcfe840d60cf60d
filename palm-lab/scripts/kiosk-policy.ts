/**
 * Measures the kiosk's multi-frame presentation-attack policy end to end on synthetic captures:
 * for each identity, captures are taken one after another (as a person re-presents the palm) and
 * fed to `PresentationPolicy` exactly as the kiosk daemon does, for several policies on the same
 * captures. Reports, per policy, how often a bona fide context is refused as an attack (BPCER per
 * transaction), how often an attack context reaches identification (APCER per transaction), the
 * give-ups and the mean number of captures.
 *
 *   tsx palm-lab/scripts/kiosk-policy.ts [--identities 300] [--seed hold] [--offset 0] [--json]
 */

import { PresentationPolicy } from '@palmid/agent/kiosk/presentation';
import { type Attack, renderPalm } from '@palmid/firmware-sim/synth/index';
import { type CaptureResult, processCapture } from '@palmid/palm/capture/pipeline';
import { Command } from 'commander';

const MAX_ATTEMPTS = 8; // the daemon's default
const POLICIES = [
  { liveFrames: 2, strikes: 1 },
  { liveFrames: 2, strikes: 2 },
  { liveFrames: 1, strikes: 1 },
];

const program = new Command()
  .description('transaction-level BPCER/APCER of the kiosk presentation policy on synthetic captures')
  .option('--identities <n>', 'identities (one hand each)', '300')
  .option('--seed <prefix>', 'identity name prefix (another prefix is another data set)', 'hold')
  .option('--offset <n>', 'index of the first identity', '0')
  .option('--json', 'print JSON')
  .parse();
const o = program.opts<{ identities: string; seed: string; offset: string; json?: boolean }>();
const n = Number(o.identities);
const offset = Number(o.offset);

type Kind = 'bona_fide' | Attack;
const kinds: Kind[] = ['bona_fide', 'print', 'screen'];
const tally = POLICIES.map(() =>
  Object.fromEntries(kinds.map((k) => [k, { identify: 0, attack: 0, gave_up: 0, captures: 0 }])),
);

for (let i = offset; i < offset + n; i++) {
  const identity = `${o.seed}${i}`;
  const hand = i % 2 ? ('left' as const) : ('right' as const);
  for (const kind of kinds) {
    const results: CaptureResult[] = [];
    const capture = async (k: number) => {
      if (results[k] === undefined) {
        const spec = { identity, hand, capture: 1_000_000 + i * MAX_ATTEMPTS + k };
        results[k] = await processCapture(
          await renderPalm(kind === 'bona_fide' ? spec : { ...spec, attack: kind }),
        );
      }
      return results[k]!;
    };
    for (const [p, policy] of POLICIES.entries()) {
      const rule = new PresentationPolicy(policy.liveFrames, policy.strikes);
      let outcome: 'identify' | 'attack' | 'gave_up' = 'gave_up';
      let k = 0;
      for (; k < MAX_ATTEMPTS; k++) {
        const v = rule.observe(await capture(k));
        if (v.kind !== 'again') {
          outcome = v.kind;
          break;
        }
      }
      const t = tally[p]![kind]!;
      t[outcome] += 1;
      t.captures += Math.min(k + 1, MAX_ATTEMPTS);
    }
  }
  if (!o.json && (i - offset + 1) % 50 === 0) process.stderr.write(`  ${i - offset + 1}/${n}\n`);
}

const pct = (x: number) => Math.round((10000 * x) / n) / 100;
const report = POLICIES.map((policy, p) => {
  const t = tally[p]!;
  return {
    live_frames: policy.liveFrames,
    strikes: policy.strikes,
    bona_fide_refused_as_attack_pct: pct(t.bona_fide!.attack),
    bona_fide_gave_up_pct: pct(t.bona_fide!.gave_up),
    bona_fide_captures_mean: Math.round((100 * t.bona_fide!.captures) / n) / 100,
    print_reaching_identify_pct: pct(t.print!.identify),
    screen_reaching_identify_pct: pct(t.screen!.identify),
  };
});
if (o.json) console.log(JSON.stringify({ identities: n, seed: o.seed, offset, policies: report }, null, 2));
else console.table(report);
