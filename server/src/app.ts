import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import fastifyWebsocket from '@fastify/websocket';
import { errorEnvelope } from '@palmid/contracts/envelope';
import { DEFAULT_MESSAGES } from '@palmid/contracts/errors';
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import { jsonSchemaTransform, validatorCompiler } from 'fastify-type-provider-zod';
import type { AppContext } from './context.ts';
import { randomRequestId } from './lib/request-id.ts';
import { currentAnswer } from './modules/auth-contexts/state.ts';
import { claimVendorKey, keepVendorAnswer, releaseVendorKey } from './modules/kiosk-link/idempotency.ts';
import { registerAuth } from './plugins/app/auth.ts';
import { pickRequestId } from './plugins/app/envelope.ts';
import { registerErrorHandling, registerJsonParser, sendError } from './plugins/app/errors.ts';
import { registerIdempotency } from './plugins/app/idempotency.ts';
import { responseSerializerCompiler } from './plugins/app/serializer.ts';
import { ROUTE_MODULES } from './routes.ts';

export const BODY_LIMIT = 1024 * 1024;

/** OpenAPI's description of the Idempotency-Key header every vendor POST takes. */
const IDEMPOTENCY_KEY_DOC = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  description:
    'Optional. The same key and body within 24 h (per API key) answer the first answer again with `Idempotent-Replayed: true`; ' +
    'the same key with another body is 400 `idempotency_key_reused` (docs/vendor-api.md, "Idempotency").',
};

/**
 * Slow-loris defence: headers must arrive within 15 s and a whole request (headers and body) within 30 s;
 * idle keep-alive sockets close after 10 s. Node checks the deadlines every `connectionsCheckingInterval`.
 * WebSocket connections are upgraded out of these limits (they have their own ping/pong liveness check).
 */
export const HTTP_TIMEOUTS = {
  headersTimeout: 15_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 10_000,
  connectionsCheckingInterval: 2_000,
};

/** A raw error envelope for answers written before a request exists (malformed HTTP, oversized headers). */
function rawErrorEnvelope(reason: string): string {
  return JSON.stringify(
    errorEnvelope(
      'INVALID_REQUEST',
      DEFAULT_MESSAGES.INVALID_REQUEST,
      { reason },
      { request_id: crypto.randomUUID(), timestamp: new Date().toISOString() },
    ),
  );
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}

/** Builds the HTTP application without listening (tests use `app.inject`, server.ts listens). */
/** `PALMID_TRUST_PROXY` → Fastify's trustProxy: false, or the list of trusted proxy addresses. */
function trustedProxies(value: string): false | string[] {
  const list = value
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  return list.length > 0 ? list : false;
}

