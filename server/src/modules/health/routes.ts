import { successSchema } from '@palmid/shared/envelope.ts';
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
    async () => ({ status: 'ok' as const, version: ctx.version }),
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
    async (request, reply) => {
      const vendor = vendorOf(request);
      const dbOk = await ctx.database.ping();
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
      return ok(reply, last.data);
    },
  );
};
