import { createHash } from 'node:crypto';
import { AppError } from '@palmid/contracts/errors';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onSendHookHandler,
  preHandlerHookHandler,
} from 'fastify';

/**
 * `Idempotency-Key` on every vendor POST (docs/vendor-api.md, "Idempotency"): the same key and body within
 * 24 h (per API key) answer the first answer again with `Idempotent-Replayed: true`; another body, or
 * another route, is 400 `idempotency_key_reused`; a key whose first request is still running is 400
 * `idempotency_key_in_use`. Only 2xx answers are kept (a refused request did nothing). A read route
 * (`config.idempotency: 'rerun'`, `mpc/users/read`) keeps no answer: a replay runs it again, so it never
 * shows a value the person has stopped sharing since. The store is handed
 * in (modules/kiosk-link/idempotency.ts), so this plugin imports no module.
 */
export interface IdempotencyStore {
  claim(
    key: string,
    hash: string,
  ): Promise<
    | { kind: 'fresh' }
    | { kind: 'in_use' }
    | { kind: 'reused' }
    | { kind: 'replay'; answer: { status: number; body: string } }
  >;
  keep(
    key: string,
    hash: string,
    answer: { status: number; body: string },
    userId: string | null,
  ): Promise<void>;
  release(key: string, hash: string): Promise<void>;
  /**
   * The stored body as it may be shown now: an answer with an `auth_result` gets the result as a status
   * read shows it today (disclosed values do not outlive what the context itself keeps).
   */
  current?(body: string): Promise<string>;
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_RE = /^[\x20-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyRequest {
    /** A claimed Idempotency-Key of this request: its store key and request hash. */
    idempotency?: { key: string; hash: string; replayed: boolean } | undefined;
    /** The person (internal id) a vendor answer is about: its stored copy is sealed under their data key. */
    idempotencyUser?: string;
  }
}

function keyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || !KEY_RE.test(value))
    throw new AppError('INVALID_REQUEST', 'Idempotency-Key must be 1-255 printable ASCII characters', {
      field: 'Idempotency-Key',
      reason: 'invalid',
    });
  return value;
}

export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore): void {
  const before: preHandlerHookHandler = (request, reply, done) => {
    let idem: string | undefined;
    try {
      idem = keyOf(request);
    } catch (err) {
      return done(err as Error);
    }
    if (idem === undefined || !request.vendor) return done();
    const key = `vendor:${request.vendor.keyId}:${idem}`;
    const hash = createHash('sha256')
      .update(`${request.method} ${request.routeOptions.url ?? ''} ${request.url}\n`)
      .update(JSON.stringify(request.body ?? null))
      .digest('hex');
    store.claim(key, hash).then((claim) => {
      if (claim.kind === 'fresh') {
        request.idempotency = { key, hash, replayed: false };
        return done();
      }
      if (claim.kind === 'replay' && request.routeOptions.config?.idempotency === 'rerun') {
        // a read: answered as it would be now (nothing of the first answer was kept)
        request.idempotency = { key, hash, replayed: true };
        reply.header('Idempotent-Replayed', 'true');
        return done();
      }
      if (claim.kind === 'replay') {
        request.idempotency = { key, hash, replayed: true };
        const body = store.current ? store.current(claim.answer.body) : Promise.resolve(claim.answer.body);
        body.then((b) => replay(reply, { status: claim.answer.status, body: b }), done);
        return;
      }
      done(
        claim.kind === 'reused'
          ? new AppError(
              'INVALID_REQUEST',
              'This Idempotency-Key was used with another request in the last 24 hours; use a new key for a new request',
              { field: 'Idempotency-Key', reason: 'idempotency_key_reused' },
            )
          : new AppError(
              'INVALID_REQUEST',
              'A request with this Idempotency-Key is still being processed; retry in a moment',
              { field: 'Idempotency-Key', reason: 'idempotency_key_in_use' },
            ),
      );
    }, done);
  };

  const after: onSendHookHandler = (request, reply, payload, done) => {
    const idem = request.idempotency;
    if (!idem || idem.replayed) return done(null, payload);
    request.idempotency = undefined;
    const status = reply.statusCode;
    // a `rerun` route keeps only that the key was used, with which request: never the answer
    const rerun = request.routeOptions.config?.idempotency === 'rerun';
    const work =
      status >= 200 && status < 300 && typeof payload === 'string'
        ? store.keep(
            idem.key,
            idem.hash,
            { status, body: rerun ? '{}' : payload },
            request.idempotencyUser ?? null,
          )
        : store.release(idem.key, idem.hash);
    work.then(
      () => done(null, payload),
      (err) => {
        request.log.error({ err }, 'idempotency store failed');
        done(null, payload);
      },
    );
  };

  app.addHook('onRoute', (route) => {
    if (route.config?.auth !== 'vendor') return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    const pre = route.preHandler;
    route.preHandler = pre === undefined ? [before] : [...(Array.isArray(pre) ? pre : [pre]), before];
    const send = route.onSend;
    route.onSend = send === undefined ? [after] : [...(Array.isArray(send) ? send : [send]), after];
  });
}

function replay(reply: FastifyReply, answer: { status: number; body: string }): void {
  reply
    .code(answer.status)
    .header('Idempotent-Replayed', 'true')
    .type('application/json; charset=utf-8')
    .send(answer.body);
}
