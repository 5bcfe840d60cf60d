#!/usr/bin/env node
import { installFatalHandlers } from '@palmid/contracts/cli/fatal';
import { AppError } from '@palmid/contracts/errors';
import { Command, CommanderError, Option } from 'commander';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { Keyring, loadMasterKey } from '../crypto/keyring.ts';
import { type Database, openDatabase } from '../db/index.ts';
import {
  type AuditAnchor,
  anchorPath,
  checkAnchor,
  currentAnchor,
  FOREIGN_ANCHOR,
  readAnchorFile,
} from '../modules/audit/anchor.ts';
import { verifyAuditChain } from '../modules/audit/service.ts';
import { createPvs, listPvs, rekeyPvs, revokePvs } from '../modules/pvs/service.ts';
import { announceRevocation } from '../modules/revocation/watcher.ts';
import { issueUserToken, requireUser, revokeAllTokens } from '../modules/users/service.ts';
import {
  createVendor,
  listVendors,
  revokeKeys,
  rotateKey,
  VENDOR_SCOPES,
  type VendorScope,
} from '../modules/vendors/service.ts';
import {
  createVerifier,
  listVerifiers,
  parseVerifiedAttributes,
  revokeVerifier,
  VERIFIED_ATTRIBUTE_NAMES,
} from '../modules/verification/service.ts';
import { createEndpoint, deleteEndpoint, listEndpoints } from '../modules/webhooks/service.ts';
import { rotateMasterKey } from '../ops/rotate-master.ts';

/**
 * Operator CLI on the server's database (`npm run admin -- <command>`). Same configuration keys as the
 * server; `--db` overrides DATABASE_URL. `--json` prints machine-readable JSON on stdout.
 */
interface Globals {
  db?: string;
  json?: boolean;
}

interface Store {
  config: Config;
  database: Database;
  keyring: Keyring;
}

installFatalHandlers('admin');

const program = new Command('admin')
  .description('palmid operator CLI: vendors, kiosks, user tokens, audit verification')
  .option(
    '--db <url>',
    'database URL (sqlite:<path> or postgres://…); default DATABASE_URL or sqlite:./data/palmid.db',
  )
  .option('--json', 'print JSON on stdout')
  .exitOverride()
  .showHelpAfterError('(run with --help for usage)')
  .addHelpText('after', '\nExit codes (docs/cli.md): 0 ok, 1 a failure or a negative result, 2 bad usage.');

function globals(): Globals {
  return program.opts<Globals>();
}

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const g = globals();
  const config = loadConfig(process.env, g.db ? { DATABASE_URL: g.db } : {});
  const database = await openDatabase(config.DATABASE_URL);
  try {
    const keyring = new Keyring(loadMasterKey(config.PALMID_MASTER_KEY, config.PALMID_KEY_FILE));
    return await fn({ config, database, keyring });
  } finally {
    await database.close();
  }
}

function print(value: unknown, human: (v: never) => string): void {
  if (globals().json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else process.stdout.write(`${human(value as never)}\n`);
}

function parseScopes(text: string): VendorScope[] {
  const scopes = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of scopes) {
    if (!(VENDOR_SCOPES as readonly string[]).includes(s))
      throw new AppError('INVALID_REQUEST', `unknown scope '${s}' (allowed: ${VENDOR_SCOPES.join(', ')})`);
  }
  return scopes as VendorScope[];
}

const vendor = program.command('vendor').description('manage vendors and their API keys');
vendor
  .command('create')
  .description('create a vendor and its first API key (shown once)')
  .requiredOption('--name <name>', 'display name')
  .option('--url <url>', 'vendor URL (appears in ledger transactions)', '')
  .addOption(
    new Option(
      '--mode <mode>',
      'key mode; default: the one the server of PALMID_ENV accepts (live in production, test elsewhere)',
    ).choices(['test', 'live']),
  )
  .option('--scopes <list>', `comma-separated scopes (${VENDOR_SCOPES.join(',')})`, VENDOR_SCOPES.join(','))
  .action(async (o: { name: string; url: string; mode?: 'test' | 'live'; scopes: string }) => {
    const scopes = parseScopes(o.scopes);
    const res = await withStore(async (s) => {
      // a production server refuses test keys and every other one refuses live keys (docs/vendor-api.md)
      const accepted = s.config.PALMID_ENV === 'production' ? 'live' : 'test';
      const mode = o.mode ?? accepted;
      if (mode !== accepted)
        process.stderr.write(
          `note: a ${mode} key is refused by this ${s.config.PALMID_ENV} server (PALMID_ENV); it works only against ${mode === 'live' ? 'a production server' : 'a development or sandbox server'}\n`,
        );
      return createVendor(s.database.db, { name: o.name, url: o.url, mode, scopes });
    });
    print(
      res,
      (r: typeof res) =>
        `vendor ${r.vendor_id} (${r.name}, ${r.mode}, scopes ${r.scopes.join(',')})\napi key: ${r.api_key}\nStore the key now: it is shown only once.`,
    );
  });
