import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { ExactGallery, ExactMatcher } from '@palmid/palm/gallery/exact';
import { closeContext, createContext } from '@palmid/server/bootstrap';
import { loadConfig } from '@palmid/server/config';
import type { AppContext, VendorPrincipal } from '@palmid/server/context';
import { auditedAccess } from '@palmid/server/modules/attributes/audit';
import { writeAttribute } from '@palmid/server/modules/attributes/service';
import { verifyAuditChain } from '@palmid/server/modules/audit/service';
import { identifyPalm, resolveWithPalm } from '@palmid/server/modules/auth-contexts/resolve';
import { createAuthContext } from '@palmid/server/modules/auth-contexts/state';
import { grantConsent } from '@palmid/server/modules/consents/service';
import { sql } from 'kysely';
import { seededUniform } from '../support/seeded.ts';

/**
 * The crash-safety child: opens the real store with the real services and writes in a loop until it is
 * SIGKILLed. Protocol on stdout, one line each:
 *   `LOADED` (modules loaded; waits for `go` on stdin so the parent can keep a warm spare),
 *   `CHECK {integrity, audit_ok, audit_rows, verified, missing}` (after recovery: integrity_check, the
 *   audit chain, and the acknowledged writes of the previous run, given in the ack file),
 *   `ACK <json>` after a write's transaction committed (the parent records these as acknowledged).
 */
export interface Ack {
  kind: 'attr' | 'consent' | 'auth';
  user: string;
  /** attribute name, consent id or auth id */
  key: string;
  value?: string;
}

export interface Fixture {
  vendor: VendorPrincipal;
  users: { id: string; template: string }[];
}

/** The same exact-equality doubles as server/dev/testing.ts, from their dependency-light module. */
export { ExactGallery, ExactMatcher };

const CALLER = { ip: '127.0.0.1', userAgent: 'crash-writer' };

async function verifyAcks(ctx: AppContext, acks: Ack[]): Promise<string[]> {
  const db = ctx.database.db;
  const missing: string[] = [];
  for (const a of acks) {
    if (a.kind === 'attr') {
      const row = await db
        .selectFrom('attributes')
        .select('name')
        .where('user_id', '=', a.user)
        .where('name', '=', a.key)
        .executeTakeFirst();
      if (!row) missing.push(`attr ${a.key}`);
    } else if (a.kind === 'consent') {
      const row = await db.selectFrom('consents').select('id').where('id', '=', a.key).executeTakeFirst();
      if (!row) missing.push(`consent ${a.key}`);
    } else {
      const row = await db
        .selectFrom('auth_contexts')
        .select(['id', 'status'])
        .where('id', '=', a.key)
        .executeTakeFirst();
      if (row?.status !== 'completed') missing.push(`auth ${a.key} (${row?.status ?? 'absent'})`);
      const tx = await db
        .selectFrom('ledger')
        .select(sql<number>`count(*)`.as('n'))
        .where('context_id', '=', a.key)
        .executeTakeFirst();
      if (!tx || Number(tx.n) < 1) missing.push(`ledger ${a.key}`);
    }
  }
  return missing;
}

export async function main(argv: string[]): Promise<void> {
  const [dbPath, keyFile, fixtureFile, ackFile, seedArg] = argv;
  const fixture = JSON.parse(readFileSync(fixtureFile!, 'utf8')) as Fixture;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out('LOADED');
  if (!process.env.CRASH_NO_WAIT) {
    const rl = createInterface({ input: process.stdin });
    await new Promise<void>((resolve) => rl.once('line', () => resolve()));
    rl.close();
  }
  const ctx = await createContext(
    loadConfig({ DATABASE_URL: `sqlite:${dbPath}`, PALMID_KEY_FILE: keyFile!, PALMID_ENV: 'sandbox' }),
    { matcher: new ExactMatcher(), gallery: new ExactGallery() },
  );
  for (const u of fixture.users)
    ctx.gallery.add({
      userId: u.id,
      palmId: u.id,
      hand: 'right',
      template: Buffer.from(u.template, 'base64'),
    });
  const integrity = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(ctx.database.db);
  const audit = await verifyAuditChain(ctx.database.db, ctx.keyring);
  let previous: Ack[] = [];
  try {
    previous = readFileSync(ackFile!, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Ack);
  } catch {
    // first run: nothing acknowledged yet
  }
  const missing = await verifyAcks(ctx, previous);
  out(
    `CHECK ${JSON.stringify({
      integrity: integrity.rows.map((r) => r.integrity_check).join(';'),
      audit_ok: audit.ok,
      audit_rows: audit.rows,
      audit_problems: audit.problems.slice(0, 3),
      verified: previous.length,
      missing: missing.slice(0, 10),
    })}`,
  );
  if (process.env.CRASH_VERIFY_ONLY) {
    await closeContext(ctx);
    return;
  }
  const rnd = seededUniform(Number(seedArg ?? 1) >>> 0 || 1);
  const tag = `${Date.now().toString(36)}${Math.floor(rnd() * 1e6).toString(36)}`;
  for (let n = 0; ; n++) {
    const user = fixture.users[Math.floor(rnd() * fixture.users.length)]!;
    const r = rnd();
    if (r < 0.45) {
      const name = `c_${tag}_${n}`;
      await auditedAccess(
        ctx,
        CALLER,
        user.id,
        'UPDATE',
        (trx) =>
          writeAttribute(
            ctx,
            trx,
            user.id,
            { name, value: `v${n}`, clientEncrypted: false },
            'user',
            ctx.now(),
          ),
        [name],
      );
      out(`ACK ${JSON.stringify({ kind: 'attr', user: user.id, key: name } satisfies Ack)}`);
    } else if (r < 0.7) {
      const consent = await ctx.database.db.transaction().execute((trx) =>
        grantConsent(
          trx,
          user.id,
          {
            vendor_id: fixture.vendor.id,
            attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }],
          },
          ctx.now(),
        ),
      );
      out(`ACK ${JSON.stringify({ kind: 'consent', user: user.id, key: consent.consent_id } satisfies Ack)}`);
    } else {
      // Three at once through group commit (db/group-commit.ts), as concurrent requests would: they share
      // commits, and each is acknowledged only when its promise resolved.
      // (captures are verified upstream, modules/devices; this campaign exercises the writes)
      const seen = identifyPalm(ctx, {
        template: Buffer.from(user.template, 'base64'),
        hand: 'right',
        liveness: 0.99,
        capture: { ok: true, deviceId: 'crash-writer' },
      });
      await Promise.all(
        [0, 1, 2].map(async (j) => {
          const { context: row } = await ctx.database.write(async (trx) => {
            const created = await createAuthContext(ctx, trx, fixture.vendor, {
              type: 'payment',
              amount: 100 + n * 3 + j,
              attributes_optional: ['email'],
            });
            return resolveWithPalm(ctx, trx, created, seen, CALLER);
          });
          out(`ACK ${JSON.stringify({ kind: 'auth', user: user.id, key: row.id } satisfies Ack)}`);
        }),
      );
    }
  }
}

if (process.argv[1] && /writer(-\d+)?\.(ts|mjs)$/.test(process.argv[1])) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stdout.write(`FATAL ${(err as Error).stack ?? String(err)}\n`);
    process.exit(2);
  });
}
