import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signatureHeader } from '@palmid/contracts/webhooks';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The webhook verification code in docs/vendor-api.md ("Webhooks") works as published: the TypeScript
 * function, and the openssl/shell snippet, against signatures made the way the server makes them.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const doc = readFileSync(join(ROOT, 'docs/vendor-api.md'), 'utf8');
const snippet = (marker: string, lang: string) => {
  const m = new RegExp(`<!-- ${marker} -->\\s*\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(doc);
  if (!m) throw new Error(`docs/vendor-api.md has no ${marker} snippet`);
  return m[1]!;
};

describe('webhook verification snippets in docs/vendor-api.md', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-snippets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const secret = 'whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
  const body = JSON.stringify({
    id: 'evt_1',
    type: 'auth.updated',
    created: 1,
    data: { auth_id: 'a', status: 'completed' },
  });
  const now = Math.floor(Date.now() / 1000);

  it('the TypeScript function accepts a fresh signature and refuses tampering, another secret and old ones', async () => {
    const file = join(dir, 'verify.ts');
    writeFileSync(file, snippet('webhook-verify-ts', 'ts'));
    const { verifyPalmidSignature } = (await import(file)) as {
      verifyPalmidSignature: (s: string, b: string, h: string | undefined) => boolean;
    };
    expect(verifyPalmidSignature(secret, body, signatureHeader(secret, body, now))).toBe(true);
    expect(verifyPalmidSignature(secret, `${body} `, signatureHeader(secret, body, now))).toBe(false);
    expect(verifyPalmidSignature(`${secret}x`, body, signatureHeader(secret, body, now))).toBe(false);
    expect(verifyPalmidSignature(secret, body, signatureHeader(secret, body, now - 301))).toBe(false);
    expect(verifyPalmidSignature(secret, body, undefined)).toBe(false);
    expect(verifyPalmidSignature(secret, body, 'garbage')).toBe(false);
  });

  it('the openssl/shell snippet does the same', async () => {
    const file = join(dir, 'body.json');
    writeFileSync(file, body);
    const run = (sig: string, s = secret) =>
      new Promise<{ code: number; out: string }>((resolve) =>
        execFile(
          'sh',
          ['-c', snippet('webhook-verify-sh', 'sh')],
          { env: { ...process.env, SECRET: s, SIG: sig, BODY: file } },
          (err, out) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: out.trim() }),
        ),
      );
    expect(await run(signatureHeader(secret, body, now))).toEqual({ code: 0, out: 'valid' });
    expect(await run(signatureHeader(secret, body, now), `${secret}x`)).toEqual({ code: 1, out: 'invalid' });
    expect(await run(signatureHeader(secret, body, now - 400))).toEqual({ code: 1, out: 'invalid' });
    expect(await run('')).toEqual({ code: 1, out: 'invalid' });
  });
});
