import type { Meta } from '@palmid/contracts/envelope';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { lastIso } from '../../lib/iso-date.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** An incoming X-Request-Id of 1–64 safe characters is reused; otherwise a fresh UUID. */
export function pickRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : undefined;
}

/** `new Date(ms).toISOString()`, formatted once per millisecond (lib/iso-date.ts). */
export const isoAt = lastIso();

export function meta(request: FastifyRequest): Meta {
  return { request_id: request.id, timestamp: isoAt(Date.now()) };
}

export function ok<T>(reply: FastifyReply, data: T, status = 200) {
  return reply.code(status).send({ success: true as const, data, meta: meta(reply.request) });
}
