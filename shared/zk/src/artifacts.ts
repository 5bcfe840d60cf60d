import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { type WitnessCalculator, WitnessCalculatorBuilder } from 'circom_runtime';
import { buildBn128 } from 'ffjavascript';
import type { VerificationKey } from 'snarkjs';
import verificationKey from './artifacts/verification_key.json' with { type: 'json' };

/** Groth16 verification key of the committed setup (shared/zk/scripts/zk-setup.ts regenerates it). */
export const VERIFICATION_KEY: VerificationKey = verificationKey as VerificationKey;

const artifactUrl = (name: string) => new URL(`./artifacts/${name}`, import.meta.url);

let zkey: Uint8Array | undefined;
let witnessCalculator: Promise<WitnessCalculator> | undefined;
let witnessQueue: Promise<unknown> = Promise.resolve();

/** Proving key, read once and kept in memory. Service side only. */
export function provingKey(): Uint8Array {
  zkey ??= new Uint8Array(readFileSync(artifactUrl('palmid_predicate.zkey')));
  return zkey;
}

/**
 * Witness for the circuit (wtns file bytes). The compiled witness generator is instantiated once —
 * compiling it per proof costs more than the proof — and calls are serialised because the instance
 * has one memory.
 */
export function computeWitness(input: Record<string, unknown>): Promise<Uint8Array> {
  witnessCalculator ??= WitnessCalculatorBuilder(
    new Uint8Array(gunzipSync(readFileSync(artifactUrl('palmid_predicate.wasm.gz')))),
    // 64 MiB is ample for a few hundred constraints (the default reserves 2 GiB).
    { memorySize: 1024 },
  );
  const wc = witnessCalculator;
  const run = witnessQueue.then(async () => (await wc).calculateWTNSBin(input, true));
  witnessQueue = run.catch(() => undefined);
  return run;
}

type Engine = { terminate(): Promise<void> } | null | undefined;
const engineSlot = globalThis as { curve_bn128?: Engine };

/**
 * Vendor side: run the BN254 engine on the calling thread instead of worker threads. snarkjs uses the
 * engine cached in globalThis, so this must come before the first proof operation of the process. A
 * verification then costs about a third of the CPU (no hand-off to workers: ≈ 18 ms instead of
 * ≈ 55 ms) and the process exits without releaseZkResources. The service keeps the default
 * multi-threaded engine, which proves faster on several cores.
 */
export async function useSingleThreadedEngine(): Promise<void> {
  await releaseZkResources();
  engineSlot.curve_bn128 = await buildBn128(true);
}

/**
 * snarkjs keeps one multi-threaded BN254 instance (worker threads) in globalThis once used; a CLI or a
 * test that wants its process to exit promptly calls this when it is done with proofs.
 */
export async function releaseZkResources(): Promise<void> {
  const curve = engineSlot.curve_bn128;
  engineSlot.curve_bn128 = null;
  if (curve) await curve.terminate();
}
