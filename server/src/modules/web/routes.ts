import { AppError } from '@palmid/contracts/errors';
import type { FastifyPluginAsync } from 'fastify';
import { type Asset, buildAssets } from './bundle.ts';
import { securityHeaders } from './headers.ts';

const PAGES = ['/portal', '/console'] as const;
const FILES = ['/web/portal.js', '/web/console.js', '/web/app.css'] as const;

/**
 * The user portal (/portal) and the vendor console (/console): static pages that talk to the public
 * APIs like any other client. See docs/web.md.
 */
export const webRoutes: FastifyPluginAsync = async (app) => {
  let assets: Promise<Map<string, Asset>> | undefined;
  const load = () => {
    assets ??= buildAssets().catch((err: unknown) => {
      assets = undefined; // a fixed source file is picked up by the next request
      throw err;
    });
    return assets;
  };

  for (const path of [...PAGES, ...FILES]) {
    app.get(path, { schema: { hide: true } }, async (request, reply) => {
      let found: Asset | undefined;
      try {
        found = (await load()).get(path);
      } catch (err) {
        request.log.error({ err }, 'building the web pages failed');
        throw new AppError('INTERNAL_ERROR');
      }
      if (!found) throw new AppError('NOT_FOUND');
      reply.headers(securityHeaders(request.headers.host));
      reply.header('Cache-Control', path.startsWith('/web/') ? 'no-cache' : 'no-store');
      reply.header('ETag', found.etag);
      reply.header('Vary', 'Accept-Encoding');
      if (request.headers['if-none-match'] === found.etag) return reply.code(304).send();
      reply.type(found.type);
      if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
        return reply.header('Content-Encoding', 'gzip').send(found.gzip);
      }
      return reply.send(found.body);
    });
  }
};