vendor
  .command('rotate-key')
  .description('issue a new API key and revoke the old ones at once (their open sockets close within 1 s)')
  .argument('<vendor_id>')
  .action(async (id: string) => {
    const res = await withStore(async (s) => {
      const out = await rotateKey(s.database.db, id);
      await announceRevocation(s.config.REDIS_URL, { kind: 'vendor', id });
      return out;
    });
    print(res, (r: typeof res) => `new api key: ${r.api_key}\nrevoked ${r.revoked} old key(s)`);
  });
vendor
  .command('revoke-key')
  .description('revoke every API key of a vendor (their open sockets close within 1 s)')
  .argument('<vendor_id>')
  .action(async (id: string) => {
    const res = await withStore(async (s) => {
      const out = await revokeKeys(s.database.db, id);
      await announceRevocation(s.config.REDIS_URL, { kind: 'vendor', id });
      return out;
    });
    print(res, (r: typeof res) => `revoked ${r.revoked} key(s) of ${r.vendor_id}`);
  });
vendor
  .command('list')
  .description('list vendors')
  .action(async () => {
    const rows = await withStore((s) => listVendors(s.database.db));
    const out = rows.map((r) => ({
      vendor_id: r.id,
      name: r.name,
      url: r.url,
      mode: r.mode,
      scopes: r.scopes.split(','),
    }));
    print(
      out,
      (v: typeof out) => v.map((r) => `${r.vendor_id}  ${r.mode}  ${r.name}`).join('\n') || '(no vendors)',
    );
  });

const webhook = vendor
  .command('webhook')
  .description('a vendor\'s signed webhook endpoints (docs/vendor-api.md, "Webhooks")');
webhook
  .command('add')
  .description('register a webhook endpoint; prints its signing secret once')
  .argument('<vendor_id>')
  .requiredOption('--url <url>', 'https:// URL on a public address (development: also http:// loopback)')
  .option('--events <list>', 'comma-separated event types (default: all)')
  .action(async (vendorId: string, o: { url: string; events?: string }) => {
    const res = await withStore(async (s) => {
      if (!(await listVendors(s.database.db)).some((v) => v.id === vendorId))
        throw new AppError('NOT_FOUND', `no vendor ${vendorId}`);
      const events = o.events
        ?.split(',')
        .map((e) => e.trim())
        .filter(Boolean);
      return createEndpoint(
        { keyring: s.keyring, now: () => Date.now(), config: s.config },
        s.database.db,
        vendorId,
        { url: o.url, ...(events ? { events } : {}) },
      );
    });
    print(
      res,
      (r: typeof res) =>
        `webhook ${r.id} → ${r.url} (${r.events.join(', ')})\nsigning secret: ${r.secret}\nStore the secret now: it is shown only once.`,
    );
  });
webhook
  .command('list')
  .description("list a vendor's webhook endpoints")
  .argument('<vendor_id>')
  .action(async (vendorId: string) => {
    const rows = await withStore((s) => listEndpoints(s.database.db, vendorId));
    print(
      rows,
      (v: typeof rows) =>
        v.map((w) => `${w.id}  ${w.url}  ${w.events.join(',')}`).join('\n') || '(no webhooks)',
    );
  });
webhook
  .command('remove')
  .description('delete a webhook endpoint')
  .argument('<vendor_id>')
  .argument('<webhook_id>')
  .action(async (vendorId: string, id: string) => {
    await withStore((s) => deleteEndpoint(s.database.db, vendorId, id, Date.now()));
    print({ id, deleted: true }, () => `deleted ${id}`);
  });

const pvs = program.command('pvs').description('manage kiosks (palm-vein scanner systems)');
pvs
  .command('create')
  .description(
    'register a kiosk or an integrator capture host; prints its device token and one-time provisioning secret once',
  )
  .requiredOption('--name <name>', 'kiosk name')
  .option('--vendor <vendor_id>', 'serve only this vendor (omit: enrolment and any vendor)')
  .action(async (o: { name: string; vendor?: string }) => {
    const res = await withStore((s) =>
      createPvs(s.database.db, { name: o.name, vendorId: o.vendor ?? null }),
    );
    print(
      res,
      (r: typeof res) =>
        `kiosk ${r.pvs_id} (${r.name})\ndevice token: ${r.device_token}\nprovisioning secret: ${r.provisioning_secret}\nStore both now: they are shown only once. The device's first connection with the secret registers its key.`,
    );
  });
