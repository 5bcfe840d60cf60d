import { successSchema } from '@palmid/contracts/envelope';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { VendorPrincipal } from '../../context.ts';
import { vendorErrors } from '../../lib/error-replies.ts';
import { vendorOf } from '../../plugins/app/auth.ts';
import { isoAt, ok } from '../../plugins/app/envelope.ts';

const healthSchema = z.object({ status: z.literal('ok'), version: z.string() });

const statusSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  version: z.string(),
  environment: z.string(),
  uptime_s: z.number().int(),
  database: z.object({ kind: z.string(), ok: z.boolean() }),
  pvs: z.object({ connected: z.number().int() }),
  vendor: z.object({ id: z.string(), name: z.string(), mode: z.enum(['test', 'live']) }),
  time: z.string(),
});

export const healthRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  let lastStatus:
    | {
        vendor: VendorPrincipal;
        now: number;
        dbOk: boolean;
        connected: number;
        data: z.output<typeof statusSchema>;
      }
    | undefined;
  const answer = (reply: FastifyReply, vendor: VendorPrincipal, dbOk: boolean) => {
    const now = ctx.now();
    const connected = ctx.kiosks.countServing(vendor.id);
    // One frozen answer per vendor principal, millisecond, probe result and kiosk count: the requests that
    // share all four share it, and its JSON is made once (plugins/app/serializer.ts, compileEnvelope).
    // Every field is a function of these keys (a vendor change gives a new principal), so it is never stale.
    let last = lastStatus;
    if (
      last === undefined ||
      last.vendor !== vendor ||
      last.now !== now ||
      last.dbOk !== dbOk ||
      last.connected !== connected
    ) {
      last = {
        vendor,
        now,
        dbOk,
        connected,
        data: Object.freeze({
          status: dbOk ? ('ok' as const) : ('degraded' as const),
          version: ctx.version,
          environment: ctx.config.PALMID_ENV,
          uptime_s: Math.floor((now - ctx.startedAt) / 1000),
          database: Object.freeze({ kind: ctx.database.kind, ok: dbOk }),
          pvs: Object.freeze({ connected }),
          vendor: Object.freeze({ id: vendor.id, name: vendor.name, mode: vendor.mode }),
          time: isoAt(now),
        }),
      };
      lastStatus = last;
    }
    ok(reply, last.data);
  };
  const health = Object.freeze({ status: 'ok' as const, version: ctx.version });
  app.get(
    '/health',
    {
      config: { rate: 'health' },
      schema: {
        tags: ['health'],
        summary: 'Liveness and deployed revision',
        response: { 200: healthSchema },
      },
    },
    // Synchronous, one frozen answer: no promise and no object per request (docs/performance.md).
    () => health,
  );

  app.get(
    '/api/v1/status',
    {
      config: { auth: 'vendor', scope: 'auth', rate: 'status' },
      schema: {
        tags: ['health'],
        summary: 'System status for a vendor',
        security: [{ apiKey: [] }],
        response: { 200: successSchema(statusSchema), ...vendorErrors(401, 403, 429) },
      },
    },
    (request, reply) => {
      const vendor = vendorOf(request);
      // SQLite answers in process (no promise or microtask per request); PostgreSQL's probe is awaited.
      const probe = ctx.database.ping();
      if (typeof probe === 'boolean') return answer(reply, vendor, probe);
      // Both probes resolve (never reject); one that did would mean the database is not ok.
      probe.then(
        (dbOk) => answer(reply, vendor, dbOk),
        () => answer(reply, vendor, false),
      );
    },
  );
};
