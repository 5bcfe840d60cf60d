import { decisionBar, distanceForEvidence } from '@palmid/palm/decision';
import { calibrateGallery, type GalleryCalibration, isCalibratable } from '@palmid/palm/gallery/calibrate';
import type { AppContext } from '../../context.ts';

/**
 * Gallery calibration on a running server (@palmid/palm/gallery/calibrate; docs/deployment.md
 * "Identification policy"): at start-up, and again whenever the gallery has grown by a quarter since,
 * the impostor model the decision reads is checked against the gallery's own different-user pairs,
 * and a stricter fit replaces the shipped one. Never looser; off with PALMID_GALLERY_CALIBRATION=off.
 */

/** How often the gallery's growth is looked at. */
export const RECALIBRATE_CHECK_MS = 10 * 60_000;
/** Growth in users since the last calibration that calls for the next one. */
export const RECALIBRATE_GROWTH = 1.25;

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface GalleryCalibrator {
  /** The last calibration, or null before the first ended. */
  last(): GalleryCalibration | null;
  /** Calibrates now (one at a time: a call during a run waits for it). */
  run(): Promise<GalleryCalibration | null>;
  /** Stops the growth checks and waits for a run in progress. */
  stop(): Promise<void>;
}

/** One log line per calibration: what was measured and what the decision reads from now on. */
export function describeCalibration(c: GalleryCalibration, targetFpir: number): string {
  const model = (m: { p: number; dof: number }) => `p ${m.p}, dof ${m.dof}`;
  const bar = decisionBar(1e6, targetFpir);
  const at = (m: { p: number; dof: number }) => distanceForEvidence(bar, m).toFixed(4);
  switch (c.reason) {
    case 'too_few_users':
      return `gallery calibration: ${c.users} users, too few to describe strangers; the shipped impostor model (${model(c.shipped)}) decides`;
    case 'too_few_pairs':
      return `gallery calibration: only ${c.pairs} impostor pairs; the shipped impostor model (${model(c.shipped)}) decides`;
    case 'fit_lighter':
      return `gallery calibration: ${c.pairs} impostor pairs of ${c.users} users fit ${model(c.fit!)}, lighter than the shipped model (${model(c.shipped)}), which decides`;
    case 'fit_heavier':
      return `gallery calibration: ${c.pairs} impostor pairs of ${c.users} users fit ${model(c.fit!)}, heavier than the shipped model (${model(c.shipped)}): the decision reads evidence with the fit (the 1e6 bar at distance ${at(c.fit!)} instead of ${at(c.shipped)})`;
    case 'fit_implausible':
      return `gallery calibration: ${c.pairs} impostor pairs of ${c.users} users fit ${model(c.fit!)}, wider than any palm population's: palms enrolled twice or crafted templates? The shipped impostor model (${model(c.shipped)}) decides`;
  }
}

export function startGalleryCalibration(ctx: AppContext, log: Log): GalleryCalibrator {
  const gallery =
    ctx.config.PALMID_GALLERY_CALIBRATION === 'on' && isCalibratable(ctx.gallery) ? ctx.gallery : null;
  let last: GalleryCalibration | null = null;
  let running: Promise<GalleryCalibration | null> | null = null;
  const run = (): Promise<GalleryCalibration | null> => {
    if (!gallery) return Promise.resolve(null);
    running ??= calibrateGallery(gallery)
      .then((c) => {
        last = c;
        const line = describeCalibration(c, ctx.config.PALMID_TARGET_FPIR);
        const fields = { calibration: { ...c } };
        if (c.reason === 'fit_implausible') log.warn(fields, line);
        else log.info(fields, line);
        return c;
      })
      .catch((err: unknown) => {
        log.error({ err }, 'gallery calibration failed; the impostor model in use stays');
        return null;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  // off, or a gallery that cannot be calibrated: no run, no growth checks
  const timer = gallery
    ? setInterval(() => {
        if (last === null || gallery.users >= Math.max(1, last.users) * RECALIBRATE_GROWTH) void run();
      }, RECALIBRATE_CHECK_MS)
    : undefined;
  timer?.unref();
  void run();
  return {
    last: () => last,
    run,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
