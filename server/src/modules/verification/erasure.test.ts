import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { eraseUser } from '../gdpr/service.ts';
import { dataKeyOf } from '../users/service.ts';
import { readOpenings, saveAttestation, saveOpening } from './service.ts';

describe('erasure of verification data', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('delete-me removes the user’s proof openings and attestations', async () => {
    const db = t.ctx.database.db;
    const u = await seedUser(t.ctx);
    const other = await seedUser(t.ctx);
    const authId = '5f2a3b1c-1111-4222-8333-444455556666';
    for (const who of [u.userId, other.userId]) {
      const dataKey = await dataKeyOf(t.ctx, db, who);
      await saveOpening(db, {
        authId: who === u.userId ? authId : '5f2a3b1c-1111-4222-8333-444455556667',
        userId: who,
        dataKey,
        commitment: '12345',
        opening: { attribute: 'date_of_birth', value: '19900401', salt: '42' } as never,
        now: Date.now(),
      });
      await saveAttestation(db, {
        userId: who,
        attribute: 'age_verified',
        verifierId: 'v1',
        token: 'x.y.z',
        dataKey,
        now: Date.now(),
      });
    }
    await db.transaction().execute((trx) => eraseUser(t.ctx, trx, u.userId));
    expect(await readOpenings(db, authId)).toHaveLength(0);
    const left = await db
      .selectFrom('attestations' as never)
      .selectAll()
      .execute();
    expect((left as { user_id: string }[]).map((r) => r.user_id)).toEqual([other.userId]);
  });
});