pvs
  .command('list')
  .description('list kiosks')
  .action(async () => {
    const rows = await withStore((s) => listPvs(s.database.db));
    const out = rows.map((r) => ({
      pvs_id: r.id,
      name: r.name,
      vendor_id: r.vendor_id,
      revoked: r.revoked_at !== null,
    }));
    print(
      out,
      (v: typeof out) =>
        v
          .map(
            (r) =>
              `${r.pvs_id}  ${r.name}${r.vendor_id ? `  vendor ${r.vendor_id}` : ''}${r.revoked ? '  (revoked)' : ''}`,
          )
          .join('\n') || '(no kiosks)',
    );
  });
pvs
  .command('rekey')
  .description(
    "drop a device's registered capture key and print a new one-time provisioning secret (a replaced or reinstalled device)",
  )
  .argument('<pvs_id>')
  .action(async (id: string) => {
    const res = await withStore((s) => rekeyPvs(s.database.db, id));
    print(
      res,
      (r: typeof res) =>
        `kiosk ${r.pvs_id}: key dropped\nprovisioning secret: ${r.provisioning_secret}\nSet it on the device (provisioningSecret); its next connection registers its new key.`,
    );
  });
pvs
  .command('revoke')
  .description('revoke a kiosk device token (its open sockets close within 1 s)')
  .argument('<pvs_id>')
  .action(async (id: string) => {
    const res = await withStore(async (s) => {
      const out = await revokePvs(s.database.db, id);
      await announceRevocation(s.config.REDIS_URL, { kind: 'pvs', id });
      return out;
    });
    print(res, () => `kiosk ${id} revoked`);
  });

const user = program.command('user').description('user support operations');
user
  .command('token')
  .description(
    'issue a user bearer token (30 days by default): `user token <user_id>`; ' +
      'revoke every token of the user at once: `user token revoke <user_id>`',
  )
  .argument('<user_id|revoke>', "the user's internal id, or `revoke`")
  .argument('[user_id]', 'with `revoke`: the user whose tokens are revoked')
  .action(async (first: string, second: string | undefined) => {
    if (first === 'revoke') {
      if (second === undefined) throw new AppError('INVALID_REQUEST', 'user token revoke needs a <user_id>');
      const res = await withStore(async (s) => {
        await requireUser(s.database.db, second);
        return { user_id: second, revoked: await revokeAllTokens(s.database.db, second, Date.now()) };
      });
      print(res, (r: typeof res) => `revoked ${r.revoked} token(s) of user ${r.user_id}`);
      return;
    }
    if (second !== undefined) throw new AppError('INVALID_REQUEST', `unexpected argument '${second}'`);
    const res = await withStore(async (s) => {
      await requireUser(s.database.db, first);
      return issueUserToken({ config: s.config, now: Date.now }, s.database.db, first);
    });
    print(res, (r: typeof res) => `user token: ${r.user_token}\nexpires: ${r.expires_at}`);
  });

const audit = program.command('audit').description('audit log');
audit
  .command('verify')
  .description(
    'verify the hash chain of the whole audit log and that it still extends its anchor; exit code 1 if anything was edited, removed or rolled back',
  )
  .option('--anchor <file>', "anchor to check against (default: the server's anchor file, when present)")
  .action(async (o: { anchor?: string }) => {
    const res = await withStore(async (s) => {
      const chain = await verifyAuditChain(s.database.db, s.keyring);
      const file = o.anchor ?? anchorPath(s.config);
      let anchor: AuditAnchor | undefined;
      try {
        anchor = readAnchorFile(file);
      } catch (err) {
        throw new AppError('INVALID_REQUEST', `${file}: ${(err as Error).message}`);
      }
      if (o.anchor && !anchor) throw new AppError('NOT_FOUND', `${file}: no such anchor file`);
      const problems = [
        ...chain.problems,
        ...(anchor ? await checkAnchor(s.database.db, s.keyring, anchor) : []),
      ];
      return {
        ...chain,
        ok: problems.length === 0,
        problems,
        anchor: anchor ? { file, seq: anchor.seq, at: anchor.at } : null,
      };
    });
    print(res, (r: typeof res) =>
      r.ok
        ? `audit log intact: ${r.rows} record(s)${r.anchor ? `; extends the anchor of ${r.anchor.at} (seq ${r.anchor.seq})` : '; no anchor to check against'}`
        : r.problems.length === 1 && r.problems[0]!.problem === FOREIGN_ANCHOR
          ? `audit anchor ${r.anchor?.file}: ${FOREIGN_ANCHOR}.\nThe chain itself is intact (${r.rows} record(s)); point --anchor (or PALMID_AUDIT_ANCHOR) at this database's anchor.`
          : `AUDIT LOG TAMPERED (${r.problems.length} problem(s)):\n${r.problems.map((p) => `  seq ${p.seq ?? '-'}: ${p.problem}`).join('\n')}`,
    );
    if (!res.ok) process.exitCode = 1;
  });
