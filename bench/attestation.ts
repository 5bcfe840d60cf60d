/**
 * What attested captures cost per identification (docs/websocket.md "Attested captures"), side by side:
 * the agent's signature, the scan.request nonce, the server's check before matching on the real store
 * (key read, signature, nonce MAC) and the counter update inside the resolving transaction (a write
 * transaction timed with and without it). Prints per-operation medians and the total added to one
 * identification; writes bench/results/attestation.json.   `npx tsx bench/attestation.ts [--n 500]`
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { attestCapture, generateDeviceKey, verifyCapture } from '@palmid/contracts/crypto/capture';
import { createTestApp, provisionDevice } from '@palmid/server/dev/testing';
import {
  type CaptureVerdict,
  checkAttestation,
  scanNonce,
  settleAttestation,
} from '@palmid/server/modules/devices/service';
import { createPvs } from '@palmid/server/modules/pvs/service';

const nArg = process.argv.indexOf('--n');
const N = nArg > 0 ? Number(process.argv[nArg + 1]) : 500;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function timeEach(n: number, fn: (i: number) => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    out.push(performance.now() - t0);
  }
  return out;
}

const template = new Uint8Array(randomBytes(1024));
const sample = { template, hand: 'right' as const, quality: 0.9, liveness: 0.95 };
const key = generateDeviceKey();
const deviceId = randomUUID();

const sign = await timeEach(N, (i) =>
  attestCapture({
    privateKey: key.privateKey,
    purpose: 'identify',
    deviceId,
    subject: randomUUID(),
    nonce: randomBytes(16).toString('base64url'),
    ...sample,
    capturedAt: Date.now(),
    counter: i + 1,
  }),
);
const signed = attestCapture({
  privateKey: key.privateKey,
  purpose: 'identify',
  deviceId,
  subject: randomUUID(),
  nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
  ...sample,
  capturedAt: Date.now(),
  counter: 1,
});
const verify = await timeEach(N, () =>
  verifyCapture({
    attestation: signed,
    sample,
    purpose: 'identify',
    publicKey: key.publicKey,
    now: Date.now(),
  }),
);

const t = await createTestApp();
let issue: number[];
let check: number[];
let trxWith: number[];
let trxWithout: number[];
try {
  const db = t.ctx.database.db;
  const device = await provisionDevice(t.ctx, await createPvs(db, { name: 'bench kiosk' }));
  const subjects = Array.from({ length: N }, () => randomUUID());
  const nonces: string[] = [];
  issue = await timeEach(N, (i) => nonces.push(scanNonce(t.ctx, device.pvsId, subjects[i]!)));
  const b64 = Buffer.from(template).toString('base64');
  const verdicts: CaptureVerdict[] = [];
  check = await timeEach(N, async (i) => {
    const attestation = device.attest('identify', subjects[i]!, nonces[i], { ...sample, template: b64 });
    const v = await checkAttestation(t.ctx, {
      purpose: 'identify',
      deviceId: device.pvsId,
      subject: subjects[i],
      samples: [{ ...sample, attestation }],
    });
    if (!v.ok) throw new Error(`capture refused: ${v.why}`);
    verdicts.push(v);
  });
  // The counter is accepted inside the transaction that resolves the context: its cost is one more UPDATE
  // in a transaction that commits anyway. Measured as a write transaction with and without it.
  const write = (trx: typeof db) =>
    trx.updateTable('pvs').set({ last_seen: Date.now() }).where('id', '=', device.pvsId).execute();
  const rounds = Array.from({ length: N }, (_, i) => i);
  trxWith = [];
  trxWithout = [];
  for (const i of rounds) {
    let t0 = performance.now();
    await db.transaction().execute(async (trx) => {
      await write(trx);
    });
    trxWithout.push(performance.now() - t0);
    t0 = performance.now();
    await db.transaction().execute(async (trx) => {
      await write(trx);
      const settled = await settleAttestation(trx, verdicts[i]!, Date.now());
      if (!settled?.ok) throw new Error('counter refused');
    });
    trxWith.push(performance.now() - t0);
  }
} finally {
  await t.close();
}

const settleCost = Math.max(0, median(trxWith) - median(trxWithout));
const rows = {
  'agent: sign (Ed25519 + SHA-256 of 1 KiB)': median(sign),
  'server: verify signature only': median(verify),
  'server: scan.request nonce (HMAC, no write)': median(issue),
  'server: check before matching (key read + verify + nonce MAC)': median(check),
  'server: resolving transaction, without the counter update': median(trxWithout),
  'server: resolving transaction, with the counter update': median(trxWith),
};
const total = median(sign) + median(issue) + median(check) + settleCost;
console.table(
  Object.entries(rows).map(([operation, ms]) => ({ operation, median_ms: Number(ms.toFixed(3)) })),
);
console.log(
  `added to one identification (sign + nonce + check + counter update): ${total.toFixed(2)} ms median; n = ${N}`,
);
mkdirSync('bench/results', { recursive: true });
writeFileSync(
  'bench/results/attestation.json',
  `${JSON.stringify({ date: new Date().toISOString(), n: N, median_ms: rows, added_per_identification_ms: total }, null, 2)}\n`,
);
