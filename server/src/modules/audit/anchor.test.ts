import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import {
  AnchorKeeper,
  anchorPath,
  checkAnchor,
  currentAnchor,
  FOREIGN_ANCHOR,
  parseAnchor,
  readAnchorFile,
} from './anchor.ts';
import { appendAudit, GENESIS, HEAD_ID, headMac, verifyAuditChain } from './service.ts';

/**
 * The chain alone cannot see the whole log rolled back with its head (or wiped back to the genesis);
 * the anchor, a signed head kept outside the database, can.
 */
describe('audit anchor', () => {
  let t: TestApp;
  let path: string;
  let keeper: AnchorKeeper;
  const caller = { ip: '127.0.0.1', userAgent: 'vitest' };
  const write = async (userId: string, n: number) => {
    for (let i = 0; i < n; i++)
      await t.ctx.database.db
        .transaction()
        .execute((trx) =>
          appendAudit(trx, t.ctx.keyring, caller, [
            { userId, attributeName: `note_${i}`, operation: 'UPDATE', result: 'SUCCESS' },
          ]),
        );
  };
  const db = () => t.ctx.database.db;

  beforeAll(async () => {
    t = await createTestApp();
    path = anchorPath(t.ctx.config);
    keeper = new AnchorKeeper(db(), t.ctx.keyring, path);
  });
  afterAll(() => t.close());

  it('lives beside the database by default, mode 0600, and follows the head', async () => {
    // beside the SQLite database, named after it (PostgreSQL: beside the key file, named after the database)
    expect(path).toEqual(
      t.ctx.config.DATABASE_URL.startsWith('sqlite:')
        ? join(t.dir, 'palmid.audit-anchor.json')
        : expect.stringMatching(/audit-anchor\..+\.json$/),
    );
    const u = await seedUser(t.ctx);
    await write(u.userId, 5);
    expect(await keeper.update()).toEqual({ written: true });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const anchor = readAnchorFile(path)!;
    expect(anchor).toMatchObject({ seq: (await currentAnchor(db(), t.ctx.keyring)).seq });
    expect(anchor.seq).toBeGreaterThanOrEqual(5);
    expect(await keeper.update()).toEqual({ written: false }); // unchanged head: nothing to write
    expect(await checkAnchor(db(), t.ctx.keyring, anchor)).toEqual([]);
  });

  it('a rollback of rows and head together passes the chain check but not the anchor; the anchor never moves back', async () => {
    const u = await seedUser(t.ctx);
    const before = await currentAnchor(db(), t.ctx.keyring); // an older signed head the attacker kept
    await write(u.userId, 4);
    await keeper.update();
    const anchored = readAnchorFile(path)!;
    expect(anchored.seq).toBe(before.seq + 4);

    // the attacker deletes the newest rows and restores the old head
    await db().deleteFrom('audit').where('seq', '>', before.seq).execute();
    await db()
      .updateTable('audit_head')
      .set({ seq: before.seq, hash: before.hash, mac: before.mac })
      .where('id', '=', HEAD_ID)
      .execute();
    expect((await verifyAuditChain(db(), t.ctx.keyring)).ok).toBe(true);
    const problems = await checkAnchor(db(), t.ctx.keyring, anchored);
    expect(problems).toEqual([{ seq: anchored.seq, problem: expect.stringMatching(/rolled back or wiped/) }]);
    expect(await keeper.update()).toEqual({
      written: false,
      rollback: { anchored: anchored.seq, head: before.seq },
    });
    expect(readAnchorFile(path)).toEqual(anchored);
  });

  it('a wipe back to the unsigned genesis head is caught', async () => {
    const anchored = readAnchorFile(path)!;
    await db().deleteFrom('audit').execute();
    await db()
      .updateTable('audit_head')
      .set({ seq: 0, hash: GENESIS, mac: '' })
      .where('id', '=', HEAD_ID)
      .execute();
    expect((await verifyAuditChain(db(), t.ctx.keyring)).ok).toBe(true);
    expect(await checkAnchor(db(), t.ctx.keyring, anchored)).toHaveLength(1);
  });

  it('forged or malformed anchors are refused', async () => {
    const anchored = readAnchorFile(path)!;
    const forged = { ...anchored, seq: 0, hash: GENESIS };
    expect(await checkAnchor(db(), t.ctx.keyring, forged)).toEqual([
      { seq: null, problem: expect.stringMatching(/not signed by this master key/) },
    ]);
    for (const bad of ['{}', '[]', '{"seq":-1,"hash":"00","mac":"","at":""}', 'null'])
      expect(() => parseAnchor(bad), bad).toThrow(/not an audit anchor/);
    expect(() => parseAnchor('not json')).toThrow();
    // an unreadable anchor file is replaced rather than blocking the server
    writeFileSync(path, 'garbage');
    expect(await keeper.update()).toEqual({ written: true });
    expect(() => parseAnchor(readFileSync(path, 'utf8'))).not.toThrow();
  });

  it("another database's anchor is named as such: never overwritten, never taken for a rollback", async () => {
    const u = await seedUser(t.ctx);
    await write(u.userId, 2);
    await keeper.update();
    const ours = readAnchorFile(path)!;
    expect(ours.db).toMatch(/^[0-9a-f]{64}$/);
    // the same master key, another database (two servers started from one directory)
    const theirs = { ...ours, seq: ours.seq + 50, db: 'f'.repeat(64) };
    const signed = { ...theirs, mac: headMac(t.ctx.keyring, theirs.seq, theirs.hash) };
    expect(await checkAnchor(db(), t.ctx.keyring, signed)).toEqual([{ seq: null, problem: FOREIGN_ANCHOR }]);
    writeFileSync(path, JSON.stringify(signed));
    expect(await keeper.update()).toEqual({ written: false, foreign: path });
    expect(readAnchorFile(path)).toEqual(signed);
  });
});
