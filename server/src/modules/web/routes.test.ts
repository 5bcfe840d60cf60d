import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../dev/testing.ts';
import { contentSecurityPolicy } from './headers.ts';

describe('/portal and /console', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('serves both pages with a strict CSP and the socket origin of the request', async () => {
    for (const url of ['/portal', '/console']) {
      const res = await t.app.inject({ url, headers: { host: 'palmid.example:8443' } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("connect-src 'self' ws://palmid.example:8443 wss://palmid.example:8443");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      // nothing inline, nothing from another origin
      expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)|<style|\sstyle=|\son\w+=|https?:\/\//);
    }
  });

  it('never echoes a malformed Host header into the policy', () => {
    expect(contentSecurityPolicy("evil.example; script-src 'unsafe-inline'")).toContain(
      "connect-src 'self';",
    );
    expect(contentSecurityPolicy(undefined)).toContain("connect-src 'self';");
    expect(contentSecurityPolicy('[::1]:8080')).toContain('ws://[::1]:8080');
  });

  it('bundles the scripts with esbuild, gzips them and answers revalidation with 304', async () => {
    const res = await t.app.inject({ url: '/web/portal.js', headers: { 'accept-encoding': 'gzip, br' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['content-encoding']).toBe('gzip');
    const js = gunzipSync(res.rawPayload).toString('utf8');
    expect(js).toContain('/v1/attributes');
    expect(js).not.toMatch(/localStorage|sessionStorage|document\.cookie/);
    const again = await t.app.inject({
      url: '/web/portal.js',
      headers: { 'if-none-match': String(res.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    const css = await t.app.inject({ url: '/web/app.css' });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['content-encoding']).toBeUndefined();
  });

  it('the console script keeps the API key out of storage and URLs', async () => {
    const js = (await t.app.inject({ url: '/web/console.js' })).body;
    expect(js).not.toMatch(/localStorage|sessionStorage|document\.cookie|api_key=/);
    expect(js).toContain('X-API-Key');
  });

  it('anything else under /web is a 404 envelope, and the pages stay out of OpenAPI', async () => {
    for (const url of ['/web/../package.json', '/web/server.js', '/web/']) {
      const res = await t.app.inject({ url });
      expect(res.statusCode).toBe(404);
    }
    const spec = (await t.app.inject({ url: '/docs/json' })).json();
    expect(Object.keys(spec.paths)).not.toContain('/portal');
  });
});
