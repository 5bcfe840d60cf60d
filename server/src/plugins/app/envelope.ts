import type { Meta } from '@palmid/shared/envelope.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** An incoming X-Request-Id of 1–64 safe characters is reused; otherwise a fresh UUID. */
export function pickRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : undefined;
}

let isoMs = Number.NaN;
let isoText = '';

/**
 * `new Date(ms).toISOString()`, formatted once per millisecond: under load many answers share one
 * (formatting a date costs more than the rest of the envelope; docs/performance.md).
 */
export function isoAt(ms: number): string {
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
}

export function meta(request: FastifyRequest): Meta {
  return { request_id: request.id, timestamp: isoAt(Date.now()) };
}

export function ok<T>(reply: FastifyReply, data: T, status = 200) {
  return reply.code(status).send({ success: true as const, data, meta: meta(reply.request) });
}
