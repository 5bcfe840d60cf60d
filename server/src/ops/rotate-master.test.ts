import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attestBody,
  attestPalms,
  createTestApp,
  seedVendor,
  type TestApp,
  type TestDevice,
  vendorDevice,
} from '../../dev/testing.ts';
import { Keyring } from '../crypto/keyring.ts';
import { openDatabase } from '../db/index.ts';
import { AnchorKeeper, checkAnchor, readAnchorFile } from '../modules/audit/anchor.ts';
import { verifyAuditChain } from '../modules/audit/service.ts';
import { recallAnswer, rememberAnswer } from '../modules/kiosk-link/idempotency.ts';
import { rotateMasterKey } from './rotate-master.ts';

const tpl = (s: string) => Buffer.from(s.padEnd(24, '.')).toString('base64');

describe('master key rotation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-rotate-'));
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  // Honours PALMID_TEST_DATABASE_URL like every test app: run once on a store both apps share.
  let url = `sqlite:${join(dir, 'palmid.db')}`;
  let vendor: { vendor_id: string; api_key: string };
  let user: { user_id: string; user_token: string };
  let authId: string;
  let before: TestApp;
  let device: TestDevice;

  const app = (key: Buffer) => createTestApp({ DATABASE_URL: url, PALMID_MASTER_KEY: key.toString('hex') });

  beforeAll(async () => {
    if (process.env.PALMID_TEST_DATABASE_URL) {
      const { createScratchDatabase } = await import('../db/scratch.ts');
      url = (await createScratchDatabase(process.env.PALMID_TEST_DATABASE_URL)).url;
    }
    before = await app(oldKey);
    vendor = await seedVendor(before.ctx, 'Rotating Vendor');
    // the vendor's capture host; its key and counter live in the database and survive the rotation
    device = await vendorDevice(before.ctx, vendor.vendor_id);
    const headers = { 'x-api-key': vendor.api_key };
    // Three users: enrolled with a palm and an attribute; erased; plain.
    const created = await before.app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/create',
      headers,
      payload: {
        attributes: { email: 'rot@example.com' },
        palms: attestPalms(device, [{ hand: 'left' as const, template: tpl('rot-left') }]),
      },
    });
    const made = created.json().data as { user_id: string; user_token: string };
    // keys are wrapped under the internal id (the user's own, from the user API), not the vendor's id
    const internal = await before.app.inject({
      method: 'GET',
      url: '/v1/attributes/user_id',
      headers: { authorization: `Bearer ${made.user_token}` },
    });
    user = { ...made, user_id: internal.json().data.value };
    await before.app.inject({
      method: 'POST',
      url: '/v1/consents',
      headers: { authorization: `Bearer ${user.user_token}` },
      payload: {
        vendor_id: vendor.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipts', retention_days: 1 }],
      },
    });
    const gone = (
      await before.app.inject({ method: 'POST', url: '/api/v1/mpc/users/create', headers, payload: {} })
    ).json().data as { user_id: string };
    await before.app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/delete',
      headers,
      payload: { user_id: gone.user_id },
    });
    await before.app.inject({ method: 'POST', url: '/api/v1/mpc/users/create', headers, payload: {} });
    const auth = await before.app.inject({
      method: 'POST',
      url: '/api/v1/auth',
      headers,
      payload: attestBody(device, {
        auth_context: { type: 'login', attributes_optional: ['email'] },
        palm: { template: tpl('rot-left'), liveness: 0.99 },
      }),
    });
    authId = auth.json().data.auth_id;
    expect(auth.json().data.auth_result).toMatchObject({
      success: true,
      attributes: { email: 'rot@example.com' },
    });
    const hook = await before.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers,
      payload: { url: 'https://hooks.example.com/rot' },
    });
    expect(hook.statusCode).toBe(201);
    await rememberAnswer(before.ctx, before.ctx.database.db, 'pvs:k1:enroll:r1', {
      user_id: user.user_id,
      claim_code: 'X',
    });
    await before.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('moves every wrapped data key, sealed result, kept answer and the audit head to the new key', async () => {
    const database = await openDatabase(url);
    try {
      // the anchor a server on the old key left behind
      const anchorFile = join(dir, 'audit-anchor.json');
      await new AnchorKeeper(database.db, new Keyring(oldKey), anchorFile).update();
      const report = await rotateMasterKey(database.db, oldKey, newKey, { batchSize: 2, anchorFile });
      expect(report.anchor).toBe('resigned');
      expect(await checkAnchor(database.db, new Keyring(newKey), readAnchorFile(anchorFile)!)).toEqual([]);
      expect(report.users).toEqual({ rewrapped: 2, already: 0, erased: 1 });
      expect(report.results).toEqual({ resealed: 1, already: 0 });
      expect(report.idempotency).toMatchObject({ resealed: 1, already: 0 });
      expect(report.webhooks).toEqual({ resealed: 1, already: 0 });
      expect(report.audit.resigned).toBe(true);
      // The old key opens nothing any more.
      const row = await database.db
        .selectFrom('users')
        .selectAll()
        .where('id', '=', user.user_id)
        .executeTakeFirstOrThrow();
      expect(() => new Keyring(oldKey).unwrap(user.user_id, row.wrapped_key!)).toThrow();
      expect((await verifyAuditChain(database.db, new Keyring(oldKey))).ok).toBe(false);
      // A rerun (after an interruption, say) finds everything done.
      const again = await rotateMasterKey(database.db, oldKey, newKey, { batchSize: 2, anchorFile });
      expect(again.anchor).toBe('already');
      expect(again.users).toEqual({ rewrapped: 0, already: 2, erased: 1 });
      expect(again.results).toEqual({ resealed: 0, already: 1 });
      expect(again.webhooks).toEqual({ resealed: 0, already: 1 });
    } finally {
      await database.close();
    }
  });

  it('a server on the new key serves everything as before', async () => {
    const after = await app(newKey);
    try {
      const headers = { 'x-api-key': vendor.api_key };
      const attrs = await after.app.inject({
        method: 'GET',
        url: '/v1/attributes/email',
        headers: { authorization: `Bearer ${user.user_token}` },
      });
      expect(attrs.json().data).toMatchObject({ name: 'email', value: 'rot@example.com' });
      const status = await after.app.inject({ method: 'GET', url: `/api/v1/auth/${authId}/status`, headers });
      expect(status.json().data).toMatchObject({ status: 'completed', auth_result: { success: true } });
      // The gallery loaded at start decrypted the template under the re-wrapped data key.
      const auth = await after.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers,
        payload: attestBody(device, {
          auth_context: { type: 'login' },
          palm: { template: tpl('rot-left'), liveness: 0.99 },
        }),
      });
      expect(auth.json().data.auth_result).toMatchObject({ success: true });
      expect(await recallAnswer(after.ctx, after.ctx.database.db, 'pvs:k1:enroll:r1')).toMatchObject({
        user_id: user.user_id,
      });
      expect((await verifyAuditChain(after.ctx.database.db, after.ctx.keyring)).ok).toBe(true);
    } finally {
      await after.close();
    }
  });

  it('refuses to re-sign a tampered audit log, changing nothing', async () => {
    const database = await openDatabase(url);
    try {
      await database.db.updateTable('audit').set({ result: 'DENIED' }).where('seq', '=', 1).execute();
      const third = randomBytes(32);
      await expect(rotateMasterKey(database.db, newKey, third)).rejects.toThrow(
        /audit chain does not verify/,
      );
      const row = await database.db
        .selectFrom('users')
        .selectAll()
        .where('id', '=', user.user_id)
        .executeTakeFirstOrThrow();
      expect(() => new Keyring(newKey).unwrap(user.user_id, row.wrapped_key!)).not.toThrow();
    } finally {
      await database.close();
    }
  });
});
