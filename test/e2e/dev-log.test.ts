import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProc, startServer, tempDir } from './harness.ts';

/**
 * docs/quickstart.md: "In development the log is one readable line per request" — a real server process
 * in development with the default log format, read from its stdout.
 */
describe('development log', () => {
  const tmp = tempDir('palmid-devlog-');
  let server: ServerProc | undefined;
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  it('says each request once, on one readable line with its status, time and request id', async () => {
    server = await startServer({
      DATABASE_URL: `sqlite:${tmp.dir}/p.db`,
      PALMID_KEY_FILE: `${tmp.dir}/k`,
      PALMID_ENV: 'development',
      PORT: '0',
    });
    const ids: string[] = [];
    for (const path of ['/health', '/api/v1/status', '/no/such/path']) {
      const res = await fetch(`${server.base}${path}`, {
        headers: { 'x-request-id': `devlog-${ids.length}` },
      });
      ids.push(res.headers.get('x-request-id')!);
    }
    await server.waitFor(/\(request devlog-2\)/, 10_000);
    for (const [n, id] of ids.entries()) {
      const lines = server.output.filter((l) => l.includes(id));
      expect(lines, server.output.join('\n')).toHaveLength(1);
      expect(lines[0]).toMatch(
        [
          /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/health 200 \d+\.\d ms \(request devlog-0\)$/,
          /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/api\/v1\/status 401 \d+\.\d ms \(request devlog-1\)$/,
          /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/no\/such\/path 404 \d+\.\d ms \(request devlog-2\)$/,
        ][n]!,
      );
    }
    expect(server.output.join('\n')).not.toMatch(/incoming request|request completed/);
  }, 90_000);
});
