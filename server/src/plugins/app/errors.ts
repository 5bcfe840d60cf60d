import { errorEnvelope } from '@palmid/contracts/envelope';
import {
  AppError,
  DEFAULT_MESSAGES,
  ERROR_CODES,
  type ErrorCode,
  type ErrorDetails,
} from '@palmid/contracts/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { jsonDepth, MAX_JSON_DEPTH } from '../../lib/json-depth.ts';
import { meta } from './envelope.ts';

/** Fastify's own client errors, mapped to the SPEC catalogue (everything is a 400 there). */
const FASTIFY_REASONS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_content_length',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'empty_body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed_json',
  FST_ERR_VALIDATION: 'invalid',
};

function validationDetails(err: FastifyError): { field: string; reason: string; message: string } {
  const first = err.validation?.[0];
  const where = String(err.validationContext ?? 'body');
  if (!first)
    return { field: where, reason: 'invalid', message: 'The request format or parameters are invalid' };
  const params = (first.params ?? {}) as { keys?: unknown; params?: { reason?: unknown } };
  const path = (first.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  let field = path || where;
  let reason = first.keyword;
  if (first.keyword === 'unrecognized_keys' && Array.isArray(params.keys) && params.keys.length > 0) {
    field = path ? `${path}.${String(params.keys[0])}` : String(params.keys[0]);
    reason = 'unknown_field';
  } else if (first.keyword === 'invalid_type' && /received undefined/.test(first.message ?? '')) {
    reason = 'required';
  } else if (first.keyword === 'custom') {
    reason = typeof params.params?.reason === 'string' ? params.params.reason : 'invalid';
  }
  return { field, reason, message: `Invalid ${field}: ${first.message ?? 'invalid value'}` };
}

/** Where a JSON body stopped being valid (0-based offset, 1-based line and column), set by the JSON parser. */
interface JsonSyntaxError {
  json?: { position: number; line: number; column: number; problem: string };
}

/**
 * The offset of the first character that makes `text` invalid JSON: the length of its longest prefix that
 * is still valid or only unfinished (binary search: a prefix with an error keeps it in every longer one).
 */
export function jsonErrorOffset(text: string): number {
  const fine = (n: number) => {
    try {
      JSON.parse(text.slice(0, n));
      return true;
    } catch (err) {
      const m = (err as Error).message;
      if (/Unexpected end of JSON input/.test(m)) return true;
      const at = /at position (\d+)/.exec(m);
      return at !== null && Number(at[1]) >= n;
    }
  };
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fine(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** What JSON.parse said, without the echo of the input some of its messages carry. */
function jsonProblem(message: string): string {
  return (
    message
      .replace(/,?\s*"[\s\S]*"\s*is not valid JSON$/, '')
      .replace(/\s*in JSON at position \d+.*$/, '')
      .trim()
      .slice(0, 120) || 'invalid JSON'
  );
}

/**
 * Fastify's own JSON parser (same prototype-poisoning rules), with the place of a syntax error: the 400
 * says where the body went wrong (`details.position`, `line`, `column`) instead of only that it did.
 */
export function registerJsonParser(app: FastifyInstance): void {
  const base = app.getDefaultJsonParser(
    app.initialConfig.onProtoPoisoning ?? 'error',
    app.initialConfig.onConstructorPoisoning ?? 'error',
  );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, done) => {
    const body = typeof raw === 'string' ? raw : raw.toString('utf8');
    // Bodies nested deeper than MAX_JSON_DEPTH are refused before parsing (400 `too_deep`), so no
    // recursive walk over the parsed value (validation, serialisation) can exhaust the stack.
    if (jsonDepth(body) > MAX_JSON_DEPTH) {
      done(
        AppError.invalid('body', 'too_deep', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`),
        undefined,
      );
      return;
    }
    base(request, body, (err, value) => {
      if ((err as FastifyError | null)?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
        let syntax: string | undefined;
        try {
          JSON.parse(body); // valid JSON refused for a poisoned prototype key: no position to give
        } catch (e) {
          syntax = (e as Error).message;
        }
        if (syntax !== undefined) {
          const position = jsonErrorOffset(body);
          const before = body.slice(0, position);
          const line = before.split('\n').length;
          const column = position - before.lastIndexOf('\n');
          (err as unknown as JsonSyntaxError).json = { position, line, column, problem: jsonProblem(syntax) };
        }
      }
      done(err as Error | null, value);
    });
  });
}

export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  details: ErrorDetails,
  status: number = ERROR_CODES[code],
): FastifyReply {
  const body = errorEnvelope(code, message, details, meta(reply.request));
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) {
      return sendError(reply, err.code, err.message, err.details, err.status);
    }
    if (err.validation) {
      const { field, reason, message } = validationDetails(err);
      return sendError(reply, 'INVALID_REQUEST', message, { field, reason }, 400);
    }
    const reason = err.code ? FASTIFY_REASONS[err.code] : undefined;
    const where = (err as unknown as JsonSyntaxError).json;
    if (where) {
      return sendError(
        reply,
        'INVALID_REQUEST',
        `Malformed JSON body at position ${where.position} (line ${where.line}, column ${where.column}): ${where.problem}`,
        {
          field: 'body',
          reason: 'malformed_json',
          position: where.position,
          line: where.line,
          column: where.column,
        },
        400,
      );
    }
    if (reason || (err instanceof SyntaxError && err.statusCode === 400)) {
      return sendError(
        reply,
        'INVALID_REQUEST',
        DEFAULT_MESSAGES.INVALID_REQUEST,
        { field: 'body', reason: reason ?? 'malformed_json' },
        400,
      );
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      if (err.statusCode === 429)
        return sendError(reply, 'RATE_LIMITED', DEFAULT_MESSAGES.RATE_LIMITED, {}, 429);
      return sendError(
        reply,
        'INVALID_REQUEST',
        DEFAULT_MESSAGES.INVALID_REQUEST,
        { reason: 'bad_request' },
        400,
      );
    }
    request.log.error({ err }, 'unhandled error');
    return sendError(reply, 'INTERNAL_ERROR', DEFAULT_MESSAGES.INTERNAL_ERROR, {}, 500);
  });

  // Safety net: an error answer that left a plugin with an empty body (e.g. @fastify/websocket's 404 for a
  // plain GET on a socket route) still gets the SPEC envelope. Only routes without a response schema get it:
  // a route with one is ours, answers through `ok`/`sendError` or the error handler (never an empty error
  // body), and is spared an onSend hook per request (docs/performance.md). Routes added by plugins (the
  // socket routes' plain-GET handler, the documentation pages) have none and keep the net.
  app.addHook('onRoute', (route) => {
    if (route.schema?.response !== undefined) return;
    const own = route.onSend;
    route.onSend =
      own === undefined ? [envelopeEmptyError] : [...(Array.isArray(own) ? own : [own]), envelopeEmptyError];
  });

  // A known path called with a method it does not take stays 404 NOT_FOUND (SPEC §7 has no 405), but names
  // the methods it takes in `Allow` and the message.
  const paths: { pattern: RegExp; method: string }[] = [];
  app.addHook('onRoute', (route) => {
    const pattern = routePattern(route.url);
    for (const method of Array.isArray(route.method) ? route.method : [route.method])
      paths.push({ pattern, method: String(method).toUpperCase() });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = [...new Set(paths.filter((p) => p.pattern.test(path)).map((p) => p.method))];
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      reply.header('Allow', allowed.join(', '));
      return sendError(
        reply,
        'NOT_FOUND',
        `No route ${request.method} ${path}: this path takes ${allowed.join(', ')}`,
        { reason: 'method_not_allowed', allowed },
        404,
      );
    }
    return sendError(reply, 'NOT_FOUND', `No route ${request.method} ${path}`, { reason: 'no_route' }, 404);
  });
}

/** A route's URL (`/api/v1/auth/:auth_id/status`, `/docs/*`) as a regular expression over request paths. */
function routePattern(url: string): RegExp {
  const body = url
    .replace(/\/+$/, '')
    .split('/')
    .map((part) => {
      if (part === '*') return '.*';
      if (part.startsWith(':')) return '[^/]+';
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${body}/?$`);
}

/** An error answer with an empty body gets the SPEC error envelope (see `registerErrorHandling`). */
const envelopeEmptyError: onSendHookHandler = (request, reply, payload, done) => {
  if (reply.statusCode < 400 || request.method === 'HEAD') return done(null, payload);
  if (payload !== undefined && payload !== null && payload !== '') return done(null, payload);
  const status = reply.statusCode;
  const code: ErrorCode =
    status === 404
      ? 'NOT_FOUND'
      : status === 401
        ? 'UNAUTHORIZED'
        : status === 403
          ? 'FORBIDDEN'
          : status === 429
            ? 'RATE_LIMITED'
            : status >= 500
              ? 'INTERNAL_ERROR'
              : 'INVALID_REQUEST';
  reply.type('application/json; charset=utf-8');
  done(null, JSON.stringify(errorEnvelope(code, DEFAULT_MESSAGES[code], {}, meta(request))));
};
