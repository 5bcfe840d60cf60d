import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { optOut } from './ci.ts';
import { freePort, waitFor } from './ports.ts';

/**
 * A throwaway redis-server on a random loopback port, no persistence. Suites that need it skip where
 * Debian's `redis-server` is not installed, and fail under CI (test/support/requirements.ts).
 */
export interface TestRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export function findRedisServer(): string | null {
  const candidates = [
    process.env.PALMID_REDIS_SERVER,
    '/usr/bin/redis-server',
    '/usr/local/bin/redis-server',
  ];
  try {
    candidates.push(
      execFileSync('sh', ['-c', 'command -v redis-server'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim(),
    );
  } catch {
    // not on PATH
  }
  for (const c of candidates) {
    if (!c) continue;
    try {
      execFileSync(c, ['--version'], { stdio: 'ignore' });
      return c;
    } catch {
      // not this one
    }
  }
  return null;
}

export function redisUnavailable(): string | null {
  const asked = optOut('PALMID_SKIP_REDIS');
  if (asked) return asked;
  if (!findRedisServer())
    return 'redis-server not found (apt-get install redis-server, or set PALMID_REDIS_SERVER)';
  return null;
}

export async function startRedis(): Promise<TestRedis> {
  const bin = findRedisServer();
  if (!bin) throw new Error(redisUnavailable() ?? 'redis-server not found');
  const port = await freePort();
  const child: ChildProcess = spawn(
    bin,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'warning',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  const keep = (d: Buffer) => {
    log = (log + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const killOnExit = () => {
    if (!exited) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const url = `redis://127.0.0.1:${port}`;
  const { Redis } = await import('ioredis');
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`redis-server exited during start-up:\n${log}`);
        const client = new Redis(url, {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        client.on('error', () => {}); // refused until the server listens: connect() rejects, which is enough
        try {
          await client.connect();
          return (await client.ping()) === 'PONG';
        } finally {
          client.disconnect();
        }
      },
      10_000,
      'redis-server start-up',
    );
  } catch (err) {
    killOnExit();
    throw err;
  }
  return {
    url,
    port,
    async stop() {
      process.off('exit', killOnExit);
      if (exited) return;
      const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await done;
      clearTimeout(timer);
    },
  };
}
