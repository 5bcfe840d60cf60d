import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { closeContext } from './bootstrap.ts';
import type { AppContext } from './context.ts';
import { expireOverdue, publishUpdate, readResult } from './modules/auth-contexts/service.ts';

export interface RunningServer {
  app: FastifyInstance;
  address: string;
  port: number;
  stop(): Promise<void>;
}

/** Listens, and runs the expiry sweeper (contexts expire on time even across restarts: deadlines are stored). */
export async function startServer(ctx: AppContext): Promise<RunningServer> {
  const app = await buildApp(ctx, {
    logger: {
      level: ctx.config.PALMID_LOG_LEVEL,
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]'], censor: '[redacted]' },
    },
  });
  const address = await app.listen({ port: ctx.config.PORT, host: ctx.config.HOST });
  const port = (app.server.address() as { port: number }).port;
  app.log.info({ address }, `palmid listening on ${address}`);

  let sweeping = false;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      for (const row of await expireOverdue(ctx)) {
        publishUpdate(ctx, row, readResult(ctx, row));
        ctx.events.publish('scan.cancel', { vendorId: row.vendor_id, pvsId: row.pvs_id, authId: row.id });
      }
    } catch (err) {
      app.log.error({ err }, 'expiry sweep failed');
    } finally {
      sweeping = false;
    }
  };
  const timer = setInterval(sweep, 1000);
  timer.unref();
  void sweep();

  return {
    app,
    address,
    port,
    async stop() {
      clearInterval(timer);
      await app.close();
      await closeContext(ctx);
    },
  };
}
