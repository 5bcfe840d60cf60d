import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** The page sources live in `web/` at the repository root (plain TypeScript, HTML and CSS). */
export const WEB_ROOT = `${dirname(createRequire(import.meta.url).resolve('@palmid/web/package.json'))}/`;

export interface Asset {
  body: Buffer;
  /** The same bytes gzipped once up front: the bundles carry zod and shrink about fourfold. */
  gzip: Buffer;
  type: string;
  etag: string;
}

const TYPES = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
} as const;

function asset(body: Buffer | Uint8Array, kind: keyof typeof TYPES): Asset {
  const buf = Buffer.from(body);
  const etag = `"${createHash('sha256').update(buf).digest('base64url').slice(0, 22)}"`;
  return { body: buf, gzip: gzipSync(buf, { level: 9 }), type: TYPES[kind], etag };
}

/**
 * Everything the two pages need, keyed by URL path. The scripts are bundled with esbuild in memory on the
 * first request (≈100 ms), so there is no build step to forget and nothing generated in the tree; zod
 * schemas from `@palmid/contracts` are bundled in, nothing is fetched from a CDN.
 */
export async function buildAssets(): Promise<Map<string, Asset>> {
  const out = await build({
    entryPoints: { portal: `${WEB_ROOT}portal/main.ts`, console: `${WEB_ROOT}console/main.ts` },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    write: false,
    outdir: '/web',
    logLevel: 'silent',
  });
  const assets = new Map<string, Asset>();
  for (const file of out.outputFiles) assets.set(file.path, asset(file.contents, 'js'));
  assets.set('/web/app.css', asset(await readFile(`${WEB_ROOT}lib/app.css`), 'css'));
  assets.set('/portal', asset(await readFile(`${WEB_ROOT}portal/index.html`), 'html'));
  assets.set('/console', asset(await readFile(`${WEB_ROOT}console/index.html`), 'html'));
  return assets;
}
