/**
 * Store size for capacity planning (docs/deployment.md): bytes on disk per enrolled user and per resolved
 * authentication, on SQLite and on PostgreSQL (indexes included).
 *
 *   npm run bench -- store [--users 2000] [--auths 1000]
 *
 * An enrolled user here: 2 palms (928-byte v1 templates, sealed), 5 attributes, 1 consent, 1 token.
 * An authentication: a `payment` context resolved with a palm, disclosing one consented attribute (context
 * row, ledger transaction, 2 audit rows). Writes bench/results/store.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppContext } from '@palmid/server/context';
import {
  attestBody,
  createTestApp,
  seedVendor,
  type TestApp,
  vendorDevice,
} from '@palmid/server/dev/testing';
import { writeAttribute } from '@palmid/server/modules/attributes/service';
import { grantConsent } from '@palmid/server/modules/consents/service';
import { addPalm, createUser, issueUserToken } from '@palmid/server/modules/users/service';
import { sql } from 'kysely';
import { postgresUnavailable, startPostgres } from '../test/support/postgres.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const USERS = arg('users', 2000);
const AUTHS = arg('auths', 1000);
const TEMPLATE_BYTES = 928;

async function bytesOnDisk(t: TestApp): Promise<number> {
  const db = t.ctx.database.db;
  if (t.ctx.database.kind === 'sqlite') {
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
    const path = t.ctx.database.location.slice('sqlite:'.length);
    return statSync(path).size;
  }
  await sql`vacuum analyze`.execute(db);
  const r = await sql<{ n: string | number }>`
    select coalesce(sum(pg_total_relation_size(c.oid)), 0) as n from pg_class c
    join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind = 'r'`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

async function enrol(ctx: AppContext, vendorId: string, templates: Uint8Array[]): Promise<string> {
  const now = Date.now();
  const attrs: [string, string][] = [
    ['email', 'someone.with.a.longish.name@example.com'],
    ['phone', '+4915112345678'],
    ['date_of_birth', '1990-04-12'],
    ['given_name', 'Alexandra'],
    ['family_name', 'Mustermann-Schmidt'],
  ];
  return ctx.database.db.transaction().execute(async (trx) => {
    const u = await createUser(ctx, trx, null);
    for (const [i, template] of templates.entries()) {
      const hand = i % 2 ? 'left' : 'right';
      const palmId = await addPalm(ctx, trx, u.id, u.dataKey, { hand, template });
      ctx.gallery.add({ palmId, userId: u.id, hand, template });
    }
    for (const [name, value] of attrs) await writeAttribute(ctx, trx, u.id, { name, value }, 'user', now);
    await issueUserToken(ctx, trx, u.id);
    await grantConsent(
      trx,
      u.id,
      { vendor_id: vendorId, attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }] },
      now,
    );
    return u.id;
  });
}

async function measure(store: string, env: Record<string, string>) {
  const t = await createTestApp(env);
  try {
    const v = await seedVendor(t.ctx, 'Size Vendor');
    const empty = await bytesOnDisk(t);
    const templates: Uint8Array[][] = [];
    for (let i = 0; i < USERS; i++) {
      const pair = [randomBytes(TEMPLATE_BYTES), randomBytes(TEMPLATE_BYTES)].map((b) => new Uint8Array(b));
      templates.push(pair);
      await enrol(t.ctx, v.vendor_id, pair);
    }
    const enrolled = await bytesOnDisk(t);
    // Resolve authentications through the API, so every row a real one writes is written. The contract
    // allows 100 auth requests per minute per key: the run spreads them over several vendors.
    // each vendor's palms come attested by its own capture host (docs/vendor-api.md)
    const keys = [{ key: v.api_key, device: await vendorDevice(t.ctx, v.vendor_id) }];
    let ok = 0;
    for (let i = 0; i < AUTHS; i++) {
      if (i > 0 && i % 90 === 0) {
        const more = await seedVendor(t.ctx, `Size Vendor ${i}`);
        keys.push({ key: more.api_key, device: await vendorDevice(t.ctx, more.vendor_id) });
      }
      const pair = templates[i % templates.length]!;
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers: { 'x-api-key': keys.at(-1)!.key },
        payload: attestBody(keys.at(-1)!.device, {
          auth_context: { type: 'payment', amount: 1000 + i, attributes_optional: ['email'] },
          palm: { template: Buffer.from(pair[0]!).toString('base64'), liveness: 0.99 },
        }),
      });
      if (res.statusCode === 200) ok++;
      // The vendor route is rate limited (100/min per key); rotate to fresh vendors as needed.
      if (res.statusCode === 429) throw new Error('rate limited: lower --auths');
    }
    const authed = await bytesOnDisk(t);
    return {
      store,
      users: USERS,
      auths: ok,
      bytes_empty: empty,
      bytes_per_user: Math.round((enrolled - empty) / USERS),
      bytes_per_auth: ok ? Math.round((authed - enrolled) / ok) : null,
    };
  } finally {
    await t.close();
  }
}

const results = [];
const tmp = mkdtempSync(join(tmpdir(), 'palmid-store-'));
try {
  results.push(await measure('sqlite', { DATABASE_URL: `sqlite:${join(tmp, 'size.db')}` }));
  if (!postgresUnavailable()) {
    const pg = await startPostgres();
    try {
      results.push(await measure('postgres', { DATABASE_URL: await pg.createDatabase('size') }));
    } finally {
      await pg.stop();
    }
  } else process.stderr.write(`postgres skipped: ${postgresUnavailable()}\n`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const kib = (n: number | null) => (n === null ? '-' : (n / 1024).toFixed(2));
process.stdout.write(
  `\n| store | users | auths | KiB per enrolled user | KiB per authentication | GiB per 1M users |\n|---|---|---|---|---|---|\n${results
    .map(
      (r) =>
        `| ${r.store} | ${r.users} | ${r.auths} | ${kib(r.bytes_per_user)} | ${kib(r.bytes_per_auth)} | ${((r.bytes_per_user * 1e6) / 2 ** 30).toFixed(2)} |`,
    )
    .join('\n')}\n`,
);
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(
  join(HERE, 'results', 'store.json'),
  `${JSON.stringify({ date: new Date().toISOString(), results }, null, 2)}\n`,
);
