import { createServer } from 'node:http';

/**
 * A webhook receiver as its own process, for the webhook tests: listens on 127.0.0.1 (PORT, default a free
 * port), prints `receiver listening <url>`, then one JSON line per request `{n, status, signature, event_id,
 * body}` (body: the raw body as received). Answers 503 to the first FAIL_FIRST requests, then 200.
 */
const failFirst = Number(process.env.FAIL_FIRST ?? 0);
let n = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    n += 1;
    const status = n <= failFirst ? 503 : 200;
    process.stdout.write(
      `${JSON.stringify({
        n,
        status,
        method: req.method,
        signature: req.headers['palmid-signature'] ?? null,
        event_id: req.headers['palmid-event-id'] ?? null,
        body: Buffer.concat(chunks).toString('utf8'),
      })}\n`,
    );
    res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'try later');
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`receiver listening http://127.0.0.1:${port}/hook\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
