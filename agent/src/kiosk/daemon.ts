import { EventEmitter } from 'node:events';
import { livenessToWire } from '@palmid/contracts/capture/liveness';
import type { CaptureAttestation } from '@palmid/contracts/crypto/capture';
import { LED } from '@palmid/contracts/wire/messages';
import type { ScanRequest } from '@palmid/contracts/ws/pvs';
import { type pvsMethods, scanCancelSchema, scanRequestSchema } from '@palmid/contracts/ws/pvs';
import type { CallOptions, ParamsOf, ResultOf } from '@palmid/contracts/ws/rpc';
import type { CaptureResult as Processed } from '@palmid/palm/capture/pipeline';
import { ScannerError } from '../driver/errors.ts';
import type { CapturedFrame as Frame } from '../driver/scanner-driver.ts';
import { PresentationPolicy } from './presentation.ts';

/** What the daemon needs from the scanner, the pipeline and the server link (injected; tests use fakes). */
export interface KioskScanner {
  capture(opts: { signal?: AbortSignal; timeoutMs?: number; onStart?: () => void }): Promise<Frame>;
  setLeds?(mask: number, intensity: number): Promise<void>;
}
export type ProcessFrame = (frame: { width: number; height: number; data: Uint8Array }) => Promise<Processed>;
export interface KioskLink {
  call(
    method: 'identify',
    params: ParamsOf<typeof pvsMethods, 'identify'>,
    opts?: CallOptions,
  ): Promise<ResultOf<typeof pvsMethods, 'identify'>>;
  on(event: 'notification', listener: (method: string, params: unknown) => void): unknown;
}

/**
 * One step of serving a context: when it started (ms since the epoch, sub-millisecond, comparable
 * between processes on one host) and how long it took. `capture` is the scanner's whole capture, from
 * START_CAPTURE to the last byte (a capture started ahead runs during the previous frame's `pipeline`),
 * `transfer` the part of it spent reading the image after the device reported it ready.
 */
export interface StepTiming {
  step: 'queued' | 'capture' | 'transfer' | 'pipeline' | 'attest' | 'identify';
  at: number;
  ms: number;
}

export interface Outcome {
  auth_id: string;
  status: string;
  reason?: string;
  attempts: number;
  /** Where the time went, from the `scan.request`'s arrival to the server's answer to `identify`. */
  timings?: StepTiming[];
}

const now = () => performance.timeOrigin + performance.now();

export interface KioskOptions {
  /** Attempts at a usable capture per context before giving up (the context then expires). */
  maxAttempts?: number;
  /**
   * Presentation-attack verdicts within one context after which it is reported as liveness_failed.
   * Default 2: about one bona fide capture in 75 scores below the liveness threshold, so with one
   * strike 2.83 % of genuine transactions failed as attacks, with two 0.83 % (600 synthetic
   * identities), while no print or screen attack reached identification under either rule: it still
   * has to pass the detector on both live frames (`tsx palm-lab/scripts/kiosk-policy.ts`).
   */
  livenessStrikes?: number;
  /**
   * Live captures needed before identifying (multi-frame presentation-attack detection): an attack must
   * pass the detector on every one of them, while a live hand costs one more capture. Default 2.
   */
  liveFrames?: number;
  /**
   * Signs a capture for `identify` with the device key (docs/websocket.md "Attested captures"): the
   * context's auth_id, the nonce of its scan.request and the sample as sent.
   */
  attest?: (
    authId: string,
    nonce: string,
    sample: {
      template: Uint8Array | undefined;
      /** undefined: the capture could not tell the side (signed as "not given") */
      hand: 'left' | 'right' | undefined;
      quality: number;
      liveness: number;
    },
  ) => CaptureAttestation;
  /** Pause between a rejected capture and the next prompt. */
  repromptMs?: number;
  display?: (line: string) => void;
}

const toUnit = (percent: number) => Math.max(0, Math.min(1, percent / 100));

