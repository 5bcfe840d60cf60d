import { AppError } from '@palmid/contracts/errors';
import { type ErrorObject, parseFrame } from '@palmid/contracts/ws/frames';
import { keepAlive, type MethodMap, type ResultOf } from '@palmid/contracts/ws/rpc';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { z } from 'zod';

export type Handlers<M extends MethodMap> = {
  [K in keyof M]: (params: z.infer<M[K]['params']>, id: string) => Promise<ResultOf<M, K>>;
};

export function toErrorObject(err: unknown, log: FastifyBaseLogger): ErrorObject {
  if (err instanceof AppError) return { code: err.code, message: err.message, details: err.details };
  log.error({ err }, 'websocket handler failed');
  return { code: 'INTERNAL_ERROR', message: 'Internal server error', details: {} };
}

/**
 * JSON-RPC-like dispatch on one socket: every request frame is validated against its method's schema;
 * a bad frame gets an INVALID_REQUEST error and the connection stays. Keeps the socket alive with pings
 * and drops a peer that stops answering them.
 */
export function serveRpc<M extends MethodMap>(
  socket: WebSocket,
  methods: M,
  handlers: Handlers<M>,
  log: FastifyBaseLogger,
): { send(frame: unknown): void; close(code: number, reason: string): void } {
  const send = (frame: unknown) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
  };
  keepAlive(socket);

  socket.on('message', (data, isBinary) => {
    if (isBinary) {
      send({
        id: null,
        error: {
          code: 'INVALID_REQUEST',
          message: 'Binary frames are not accepted',
          details: { reason: 'binary_frame' },
        },
      });
      return;
    }
    const parsed = parseFrame(data.toString());
    if (parsed.kind === 'invalid') {
      send({
        id: parsed.id,
        error: {
          code: 'INVALID_REQUEST',
          message: 'Invalid frame',
          details: { reason: parsed.reason, ...(parsed.field ? { field: parsed.field } : {}) },
        },
      });
      return;
    }
    if (parsed.kind !== 'request') return; // responses and notifications from peers carry nothing we act on
    const { id, method, params } = parsed.frame;
    const spec = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (!spec) {
      send({
        id,
        error: {
          code: 'NOT_FOUND',
          message: `Unknown method ${method}`,
          details: { field: 'method', reason: 'unknown_method' },
        },
      });
      return;
    }
    const checked = spec.params.safeParse(params ?? {});
    if (!checked.success) {
      const issue = checked.error.issues[0];
      send({
        id,
        error: {
          code: 'INVALID_REQUEST',
          message: `Invalid params${issue ? `.${issue.path.join('.')}: ${issue.message}` : ''}`,
          details: {
            field: issue ? `params.${issue.path.join('.')}` : 'params',
            reason: issue?.code ?? 'invalid',
          },
        },
      });
      return;
    }
    handlers[method as keyof M](checked.data as z.infer<M[keyof M]['params']>, id).then(
      (result) => send({ id, result }),
      (err: unknown) => send({ id, error: toErrorObject(err, log) }),
    );
  });
  return { send, close: (code, reason) => socket.close(code, reason) };
}
