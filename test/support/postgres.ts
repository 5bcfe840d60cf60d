import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { optOut } from './ci.ts';
import { freePort, waitFor } from './ports.ts';

/**
 * A throwaway PostgreSQL for tests and benchmarks: Debian's `postgresql` binaries, a cluster initialised in
 * a temp dir, a random loopback port, the unix socket inside the temp dir, fsync off unless `durable`. Stopped and deleted
 * by `stop()` (and, as a last resort, when the process exits).
 *
 * PostgreSQL refuses to run as root, so under root the server runs as the `postgres` OS user that the
 * Debian package creates (falling back to `nobody`).
 */
export interface TestPostgres {
  /** Superuser URL of the `postgres` maintenance database. */
  url: string;
  port: number;
  /** The postmaster's process id (the `postgres` binary is spawned directly), for CPU accounting. */
  pid: number | undefined;
  /** Creates an empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  stop(): Promise<void>;
}

/** The bin directory holding initdb and postgres (highest installed version), or null. */
export function findPostgresBin(): string | null {
  const candidates: string[] = [];
  if (process.env.PALMID_PG_BIN) candidates.push(process.env.PALMID_PG_BIN);
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(join(root, v, 'bin'));
  }
  try {
    candidates.push(
      execFileSync('pg_config', ['--bindir'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim(),
    );
  } catch {
    // pg_config is in libpq-dev, often absent
  }
  return candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'postgres'))) ?? null;
}

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function postgresUnavailable(): string | null {
  const asked = optOut('PALMID_SKIP_POSTGRES');
  if (asked) return asked;
  if (!findPostgresBin())
    return 'PostgreSQL binaries not found (apt-get install postgresql, or set PALMID_PG_BIN)';
  return null;
}

function osUser(name: string): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
    const gid = Number(execFileSync('id', ['-g', name], { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

export interface StartOptions {
  /**
   * Keep PostgreSQL's crash safety (fsync, synchronous commit, full-page writes), as in production. Tests
   * leave it off for speed; benchmarks turn it on so that commits cost what they cost in production (and
   * compare fairly with SQLite, which runs with synchronous=FULL).
   */
  durable?: boolean;
}

export async function startPostgres(options: StartOptions = {}): Promise<TestPostgres> {
  const bin = findPostgresBin();
  if (!bin) throw new Error(postgresUnavailable() ?? 'PostgreSQL not found');
  const dir = mkdtempSync(join(tmpdir(), 'palmid-pg-'));
  const data = join(dir, 'data');
  const asUser = process.getuid?.() === 0 ? (osUser('postgres') ?? osUser('nobody')) : null;
  if (asUser) chownSync(dir, asUser.uid, asUser.gid);
  const spawnOpts = {
    cwd: dir,
    env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' },
    ...(asUser ? { uid: asUser.uid, gid: asUser.gid } : {}),
  };
  execFileSync(
    join(bin, 'initdb'),
    [
      '-D',
      data,
      '-U',
      'palmid',
      '--auth=trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
      '--no-instructions',
    ],
    { ...spawnOpts, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const port = await freePort();
  const child: ChildProcess = spawn(
    join(bin, 'postgres'),
    [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      ...(options.durable
        ? []
        : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      '-c',
      'max_connections=200',
      '-c',
      'shared_buffers=64MB',
    ],
    { ...spawnOpts, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.on('data', (d: Buffer) => {
    log = (log + d.toString()).slice(-8000);
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const killOnExit = () => {
    if (!exited) child.kill('SIGQUIT');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);

  const url = `postgres://palmid@127.0.0.1:${port}/postgres`;
  const pg = (await import('pg')).default;
  const query = async (sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`postgres exited during start-up:\n${log}`);
        await query('SELECT 1');
        return true;
      },
      20_000,
      'PostgreSQL start-up',
    );
  } catch (err) {
    killOnExit();
    throw err;
  }

  let counter = 0;
  return {
    url,
    port,
    pid: child.pid,
    async createDatabase(name = `palmid_${process.pid}_${++counter}_${Date.now().toString(36)}`) {
      await query(`CREATE DATABASE "${name}"`);
      return `postgres://palmid@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      process.off('exit', killOnExit);
      if (!exited) {
        const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGINT'); // fast shutdown: disconnect clients, no checkpoint wait beyond what's needed
        const timer = setTimeout(() => child.kill('SIGQUIT'), 5000);
        await done;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