/**
 * The kiosk loop: takes `scan.request`s one at a time, prompts, captures, checks quality and liveness
 * (re-prompting on a bad capture), extracts the template and sends `identify`. The request id of
 * identify is derived from the auth id, so a retry after a reconnect can never be applied twice.
 * `scan.cancel` aborts the capture in progress or drops a queued request.
 */
export class KioskDaemon extends EventEmitter {
  readonly #scanner: KioskScanner;
  readonly #process: ProcessFrame;
  readonly #link: KioskLink;
  readonly #opts: Required<Omit<KioskOptions, 'display' | 'attest'>> & {
    display: (line: string) => void;
    attest: KioskOptions['attest'];
  };
  /** Requests waiting their turn, with when their `scan.request` arrived. */
  readonly #queue: { req: ScanRequest; receivedAt: number }[] = [];
  #current: { authId: string; abort: AbortController } | undefined;
  #running = false;

  constructor(scanner: KioskScanner, process: ProcessFrame, link: KioskLink, opts: KioskOptions = {}) {
    super();
    this.#scanner = scanner;
    this.#process = process;
    this.#link = link;
    this.#opts = {
      maxAttempts: opts.maxAttempts ?? 8,
      livenessStrikes: opts.livenessStrikes ?? 2,
      liveFrames: opts.liveFrames ?? 2,
      repromptMs: opts.repromptMs ?? 300,
      display: opts.display ?? (() => undefined),
      attest: opts.attest,
    };
    link.on('notification', (method, params) => this.#onNotification(method, params));
  }

  get busy(): boolean {
    return this.#current !== undefined;
  }

  #onNotification(method: string, params: unknown): void {
    if (method === 'scan.request') {
      const r = scanRequestSchema.safeParse(params);
      if (!r.success) return;
      if (
        this.#current?.authId === r.data.auth_id ||
        this.#queue.some((q) => q.req.auth_id === r.data.auth_id)
      )
        return;
      this.#queue.push({ req: r.data, receivedAt: now() });
      void this.#drain();
    } else if (method === 'scan.cancel') {
      const r = scanCancelSchema.safeParse(params);
      if (!r.success) return;
      const i = this.#queue.findIndex((q) => q.req.auth_id === r.data.auth_id);
      if (i >= 0) this.#queue.splice(i, 1);
      if (this.#current?.authId === r.data.auth_id) this.#current.abort.abort();
    }
  }

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (let next = this.#queue.shift(); next; next = this.#queue.shift()) {
        let outcome: Outcome;
        try {
          outcome = await this.#serveFrom(next.req, next.receivedAt);
        } catch (err) {
          // The server link failed for good (agent stopping, or no answer before the context's
          // deadline): the context ends on the server by itself (expiry); the kiosk moves on.
          const code =
            err instanceof Error && 'code' in err ? String((err as { code: unknown }).code) : 'error';
          this.#opts.display('Sorry, the service is not reachable right now.');
          outcome = { auth_id: next.req.auth_id, status: 'link_error', reason: code, attempts: 0 };
        }
        this.emit('outcome', outcome);
      }
    } finally {
      this.#running = false;
    }
  }

  /**
   * Serves one context to its end (identified, cancelled, expired or out of attempts). `receivedAt`:
   * when its `scan.request` arrived (the time it waited is the step `queued`).
   */
  async #serveFrom(req: ScanRequest, receivedAt: number): Promise<Outcome> {
    const timings: StepTiming[] = [{ step: 'queued', at: receivedAt, ms: now() - receivedAt }];
    const outcome = await this.#serve(req, timings);
    return { ...outcome, timings };
  }

  async #serve(req: ScanRequest, timings: StepTiming[]): Promise<Outcome> {
    const abort = new AbortController();
    this.#current = { authId: req.auth_id, abort };
    const say = this.#opts.display;
    const budget = { attempts: 0 };
    try {
      say(req.display);
      // Not awaited: the device carries out commands in the order it receives them
      // (docs/wire-protocol.md §3), so the LEDs are set before the capture below starts.
      void this.#leds(0);
      const first = await this.#collect(req, abort.signal, budget, timings);
      if ('outcome' in first) return first.outcome;
      let answer = await this.#identify(req, `identify:${req.auth_id}`, timings, first.sample);
      if ('step_up' in answer) {
        // One capture was not enough for the whole gallery: the server asks for the other hand and
        // decides on both (docs/websocket.md "Step-up"). The amber LED is the device's prompt.
        const hand = answer.step_up.hand;
        this.emit('step-up', { auth_id: req.auth_id, hand });
        say(`Please also hold your ${hand} palm over the scanner.`);
        await this.#leds(LED.STATUS_AMBER);
        const second = await this.#collect(req, abort.signal, budget, timings);
        if ('outcome' in second) return second.outcome;
        answer = await this.#identify(req, `identify:${req.auth_id}:step-up`, timings, second.sample);
        if ('step_up' in answer)
          return {
            auth_id: req.auth_id,
            status: answer.status,
            reason: answer.step_up.reason,
            attempts: budget.attempts,
          };
      }
      const r = answer;
      await this.#leds(r.success ? LED.STATUS_GREEN : LED.STATUS_RED);
      say(r.success ? 'Thank you!' : `Not accepted (${r.reason ?? 'failed'}).`);
      return {
        auth_id: req.auth_id,
        status: answer.status,
        ...(r.reason ? { reason: r.reason } : {}),
        attempts: budget.attempts,
      };
    } finally {
      this.#current = undefined;
    }
  }

  /**
   * Captures until the presentation policy has a sample to identify (or an attack to report), within
   * the context's deadline and the attempts left in `budget`; or ends the context's service
   * (cancelled, expired, out of attempts).
   */
  async #collect(
    req: ScanRequest,
    signal: AbortSignal,
    budget: { attempts: number },
    timings: StepTiming[],
  ): Promise<{ sample: Sample } | { outcome: Outcome }> {
    const deadline = Date.parse(req.expires_at);
    const say = this.#opts.display;
    const policy = new PresentationPolicy(this.#opts.liveFrames, this.#opts.livenessStrikes);
    /** The next capture, started before the current frame went through the pipeline. */
    let next: PendingCapture | undefined;
    const end = (status: string) => ({
      outcome: { auth_id: req.auth_id, status, attempts: budget.attempts },
    });
    try {
      while (budget.attempts < this.#opts.maxAttempts && !signal.aborted) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) return end('expired');
        budget.attempts += 1;
        const pending = next ?? this.#startCapture(signal, remaining);
        next = undefined;
        const captured = await pending.result;
        timings.push({ step: 'capture', at: captured.at, ms: captured.end - captured.at });
        if (!('frame' in captured)) {
          if (signal.aborted) break;
          const err = captured.err;
          const msg = err instanceof ScannerError ? err.message : String(err);
          say(`Scanner problem: ${msg}. Please try again.`);
          this.emit('scanner-error', err);
          await sleep(this.#opts.repromptMs * 2);
          continue;
        }
        const frame = captured.frame;
        if (frame.transferMs !== undefined)
          timings.push({ step: 'transfer', at: captured.end - frame.transferMs, ms: frame.transferMs });
        // When this frame, if live, still leaves the policy short of live frames, the next capture starts
        // now: the sensor exposes it while this frame goes through the pipeline. It is used only if this
        // frame is live; otherwise it is aborted and the person is asked to present again.
        if (policy.needsMoreAfterLive && budget.attempts < this.#opts.maxAttempts) {
          next = this.#startCapture(signal, deadline - Date.now());
          // START_CAPTURE goes out before the pipeline takes the event loop
          await next.started;
        }
        const started = now();
        const processed = await this.#process(frame);
        timings.push({ step: 'pipeline', at: started, ms: now() - started });
        const verdict = policy.observe(processed);
        if (verdict.kind === 'attack')
          return { sample: { template: undefined, liveness: 0, quality: 0, hand: 'right' } };
        if (verdict.kind === 'identify') {
          // identify with the best capture; liveness is the weakest verdict of the frames
          return {
            sample: {
              template: verdict.best.template,
              // an undecided side (camera profiles) is left out: the server searches both hands
              hand: verdict.best.hand === 'unknown' ? undefined : verdict.best.hand,
              quality: toUnit(verdict.best.quality),
              liveness: livenessToWire(verdict.liveness),
            },
          };
        }
        if (!processed.ok) {
          say(`${processed.message}. Please hold your palm flat, 5 cm above the scanner.`);
          // the capture started meanwhile is of the presentation just refused
          await Promise.all([discard(next), sleep(this.#opts.repromptMs)]);
          next = undefined;
        }
      }
      if (signal.aborted) {
        say('Cancelled.');
        return end('cancelled');
      }
      say('No usable capture. Please ask staff for help.');
      return end('gave_up');
    } finally {
      // one capture at a time on the scanner: the next step starts with none left running
      await discard(next);
    }
  }

  /** Starts a capture; its result (frame or error) and when it started and ended. */
  #startCapture(signal: AbortSignal, timeoutMs: number): PendingCapture {
    const abort = new AbortController();
    const relay = () => abort.abort();
    if (signal.aborted) abort.abort();
    else signal.addEventListener('abort', relay, { once: true });
    const at = now();
    let onStart = () => {};
    const started = new Promise<void>((resolve) => {
      onStart = resolve;
    });
    const result = this.#scanner
      .capture({ signal: abort.signal, timeoutMs: Math.max(1000, timeoutMs), onStart })
      .then(
        (frame): Captured => ({ frame, at, end: now() }),
        (err: unknown): Captured => ({ err, at, end: now() }),
      )
      .finally(() => {
        signal.removeEventListener('abort', relay);
        onStart();
      });
    return { result, abort, started };
  }

  /** NIR illumination stays full; the status LED shows the outcome (green accepted, red refused). */
  async #leds(status: number): Promise<void> {
    await this.#scanner.setLeds?.(LED.NIR_850 | LED.NIR_940 | status, 255).catch(() => undefined);
  }

  async #identify(
    req: ScanRequest,
    id: string,
    timings: StepTiming[],
    sample: Sample,
  ): Promise<ResultOf<typeof pvsMethods, 'identify'>> {
    const signing = now();
    const attestation = this.#opts.attest?.(req.auth_id, req.nonce, sample);
    const at = now();
    timings.push({ step: 'attest', at: signing, ms: at - signing });
    const res = await this.#link.call(
      'identify',
      {
        auth_id: req.auth_id,
        ...(sample.template ? { template: Buffer.from(sample.template).toString('base64') } : {}),
        ...(sample.hand ? { hand: sample.hand } : {}),
        quality: sample.quality,
        liveness: sample.liveness,
        ...(attestation ? { attestation } : {}),
      },
      { id, timeoutMs: Math.max(5000, Date.parse(req.expires_at) - Date.now() + 5000) },
    );
    timings.push({ step: 'identify', at, ms: now() - at });
    return res;
  }
}

interface Sample {
  template: Uint8Array | undefined;
  /** undefined: the capture could not tell the side (signed as "not given") */
  hand: 'left' | 'right' | undefined;
  quality: number;
  liveness: number;
}

type Captured = { frame: Frame; at: number; end: number } | { err: unknown; at: number; end: number };
interface PendingCapture {
  result: Promise<Captured>;
  abort: AbortController;
  /** START_CAPTURE was sent (or the capture ended before it could be). */
  started: Promise<void>;
}

/** Aborts a capture that is no longer wanted and waits until the scanner is free again. */
async function discard(capture: PendingCapture | undefined): Promise<void> {
  if (!capture) return;
  capture.abort.abort();
  await capture.result;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