export async function buildApp(
  ctx: AppContext,
  opts: {
    logger?: FastifyServerOptions['logger'];
    timeouts?: Partial<typeof HTTP_TIMEOUTS>;
    /**
     * `line`: one line per request once it is answered ("GET /health 200 1.4 ms (request <id>)"), for the readable
     * development log (docs/quickstart.md); default: Fastify's "incoming request" and "request completed"
     * records, for log collectors.
     */
    requestLog?: 'line' | 'default';
  } = {},
): Promise<FastifyInstance> {
  const timeouts = { ...HTTP_TIMEOUTS, ...opts.timeouts };
  const oneLine = opts.requestLog === 'line';
  const app = Fastify({
    logger: opts.logger ?? false,
    // the one-line development log writes its own line per request (below): Fastify's records are off
    logController: new LogController({ disableRequestLogging: oneLine }),
    requestTimeout: timeouts.requestTimeout,
    keepAliveTimeout: timeouts.keepAliveTimeout,
    http: {
      headersTimeout: timeouts.headersTimeout,
      requestTimeout: timeouts.requestTimeout,
      connectionsCheckingInterval: timeouts.connectionsCheckingInterval,
    },
    // Malformed URLs and over-long path parameters get the SPEC error envelope, not Fastify's own body.
    frameworkErrors: (err, request, reply) => {
      reply.header('X-Request-Id', request.id);
      const reason = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'param_too_long' : 'bad_url';
      void sendError(
        reply,
        'INVALID_REQUEST',
        DEFAULT_MESSAGES.INVALID_REQUEST,
        { field: 'path', reason },
        400,
      );
    },
    // Errors before a request exists (bad HTTP, oversized headers, header timeout): an envelope, then close.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const reason =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? 'headers_too_large'
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? 'timeout'
            : 'malformed_http';
      const body = rawErrorEnvelope(reason);
      if (socket.writable) {
        socket.write(
          `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy(err);
    },
    bodyLimit: BODY_LIMIT,
    trustProxy: trustedProxies(ctx.config.PALMID_TRUST_PROXY),
    requestIdHeader: false,
    genReqId: (req) => pickRequestId(req.headers['x-request-id']) ?? randomRequestId(),
    routerOptions: { ignoreTrailingSlash: true },
  });
  app.decorate('ctx', ctx);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler({ check: process.env.NODE_ENV === 'test' }));
  registerErrorHandling(app);
  registerJsonParser(app);
  // Callback-style hooks where nothing is awaited: no promise per request (docs/performance.md).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id); // lower case: sent so anyway, and no new string per request
    // API answers may carry personal data (attributes, identifiers, tokens, exports): no cache keeps them.
    if (request.url.startsWith('/v1/') || request.url.startsWith('/api/'))
      reply.header('cache-control', 'no-store');
    done();
  });
  if (oneLine)
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        `${request.method} ${request.url} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)} ms (request ${request.id})`,
      );
      done();
    });
  registerAuth(app, ctx);
  // Idempotency-Key on vendor POSTs (docs/vendor-api.md, "Idempotency"), stored beside the kiosks' answers.
  registerIdempotency(app, {
    claim: (key, hash) => claimVendorKey(ctx, key, hash),
    keep: (key, hash, answer, userId) => keepVendorAnswer(ctx, key, hash, answer, userId),
    release: (key, hash) => releaseVendorKey(ctx, key, hash),
    current: (body) => currentAnswer(ctx, body),
  });

  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'palmid',
        description:
          'Palm-biometric identity and authentication network. Vendor API under /api/v1 (X-API-Key), user API under /v1 (Bearer token).',
        version: ctx.version,
      },
      tags: [
        {
          name: 'webhooks',
          description:
            'Signed webhooks (docs/vendor-api.md, "Webhooks"). Each event is POSTed to your endpoint as `{id, type, created, data}` ' +
            '(`auth.created`: `{auth_id, status}`; `auth.updated`: `{auth_id, status, auth_result?}`) with the header ' +
            '`Palmid-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`; reject a `t` more than 5 minutes ' +
            'old. A non-2xx answer is retried with exponential backoff and jitter for 24 hours, in order per context, at least once ' +
            '(drop duplicates by `id`).',
        },
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
    },
    transform: (opts) => {
      const out = jsonSchemaTransform(opts);
      const methods = [opts.route.method].flat();
      // every vendor POST takes Idempotency-Key (docs/vendor-api.md, "Idempotency")
      if (opts.route.config?.auth === 'vendor' && methods.includes('POST')) {
        const schema = out.schema as Record<string, unknown>;
        const headers = (schema.headers as { properties?: Record<string, unknown> } | undefined) ?? {};
        out.schema = {
          ...schema,
          headers: {
            type: 'object',
            ...headers,
            properties: { ...(headers.properties ?? {}), 'Idempotency-Key': IDEMPOTENCY_KEY_DOC },
          },
        } as typeof out.schema;
      }
      return out;
    },
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  await app.register(fastifyWebsocket, { options: { maxPayload: 64 * 1024 } });

  for (const register of ROUTE_MODULES) await app.register(register);
  return app;
}