audit
  .command('anchor')
  .description(
    'print the signed head of the audit chain (JSON), to store outside the database for `verify --anchor`',
  )
  .action(async () => {
    const anchor = await withStore((s) => currentAnchor(s.database.db, s.keyring));
    process.stdout.write(`${JSON.stringify(anchor)}\n`);
  });

const verifier = program
  .command('verifier')
  .description('registered verifiers that sign attestations of verified attributes (docs/user-api.md)');
verifier
  .command('create')
  .description(
    'register a verifier; prints its private key once (hand it to the issuer: only the public key is stored)',
  )
  .requiredOption('--name <name>', 'display name (e.g. the KYC provider)')
  .option(
    '--attributes <list>',
    `comma-separated attributes it may attest (${VERIFIED_ATTRIBUTE_NAMES.join(',')})`,
    'age_verified,identity_verified',
  )
  .action(async (o: { name: string; attributes: string }) => {
    const attributes = parseVerifiedAttributes(o.attributes);
    const res = await withStore((s) => createVerifier(s.database.db, { name: o.name, attributes }));
    print(
      res,
      (r: typeof res) =>
        `verifier ${r.verifier_id} (${r.name}; may attest ${r.attributes.join(', ')})\nkid: ${r.kid}\n` +
        `private key (JWK): ${JSON.stringify(r.private_jwk)}\nGive the private key to the issuer now: it is shown only once and not stored.`,
    );
  });
verifier
  .command('list')
  .description('list verifiers')
  .action(async () => {
    const rows = await withStore((s) => listVerifiers(s.database.db));
    print(
      rows,
      (v: typeof rows) =>
        v
          .map(
            (r) =>
              `${r.verifier_id}  ${r.name}  ${r.attributes.join(',')}${r.revoked_at ? `  (revoked ${r.revoked_at})` : ''}`,
          )
          .join('\n') || '(no verifiers)',
    );
  });
verifier
  .command('revoke')
  .description('revoke a verifier: its attestations are refused from now on')
  .argument('<verifier_id>')
  .action(async (id: string) => {
    const res = await withStore((s) => revokeVerifier(s.database.db, id));
    print(res, (r: typeof res) => `verifier ${r.verifier_id} revoked at ${r.revoked_at}`);
  });

const keys = program.command('keys').description('master key operations');
keys
  .command('rotate-master')
  .description(
    'move everything the master key protects to a new key (docs/deployment.md §4); stop every server first, then start them with the new key',
  )
  .requiredOption(
    '--new-key-file <path>',
    'file holding the new master key (64 hex); a fresh key is generated there (mode 0600) if the file does not exist',
  )
  .option('--batch <n>', 'rows per transaction', '500')
  .action(async (opts: { newKeyFile: string; batch: string }) => {
    const res = await withStore(async (s) => {
      const oldKey = loadMasterKey(s.config.PALMID_MASTER_KEY, s.config.PALMID_KEY_FILE);
      const newKey = loadMasterKey(undefined, opts.newKeyFile);
      const report = await rotateMasterKey(s.database.db, oldKey, newKey, {
        batchSize: Math.max(1, Number(opts.batch) || 500),
        anchorFile: anchorPath(s.config),
      });
      return { ...report, new_key_file: opts.newKeyFile };
    });
    print(
      res,
      (r: typeof res) =>
        `master key rotated: ${r.users.rewrapped} data key(s) re-wrapped (${r.users.already} already, ${r.users.erased} erased), ` +
        `${r.results.resealed} auth result(s) and ${r.idempotency.resealed} kiosk answer(s) re-sealed, audit head ${r.audit.resigned ? 're-signed' : 'unsigned (empty log)'}, audit anchor ${r.anchor ?? 'absent'}.\n` +
        `Start the servers with the key in ${r.new_key_file} (PALMID_KEY_FILE or PALMID_MASTER_KEY), then destroy the old key.`,
    );
  });

export async function main(argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed the message or the help (docs/cli.md: bad usage is 2).
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    const message =
      err instanceof ConfigError || err instanceof AppError
        ? err.message
        : `error: ${(err as Error).message}`;
    if (globals().json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    process.stderr.write(`${message}\n`);
    // A wrong value or id is bad usage; anything else (an unreachable database, a failed write) a failure.
    const usage =
      err instanceof ConfigError ||
      (err instanceof AppError && ['INVALID_REQUEST', 'NOT_FOUND', 'FORBIDDEN'].includes(err.code));
    process.exitCode = usage ? 2 : 1;
  }
}

await main(process.argv);
