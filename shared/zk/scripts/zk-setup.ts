/**
 * Regenerates the palmid predicate circuit artifacts in shared/zk/src/artifacts/:
 *   circom2 (WASM compiler) → r1cs + witness wasm; snarkjs powers of tau (phase 1, BN254, 2^10) →
 *   Groth16 circuit-specific setup (phase 2) → zkey, verification key, manifest.
 *
 *   npx tsx shared/zk/scripts/zk-setup.ts                  # dev setup: one OS-random contribution per phase
 *   npx tsx shared/zk/scripts/zk-setup.ts --deterministic  # reproducible, INSECURE (toxic waste is public)
 *   npx tsx shared/zk/scripts/zk-setup.ts --out /tmp/x     # write somewhere else (e.g. to diff)
 *   npx tsx shared/zk/scripts/zk-setup.ts --check          # only recompile: exit 1 if the artifacts are stale
 *
 * This is a one-party setup: whoever runs it could keep the toxic waste and forge proofs. snarkjs
 * discards its contribution randomness, which is good enough for development and sandbox. Production
 * replaces phase 1 by a public multi-party ceremony file and phase 2 by contributions from several
 * independent parties (see docs/zk-proofs.md). The deterministic mode derives every secret from the
 * public beacon: anyone can recompute the toxic waste, so it exists only to test this pipeline.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { curves, powersOfTau, zKey } from 'snarkjs';

const CIRCUIT = 'palmid_predicate';
const PTAU_POWER = 10;
// Public beacon: the final step of both phases, so the result is not under the sole control of the
// contributor. In production this would be a value unknown before the ceremony (e.g. a future block hash).
const BEACON = createHash('sha256').update('palmid zk beacon v1').digest('hex');
const BEACON_ITERATIONS_EXP = 10;

const here = dirname(fileURLToPath(import.meta.url));
const sharedDir = resolve(here, '..');
const repoRoot = resolve(sharedDir, '..');
const require = createRequire(import.meta.url);

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const deterministic = args.includes('--deterministic');
  const check = args.includes('--check');
  const outIdx = args.indexOf('--out');
  const outDir =
    outIdx >= 0 && args[outIdx + 1] ? resolve(args[outIdx + 1]!) : join(sharedDir, 'src/zk/artifacts');
  const work = mkdtempSync(join(tmpdir(), 'palmid-zk-'));
  const t0 = Date.now();
  const step = (msg: string) => console.log(`[zk-setup +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

  try {
    step(`compiling ${CIRCUIT}.circom with circom2 (--O2)`);
    const circomCli = require.resolve('circom2/cli.js');
    const compilerVersion = execFileSync(process.execPath, [circomCli, '--version'], {
      encoding: 'utf8',
    }).trim();
    const compileOut = execFileSync(
      process.execPath,
      [
        circomCli,
        join(sharedDir, 'src/zk/circuits', `${CIRCUIT}.circom`),
        '--r1cs',
        '--wasm',
        '--O2',
        '-l',
        join(repoRoot, 'node_modules'),
        '-o',
        work,
      ],
      { encoding: 'utf8' },
    );
    const constraints = Number(/non-linear constraints: (\d+)/.exec(compileOut)?.[1] ?? Number.NaN);
    const r1cs = join(work, `${CIRCUIT}.r1cs`);
    const wasm = join(work, `${CIRCUIT}_js`, `${CIRCUIT}.wasm`);

    if (check) {
      // circom output is deterministic: a different witness generator means the circuit (or the
      // compiler) changed since the artifacts were made.
      const manifest = JSON.parse(readFileSync(join(outDir, 'manifest.json'), 'utf8'));
      const fresh = sha256(wasm);
      const shipped = createHash('sha256')
        .update(gunzipSync(readFileSync(join(outDir, `${CIRCUIT}.wasm.gz`))))
        .digest('hex');
      if (fresh !== manifest.sha256?.wasm || fresh !== shipped) {
        console.error('zk artifacts are stale: run `npx tsx shared/zk/scripts/zk-setup.ts` and commit them');
        process.exitCode = 1;
      } else step('artifacts match the circuit');
      return;
    }

    const bn128 = await curves.getCurveFromName('bn128');
    const ptau0 = join(work, 'pot_0.ptau');
    const ptau1 = join(work, 'pot_1.ptau');
    const ptauBeacon = join(work, 'pot_beacon.ptau');
    const ptauFinal = join(work, 'pot_final.ptau');
    step(`phase 1: new powers of tau 2^${PTAU_POWER}`);
    await powersOfTau.newAccumulator(bn128, PTAU_POWER, ptau0);
    let ptauPrev = ptau0;
    if (!deterministic) {
      step('phase 1: contribution (OS randomness, discarded)');
      await powersOfTau.contribute(ptau0, ptau1, 'palmid dev contribution', randomBytes(64).toString('hex'));
      ptauPrev = ptau1;
    }
    step('phase 1: beacon');
    await powersOfTau.beacon(ptauPrev, ptauBeacon, 'palmid beacon', BEACON, BEACON_ITERATIONS_EXP);
    step('phase 1: prepare phase 2');
    await powersOfTau.preparePhase2(ptauBeacon, ptauFinal);

    const zkey0 = join(work, `${CIRCUIT}_0.zkey`);
    const zkey1 = join(work, `${CIRCUIT}_1.zkey`);
    const zkeyFinal = join(work, `${CIRCUIT}.zkey`);
    step('phase 2: new Groth16 zkey');
    await zKey.newZKey(r1cs, ptauFinal, zkey0);
    let zkeyPrev = zkey0;
    if (!deterministic) {
      step('phase 2: contribution (OS randomness, discarded)');
      await zKey.contribute(zkey0, zkey1, 'palmid dev contribution', randomBytes(64).toString('hex'));
      zkeyPrev = zkey1;
    }
    step('phase 2: beacon');
    await zKey.beacon(zkeyPrev, zkeyFinal, 'palmid beacon', BEACON, BEACON_ITERATIONS_EXP);
    step('checking the zkey against the circuit and the powers of tau');
    if (!(await zKey.verifyFromR1cs(r1cs, ptauFinal, zkeyFinal)))
      throw new Error('zkey does not match r1cs/ptau');
    const vkey = await zKey.exportVerificationKey(zkeyFinal);

    mkdirSync(outDir, { recursive: true });
    // The witness generator compresses ~3x; the zkey (random curve points) does not, so it stays raw.
    writeFileSync(join(outDir, `${CIRCUIT}.wasm.gz`), gzipSync(readFileSync(wasm), { level: 9 }));
    copyFileSync(zkeyFinal, join(outDir, `${CIRCUIT}.zkey`));
    writeFileSync(join(outDir, 'verification_key.json'), `${JSON.stringify(vkey, null, 1)}\n`);
    const manifest = {
      circuit: CIRCUIT,
      compiler: compilerVersion.replace(/\s+/g, ' '),
      proving_system: 'groth16',
      curve: 'bn128',
      constraints,
      public_inputs: vkey.nPublic,
      ptau_power: PTAU_POWER,
      setup: deterministic
        ? 'deterministic (INSECURE: toxic waste derivable from the public beacon)'
        : 'dev: one OS-random contribution per phase (discarded) + public beacon',
      beacon: { hash: BEACON, iterations_exp: BEACON_ITERATIONS_EXP },
      generated_at: new Date().toISOString(),
      // verification_key.json is not hashed: it is derived from the zkey (a test checks that) and
      // reformatted by biome.
      sha256: {
        wasm: sha256(wasm),
        [`${CIRCUIT}.wasm.gz`]: sha256(join(outDir, `${CIRCUIT}.wasm.gz`)),
        [`${CIRCUIT}.zkey`]: sha256(join(outDir, `${CIRCUIT}.zkey`)),
      },
    };
    writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    // Keep `npm run lint` green: format the JSON the way biome wants it (best effort outside the repo).
    try {
      const biome = require.resolve('@biomejs/biome/bin/biome');
      const files = [join(outDir, 'verification_key.json'), join(outDir, 'manifest.json')];
      execFileSync(process.execPath, [biome, 'format', '--write', ...files], { stdio: 'ignore' });
    } catch {
      step('note: biome did not format the JSON artifacts');
    }
    step(`done: ${constraints} constraints, artifacts in ${outDir}`);
    await bn128.terminate();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
