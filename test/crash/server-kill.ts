import { closeContext, createContext } from '@palmid/server/bootstrap';
import { loadConfig } from '@palmid/server/config';
import { attestPalms, provisionDevice } from '@palmid/server/dev/testing';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { createVendor } from '@palmid/server/modules/vendors/service';
import SQLite from 'better-sqlite3';
import { api, run, type ServerProc, sqliteServerEnv, startServer, tempDir } from '../e2e/harness.ts';
import { randomTemplate } from '../support/templates.ts';
import { ExactGallery, ExactMatcher } from './writer.ts';

/**
 * Crash safety of the real server process: HTTP clients write (attributes, consents, one-call auth
 * resolutions) while the server is SIGKILLed at a random moment; after each restart every write that got a
 * 2xx answer must be readable through the API. At the end SQLite's integrity_check and `admin audit verify`
 * (as a process) must pass.
 */
export interface ServerKillFigures {
  kills: number;
  acknowledged: number;
  byKind: Record<string, number>;
}

export async function runServerKills(opts: { kills: number }): Promise<ServerKillFigures> {
  const tmp = tempDir('palmid-srvkill-');
  const env = sqliteServerEnv(tmp.dir);
  const seedCtx = await createContext(loadConfig(env), {
    matcher: new ExactMatcher(),
    gallery: new ExactGallery(),
  });
  const vendor = await createVendor(seedCtx.database.db, { name: 'Kill Cafe', url: 'https://kill.example' });
  // the vendor's capture host: one-call resolutions carry palms it attests (docs/vendor-api.md)
  const device = await provisionDevice(
    seedCtx,
    await createPvs(seedCtx.database.db, { name: 'kill host', vendorId: vendor.vendor_id }),
  );
  // Its own key, so that its creates do not spend the other vendor's rate budget.
  const creator = await createVendor(seedCtx.database.db, { name: 'Rush Cafe', url: 'https://rush.example' });
  await closeContext(seedCtx);
  let server: ServerProc = await startServer(env);
  const figures: ServerKillFigures = { kills: 0, acknowledged: 0, byKind: {} };
  try {
    const template = randomTemplate();
    const created = await api(server.base, 'POST', '/api/v1/mpc/users/create', {
      key: vendor.api_key,
      body: { palms: attestPalms(device, [{ hand: 'right' as const, template }]) },
    });
    if (created.status !== 201) throw new Error(`enrol: ${created.status} ${JSON.stringify(created.body)}`);
    const token = created.body.data.user_token as string;
    const acked = { attr: [] as string[], consent: [] as string[], auth: [] as string[] };
    /** POST /api/v1/auth/create answers (group commit, db/group-commit.ts), checked in the file at the end. */
    const createdIds: string[] = [];
    for (let k = 0; k < opts.kills; k++) {
      let stop = false;
      let n = 0;
      const loop = async (write: () => Promise<void>) => {
        while (!stop) await write().catch(() => undefined);
      };
      const writers = [
        loop(async () => {
          const name = `k${k}_a${n++}`;
          const r = await api(server.base, 'PUT', `/v1/attributes/${name}`, {
            token,
            body: { value: `v${n}` },
          });
          if (r.status === 200) {
            acked.attr.push(name);
            figures.byKind.attr = (figures.byKind.attr ?? 0) + 1;
          } else if (r.status === 429) await new Promise((res) => setTimeout(res, 50));
        }),
        loop(async () => {
          const r = await api(server.base, 'POST', '/v1/consents', {
            token,
            body: {
              vendor_id: vendor.vendor_id,
              attributes: [{ name: 'email', purpose: 'receipts', retention_days: 1 }],
            },
          });
          if (r.status === 201) {
            acked.consent.push(r.body.data.consent_id as string);
            figures.byKind.consent = (figures.byKind.consent ?? 0) + 1;
          } else if (r.status === 429) await new Promise((res) => setTimeout(res, 50));
        }),
        loop(async () => {
          const r = await api(server.base, 'POST', '/api/v1/auth', {
            key: vendor.api_key,
            body: {
              auth_context: { type: 'login' },
              palm: device.direct({ template, hand: 'right', liveness: 0.99 }),
            },
          });
          if (r.status === 200) {
            acked.auth.push(r.body.data.auth_id as string);
            figures.byKind.auth = (figures.byKind.auth ?? 0) + 1;
          } else if (r.status === 429) await new Promise((res) => setTimeout(res, 50));
        }),
        // Four clients at once, so that creates share commits.
        ...[0, 1, 2, 3].map(() =>
          loop(async () => {
            const r = await api(server.base, 'POST', '/api/v1/auth/create', {
              key: creator.api_key,
              body: { auth_context: { type: 'login', expires_in_s: 3600 } },
            });
            if (r.status === 201) {
              createdIds.push(r.body.data.auth_id as string);
              figures.byKind.create = (figures.byKind.create ?? 0) + 1;
            } else if (r.status === 429) await new Promise((res) => setTimeout(res, 50));
          }),
        ),
      ];
      const createdBefore = createdIds.length;
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 800));
      // On a loaded machine the first answers can take longer than the window: kill once creates flow.
      for (let waited = 0; createdIds.length === createdBefore && waited < 10_000; waited += 20)
        await new Promise((r) => setTimeout(r, 20));
      await server.stop('SIGKILL');
      stop = true;
      await Promise.all(writers);
      figures.kills += 1;
      server = await startServer({ ...env, PORT: String(server.port) });
      // every acknowledged write survives the crash
      for (const name of acked.attr) {
        const r = await api(server.base, 'GET', `/v1/attributes/${name}`, { token });
        if (r.status !== 200) throw new Error(`kill ${k}: acknowledged attribute ${name} lost (${r.status})`);
      }
      const consents = await api(server.base, 'GET', '/v1/consents?all=true', { token });
      const ids = new Set((consents.body.data.consents as { consent_id: string }[]).map((c) => c.consent_id));
      for (const id of acked.consent)
        if (!ids.has(id)) throw new Error(`kill ${k}: acknowledged consent ${id} lost`);
      for (const id of acked.auth) {
        const r = await api(server.base, 'GET', `/api/v1/auth/${id}/status`, { key: vendor.api_key });
        if (r.body.data?.status !== 'completed')
          throw new Error(`kill ${k}: acknowledged auth ${id} is ${JSON.stringify(r.body)}`);
      }
      // stay under the per-token and per-key rate limits of the verifying reads
      acked.attr.splice(0, Math.max(0, acked.attr.length - 15));
      acked.auth.splice(0, Math.max(0, acked.auth.length - 15));
    }
    figures.acknowledged = Object.values(figures.byKind).reduce((a, b) => a + b, 0);
    await server.stop('SIGKILL');
    const db = new SQLite(`${tmp.dir}/palmid.db`);
    const integrity = db.pragma('integrity_check', { simple: true });
    const has = db.prepare('select 1 from auth_contexts where id = ?').pluck();
    const lost = createdIds.filter((id) => has.get(id) === undefined);
    db.close();
    if (integrity !== 'ok') throw new Error(`integrity_check: ${String(integrity)}`);
    if (lost.length > 0)
      throw new Error(`${lost.length} of ${createdIds.length} acknowledged creates lost, e.g. ${lost[0]}`);
    const out = await run('server/src/cli/admin.ts', ['audit', 'verify'], {
      DATABASE_URL: env.DATABASE_URL,
      PALMID_KEY_FILE: env.PALMID_KEY_FILE,
    });
    if (!/intact/.test(out)) throw new Error(`audit verify: ${out}`);
    return figures;
  } finally {
    await server.stop('SIGKILL');
    tmp.remove();
  }
}
