import { decisionBar } from '@palmid/palm/decision';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { closeContext } from './bootstrap.ts';
import type { AppContext } from './context.ts';
import { hasServerNodeFlags, SERVER_NODE_FLAGS } from './lib/node-flags.ts';
import { AnchorKeeper, anchorPath, FOREIGN_ANCHOR } from './modules/audit/anchor.ts';
import {
  expireOverdue,
  publishUpdate,
  readResult,
  stripLapsedValues,
  webhookData,
  withdrawFromKiosks,
} from './modules/auth-contexts/state.ts';
import { pruneAnswers } from './modules/kiosk-link/idempotency.ts';
import { startGalleryCalibration } from './modules/matching/calibration.ts';
import { warmUpProverInBackground } from './modules/verification/zk.ts';
import { startWebhookSender } from './modules/webhooks/sender.ts';
import { pruneDeliveries } from './modules/webhooks/service.ts';

export interface RunningServer {
  app: FastifyInstance;
  address: string;
  port: number;
  stop(): Promise<void>;
}

/** Listens, and runs the expiry sweeper (contexts expire on time even across restarts: deadlines are stored). */
export interface StartOptions {
  /**
   * Start the zero-knowledge prover in the background after listening (docs/zk-proofs.md). Default: on,
   * except under NODE_ENV=test, where most servers never prove and the 2-5 s of CPU would slow the suite.
   */
  warmUpProver?: boolean;
}

/** How often the audit anchor file is brought up to date (and on shutdown). */
export const ANCHOR_INTERVAL_MS = 60_000;

/**
 * Where log lines go: JSON lines on stdout (for log collectors), or in development one readable line per
 * event (pino-pretty) so that the start-up banner stays legible (README "Configuration", PALMID_LOG_FORMAT).
 */
async function logDestination(config: AppContext['config']): Promise<NodeJS.WritableStream | undefined> {
  const format = config.PALMID_LOG_FORMAT ?? (config.PALMID_ENV === 'development' ? 'pretty' : 'json');
  if (format === 'json') return undefined;
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    // the request line names its request id itself (app.ts requestLog 'line')
    ignore: 'pid,hostname,reqId',
    singleLine: true,
    sync: true,
  });
}

export async function startServer(ctx: AppContext, opts: StartOptions = {}): Promise<RunningServer> {
  const stream = await logDestination(ctx.config);
  const app = await buildApp(ctx, {
    logger: {
      level: ctx.config.PALMID_LOG_LEVEL,
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]'], censor: '[redacted]' },
      ...(stream ? { stream } : {}),
    },
    // the readable log says each request once, on one line; JSON lines keep Fastify's records
    requestLog: stream ? 'line' : 'default',
  });
  const address = await app.listen({ port: ctx.config.PORT, host: ctx.config.HOST });
  const port = (app.server.address() as { port: number }).port;
  const fpir = ctx.config.PALMID_TARGET_FPIR;
  const coding = ctx.config.PALMID_TEMPLATE_CODING;
  app.log.info(
    { address, matchThreshold: ctx.config.PALMID_MATCH_THRESHOLD, targetFpir: fpir, templateCoding: coding },
    `palmid listening on ${address} (palm match threshold ${ctx.config.PALMID_MATCH_THRESHOLD}, ` +
      `target FPIR ${fpir}: bar ${decisionBar(Math.max(1, ctx.gallery.size), fpir).toFixed(2)} decades ` +
      `at ${ctx.gallery.size} palms, templates coded ${coding})`,
  );
  if (!hasServerNodeFlags()) {
    app.log.info(
      `node runs without ${SERVER_NODE_FLAGS.join(' ')}: reads cost more CPU (docs/performance.md, docs/deployment.md)`,
    );
  }
  if (opts.warmUpProver ?? process.env.NODE_ENV !== 'test') {
    const started = Date.now();
    void warmUpProverInBackground((err) => app.log.warn({ err }, 'zk prover warm-up failed')).then(() =>
      app.log.info({ ms: Date.now() - started }, 'zk prover ready'),
    );
  }

  let sweeping = false;
  // Expired kiosk answers go (modules/kiosk-link/idempotency.ts), checked once a minute by the sweep.
  const PRUNE_INTERVAL_MS = 60_000;
  let nextPrune = 0;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      for (const row of await expireOverdue(ctx)) {
        publishUpdate(ctx, row, readResult(ctx, row));
        withdrawFromKiosks(ctx, row);
      }
      // stored results past their hour keep attribute names only (docs/security.md)
      await stripLapsedValues(ctx);
      if (Date.now() >= nextPrune) {
        nextPrune = Date.now() + PRUNE_INTERVAL_MS;
        await pruneAnswers(ctx);
        await pruneDeliveries(ctx.database.db, ctx.now());
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

  // The audit anchor (modules/audit/anchor.ts): a signed copy of the chain head outside the database.
  const keeper = new AnchorKeeper(ctx.database.db, ctx.keyring, anchorPath(ctx.config));
  const anchor = async () => {
    try {
      const res = await keeper.update();
      if (res.rollback)
        app.log.error(res.rollback, 'audit log is behind its anchor: the database was rolled back or wiped');
      if (res.foreign)
        app.log.error(
          { anchor: res.foreign },
          `audit anchor not updated: ${FOREIGN_ANCHOR}; give this server its own PALMID_AUDIT_ANCHOR`,
        );
    } catch (err) {
      app.log.error({ err }, 'audit anchor update failed');
    }
  };
  const anchorTimer = setInterval(anchor, ANCHOR_INTERVAL_MS);
  anchorTimer.unref();
  void anchor();

  // The decision's impostor model against the gallery's own palms (modules/matching/calibration.ts).
  const calibration = startGalleryCalibration(ctx, app.log);

  // Signed webhooks: this instance's sender on the shared outbox (modules/webhooks/sender.ts).
  const webhooks = startWebhookSender(ctx, { data: (_d, stored) => webhookData(ctx, stored), log: app.log });

  return {
    app,
    address,
    port,
    async stop() {
      clearInterval(timer);
      clearInterval(anchorTimer);
      await calibration.stop();
      await webhooks.stop();
      await app.close();
      await anchor();
      await closeContext(ctx);
    },
  };
}
