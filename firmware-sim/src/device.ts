import { EventEmitter } from 'node:events';
import { crc32 } from '@palmid/contracts/wire/crc';
import { WireError } from '@palmid/contracts/wire/errors';
import { encodeFrame, type Frame } from '@palmid/contracts/wire/frame';
import type { ByteLink } from '@palmid/contracts/wire/link';
import { createLinkPair } from '@palmid/contracts/wire/link';
import {
  BOOT_REASON,
  CAPTURE_STATE,
  type CaptureStateName,
  DEVICE_ERROR,
  decodeMessage,
  isCommandType,
  LED,
  type Message,
  PROTOCOL_VERSION,
  toFrame,
} from '@palmid/contracts/wire/messages';
import { FrameParser } from '@palmid/contracts/wire/parser';
import { type Fault, type FaultInput, faultSchema } from './faults.ts';
import { type ImageSource, synthPalmSource } from './image-source.ts';
import { type Presentation, presentationSchema } from './presentation.ts';
import { type Random, seededRandom } from './rng.ts';

export interface SimulatorOptions {
  /** Frame renderer; default: the synthetic palm renderer. */
  source?: ImageSource;
  width?: number;
  height?: number;
  /** Largest READ_IMAGE length the firmware accepts. */
  maxChunk?: number;
  /** Sensor integration + readout time of one capture. */
  captureMs?: number;
  firmware?: string;
  model?: string;
  serial?: string;
  /** When a capture is armed and nobody is at the sensor, present this palm (a walk-up user). */
  autoPresent?: Presentation | false;
  autoPresentDelayMs?: number;
  /** Give up waiting for a palm after this long (0 = wait forever). */
  noPalmTimeoutMs?: number;
  /** Seed for fault injection and noise. */
  seed?: number;
  /**
   * Render the next capture's frame of the hand over the sensor as soon as the current one is rendered
   * (default true), so that the host's render time, which a real sensor does not have, rarely delays a
   * read-out. Frames are the same either way.
   */
  renderAhead?: boolean;
}

export const DEFAULT_EXPOSURE_US = 4000;
export const DEFAULT_GAIN = 4;

export interface SimulatorSnapshot {
  plugged: boolean;
  state: CaptureStateName;
  progress: number;
  captureId: number;
  palm: Presentation | undefined;
  faults: Fault[];
  links: number;
  exposureUs: number;
  gain: number;
  ledMask: number;
  ledIntensity: number;
}

/**
 * One capture as the simulator ran it (`GET /captures` on the control port). Times are ms since the
 * epoch (sub-millisecond, comparable between processes on one host) or durations in ms.
 */
export interface CaptureRecord {
  captureId: number;
  /** The exposure began (the palm was there when the capture was armed, or arrived). */
  startedAt: number;
  /** The simulated exposure and read-out: the sensor's own time. */
  exposureMs: number;
  /** The frame's render on the host (a simulator artefact, see docs/performance.md). */
  renderMs: number | undefined;
  /** READY (or FAILED) this long after startedAt. */
  doneMs: number;
  outcome: 'ready' | 'failed';
}

const CAPTURE_LOG = 64;

type Rendered = { frame?: { width: number; height: number; data: Uint8Array }; err?: unknown };
/** Captures are numbered per hand and artefact (each capture of it differs a little: pose, light). */
const countKey = (p: Presentation) => `${p.identity}|${p.hand}|${p.attack ?? ''}`;
/** What a frame rendered ahead must match to be used. */
const presentationKey = (p: Presentation) => `${countKey(p)}|${p.condition ?? ''}`;
const epochNow = () => performance.timeOrigin + performance.now();

interface Session {
  link: ByteLink;
  parser: FrameParser;
  detach(): void;
}

interface Image {
  captureId: number;
  width: number;
  height: number;
  data: Uint8Array;
  crc: number;
}

const STATE_NAMES = Object.fromEntries(Object.entries(CAPTURE_STATE).map(([k, v]) => [v, k])) as Record<
  number,
  CaptureStateName
>;

/**
 * The scanner firmware as software. One device, any number of links (memory, TCP, pty) attached;
 * answers each link on that link and broadcasts events to all. State machine:
 * IDLE → (START_CAPTURE) WAITING_PALM → (palm) CAPTURING → READY, or FAILED (palm removed,
 * no palm in time, sensor fault). Power loss (unplug) drops everything back to IDLE.
 *
 * Emits: 'command' (Message), 'state' (name), 'palm' (Presentation | undefined), 'unplugged', 'replugged'.
 */
export class FirmwareSimulator extends EventEmitter {
  readonly width: number;
  readonly height: number;
  readonly maxChunk: number;
  readonly firmware: string;
  readonly model: string;
  readonly serial: string;
  private readonly captureMs: number;
  private readonly autoPresentDelayMs: number;
  private readonly noPalmTimeoutMs: number;
  private source: ImageSource;
  private autoPresent: Presentation | false;
  private readonly random: Random;

  private plugged = true;
  private state: number = CAPTURE_STATE.IDLE;
  private progress = 0;
  private captureId = 0;
  private lastToken: number | undefined;
  private image: Image | undefined;
  private palm: Presentation | undefined;
  /** While the kiosk asks for the other hand (amber LED): who walked up before it asked. */
  private beforeStepUp: { autoPresent: Presentation | false } | undefined;
  private readonly captureCounts = new Map<string, number>();
  private faults: Fault[] = [];
  private exposureUs = DEFAULT_EXPOSURE_US;
  private gain = DEFAULT_GAIN;
  private ledMask = LED.NIR_850 | LED.NIR_940;
  private ledIntensity = 255;
  private readonly sessions = new Set<Session>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private captureTimers = new Set<NodeJS.Timeout>();
  private readonly captureLog: CaptureRecord[] = [];
  private readonly renderAhead: boolean;
  /** The next capture's frame of the presentation over the sensor, rendered while the sensor is idle. */
  private ahead: { key: string; capture: number; frame: Promise<Rendered> } | undefined;
  private capturing: { id: number; startedAt: number; renderMs?: number } | undefined;
  private stopped = false;

  constructor(options: SimulatorOptions = {}) {
    super();
    this.width = options.width ?? 320;
    this.height = options.height ?? 240;
    this.maxChunk = options.maxChunk ?? 1024;
    this.captureMs = options.captureMs ?? 300;
    this.firmware = options.firmware ?? '1.4.0-sim';
    this.model = options.model ?? 'PalmVein PV-320 (simulated)';
    this.serial = options.serial ?? 'SIM-000001';
    this.source = options.source ?? synthPalmSource;
    this.autoPresent = options.autoPresent ?? false;
    this.autoPresentDelayMs = options.autoPresentDelayMs ?? 150;
    this.noPalmTimeoutMs = options.noPalmTimeoutMs ?? 60_000;
    this.random = seededRandom(options.seed ?? 1);
    this.renderAhead = options.renderAhead ?? true;
    // Listeners for 'error' would otherwise be mandatory on an EventEmitter.
    this.on('error', () => {});
  }

  // ---------------------------------------------------------------- public control surface

  snapshot(): SimulatorSnapshot {
    return {
      plugged: this.plugged,
      state: STATE_NAMES[this.state] ?? 'IDLE',
      progress: this.progress,
      captureId: this.captureId,
      palm: this.palm,
      faults: [...this.faults],
      links: this.sessions.size,
      exposureUs: this.exposureUs,
      gain: this.gain,
      ledMask: this.ledMask,
      ledIntensity: this.ledIntensity,
    };
  }

  /**
   * Prepare the image source (load the renderer, build the auto-present hand) so the first capture
   * answers as fast as later ones. Optional; captures work without it.
   */
  async warmUp(extra: Presentation[] = []): Promise<void> {
    const palms = [...(this.autoPresent ? [this.autoPresent] : []), ...extra];
    await this.source.warmUp?.(
      palms.map((p) => ({ ...p, capture: 0, width: this.width, height: this.height })),
    );
  }

  /** The last captures, oldest first. */
  captures(): CaptureRecord[] {
    return [...this.captureLog];
  }

  setImageSource(source: ImageSource): void {
    this.source = source;
    this.ahead = undefined;
  }

  setAutoPresent(palm: Presentation | false): void {
    this.beforeStepUp = undefined;
    this.autoPresent = palm === false ? false : presentationSchema.parse(palm);
  }

  /** Hold a palm (or an attack artefact) over the sensor. */
  present(palm: Presentation): void {
    this.palm = presentationSchema.parse(palm);
    this.emit('palm', this.palm);
    this.broadcast({
      kind: 'EVT_PALM_PRESENT',
      distanceMm: 45,
      coverage: palm.condition === 'partial' ? 55 : 92,
    });
    if (this.state === CAPTURE_STATE.WAITING_PALM) this.beginCapture();
  }

  /**
   * The simulated person reads the status LED: amber is the kiosk's "present your other hand"
   * (a step-up): the palm over the sensor is withdrawn and the same person's other hand walks up at
   * the next capture. When the kiosk shows its outcome (amber off), the person leaves and whoever
   * was to walk up before walks up again.
   */
  private answerPrompt(mask: number): void {
    const amber = (mask & LED.STATUS_AMBER) !== 0;
    if (amber && !this.beforeStepUp) {
      const who = this.palm ?? (this.autoPresent || undefined);
      if (!who || who.attack) return;
      this.beforeStepUp = { autoPresent: this.autoPresent };
      const other = { ...who, hand: who.hand === 'left' ? ('right' as const) : ('left' as const) };
      this.remove();
      this.autoPresent = other;
      this.emit('step-up', other);
    } else if (!amber && this.beforeStepUp) {
      this.autoPresent = this.beforeStepUp.autoPresent;
      this.beforeStepUp = undefined;
      this.remove();
    }
  }

  /** Take the palm away. During a capture that ruins it. */
  remove(): void {
    if (!this.palm) return;
    this.palm = undefined;
    this.emit('palm', undefined);
    this.broadcast({ kind: 'EVT_PALM_REMOVED' });
    if (this.state === CAPTURE_STATE.CAPTURING)
      this.failCapture(DEVICE_ERROR.SENSOR_FAULT, 'palm removed during capture');
  }

  injectFault(fault: FaultInput): Fault {
    const parsed = faultSchema.parse(fault);
    this.faults.push(parsed);
    return parsed;
  }

  clearFaults(kind?: Fault['kind']): void {
    this.faults = kind ? this.faults.filter((f) => f.kind !== kind) : [];
  }

  get isPlugged(): boolean {
    return this.plugged;
  }

  /** Pull the cable: every link closes and the device loses power (state, image, settings). */
  unplug(forMs = 0): void {
    if (!this.plugged) return;
    this.plugged = false;
    this.powerOff();
    for (const s of [...this.sessions]) {
      s.detach();
      s.link.close(new Error('device unplugged'));
    }
    this.emit('unplugged');
    if (forMs > 0) this.later(() => this.replug(), forMs);
  }

  replug(): void {
    if (this.plugged || this.stopped) return;
    this.plugged = true;
    this.emit('replugged');
  }

  /** Attach a byte link (device end). Returns a detach function. */
  attach(link: ByteLink): () => void {
    if (!this.plugged) {
      link.close(new Error('device unplugged'));
      return () => {};
    }
    const parser = new FrameParser();
    const offData = link.onData((bytes) => {
      for (const frame of parser.push(bytes)) this.handle(session, frame);
    });
    const offClose = link.onClose(() => session.detach());
    const session: Session = {
      link,
      parser,
      detach: () => {
        offData();
        offClose();
        this.sessions.delete(session);
      },
    };
    this.sessions.add(session);
    return () => session.detach();
  }

  /** A fresh in-memory cable: returns the host end. Throws while unplugged (no device on the bus). */
  connectMemory(): ByteLink {
    if (!this.plugged) throw new Error('device unplugged');
    const [host, device] = createLinkPair();
    this.attach(device);
    return host;
  }

  /** Stop all timers and close every link. */
  stop(): void {
    this.stopped = true;
    this.powerOff();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const s of [...this.sessions]) {
      s.detach();
      s.link.close();
    }
    this.emit('stopped');
  }

  // ---------------------------------------------------------------- command handling

  private handle(session: Session, frame: Frame): void {
    if (this.has('silent')) return;
    if (!isCommandType(frame.type)) return; // a device ignores what is not a command
    let msg: Message;
    try {
      msg = decodeMessage(frame);
    } catch (err) {
      const code =
        err instanceof WireError && err.code === 'UNKNOWN_TYPE'
          ? DEVICE_ERROR.UNKNOWN_COMMAND
          : DEVICE_ERROR.BAD_REQUEST;
      this.nak(session, frame, code, err instanceof Error ? err.message : 'bad request');
      return;
    }
    this.emit('command', msg);
    const reply = (m: Message) => this.send(session, m, frame.seq);
    switch (msg.kind) {
      case 'GET_INFO':
        reply({
          kind: 'INFO',
          protocol: PROTOCOL_VERSION,
          width: this.width,
          height: this.height,
          bitsPerPixel: 8,
          maxChunk: this.maxChunk,
          firmware: this.firmware,
          model: this.model,
          serial: this.serial,
        });
        return;
      case 'START_CAPTURE': {
        const armed =
          this.state === CAPTURE_STATE.WAITING_PALM ||
          this.state === CAPTURE_STATE.CAPTURING ||
          this.state === CAPTURE_STATE.READY;
        // Same token = the host retried after losing our answer: do not restart the capture.
        if (!(armed && msg.token === this.lastToken)) {
          this.lastToken = msg.token;
          this.armCapture();
        }
        reply({ kind: 'CAPTURE_STARTED', captureId: this.captureId });
        return;
      }
      case 'CAPTURE_STATUS':
        reply({
          kind: 'STATUS',
          state: this.state,
          palmPresent: this.palm !== undefined,
          progress: this.progress,
          captureId: this.captureId,
          width: this.image?.width ?? this.width,
          height: this.image?.height ?? this.height,
          size: this.image?.data.length ?? 0,
          imageCrc: this.image?.crc ?? 0,
        });
        return;
      case 'READ_IMAGE': {
        const img = this.image;
        if (!img || this.state !== CAPTURE_STATE.READY || img.captureId !== msg.captureId) {
          this.nak(session, frame, DEVICE_ERROR.NO_IMAGE, `no image for capture ${msg.captureId}`);
          return;
        }
        if (msg.length === 0 || msg.length > this.maxChunk || msg.offset + msg.length > img.data.length) {
          this.nak(
            session,
            frame,
            DEVICE_ERROR.OUT_OF_RANGE,
            `range ${msg.offset}+${msg.length} outside image`,
          );
          return;
        }
        const unplugAt = this.faults.find((f) => f.kind === 'unplug-mid-image');
        if (unplugAt && msg.offset >= unplugAt.atOffset) {
          this.clearFaults('unplug-mid-image');
          this.unplug(unplugAt.forMs);
          return;
        }
        reply({
          kind: 'IMAGE_CHUNK',
          captureId: img.captureId,
          offset: msg.offset,
          data: img.data.slice(msg.offset, msg.offset + msg.length),
        });
        return;
      }
      case 'SET_LEDS':
        if (msg.mask > 0x1f) {
          this.nak(session, frame, DEVICE_ERROR.OUT_OF_RANGE, 'unknown LED bits');
          return;
        }
        this.answerPrompt(msg.mask);
        this.ledMask = msg.mask;
        this.ledIntensity = msg.intensity;
        reply({ kind: 'LEDS_SET', mask: this.ledMask, intensity: this.ledIntensity });
        return;
      case 'SET_EXPOSURE':
        if (msg.exposureUs < 100 || msg.exposureUs > 100_000 || msg.gain < 1 || msg.gain > 16) {
          this.nak(session, frame, DEVICE_ERROR.OUT_OF_RANGE, 'exposure 100…100000 µs, gain 1…16');
          return;
        }
        this.exposureUs = msg.exposureUs;
        this.gain = msg.gain;
        reply({ kind: 'EXPOSURE_SET', exposureUs: this.exposureUs, gain: this.gain });
        return;
      case 'ABORT_CAPTURE':
        this.cancelCapture();
        this.setState(CAPTURE_STATE.IDLE);
        reply({ kind: 'CAPTURE_ABORTED' });
        return;
      case 'RESET':
        reply({ kind: 'RESET_DONE' });
        this.powerOff();
        this.faults = this.faults.filter((f) => f.kind !== 'stuck-sensor' || f.persistent);
        this.later(() => this.broadcast({ kind: 'EVT_BOOT', reason: BOOT_REASON.RESET_COMMAND }), 20);
        return;
      default:
        // A response or event type sent to us: not a command we implement.
        this.nak(session, frame, DEVICE_ERROR.UNKNOWN_COMMAND, `not a command: ${msg.kind}`);
    }
  }

  private nak(session: Session, frame: Frame, code: number, message: string): void {
    this.send(
      session,
      { kind: 'NAK', forType: frame.type & 0x7f, code, message: message.slice(0, 200) },
      frame.seq,
    );
  }

  // ---------------------------------------------------------------- capture state machine

  private armCapture(): void {
    this.cancelCapture();
    this.captureId = this.captureId === 0xffff ? 1 : this.captureId + 1;
    this.image = undefined;
    this.progress = 0;
    this.setState(CAPTURE_STATE.WAITING_PALM);
    if (this.palm) {
      this.beginCapture();
      return;
    }
    if (this.autoPresent) {
      const palm = this.autoPresent;
      this.captureLater(() => this.present(palm), this.autoPresentDelayMs);
    }
    if (this.noPalmTimeoutMs > 0) {
      this.captureLater(() => {
        if (this.state === CAPTURE_STATE.WAITING_PALM) {
          this.failCapture(DEVICE_ERROR.NO_PALM_TIMEOUT, 'no palm presented in time');
        }
      }, this.noPalmTimeoutMs);
    }
  }

  private beginCapture(): void {
    const palm = this.palm;
    if (!palm) return;
    this.cancelCapture();
    this.setState(CAPTURE_STATE.CAPTURING);
    const id = this.captureId;
    const counted = countKey(palm);
    const capture = this.captureCounts.get(counted) ?? 0;
    this.captureCounts.set(counted, capture + 1);
    const record: { id: number; startedAt: number; renderMs?: number } = { id, startedAt: epochNow() };
    this.capturing = record;
    const rendering = this.frameFor(palm, capture);
    let rendered: Rendered | undefined;
    let exposed = false;
    void rendering.then((r) => {
      rendered = r;
      record.renderMs = Math.max(0, epochNow() - record.startedAt);
      // the exposure is over and the frame was late: read it out now (a simulator artefact, the
      // render, should not cost more than its own lateness)
      if (exposed) this.finishCapture(id, r);
    });
    // The sensor's progress runs on the clock of the exposure (ticks at fixed points after its start, so
    // timer lateness does not add up). If the frame is not rendered when the exposure ends (a loaded
    // host), the progress keeps creeping towards 99 % so that the host sees a slow sensor, never a stalled
    // one, and the frame is read out the moment it is there.
    const steps = 5;
    const stepMs = this.captureMs / steps;
    const started = performance.now();
    let step = 0;
    const tick = () => {
      if (this.state !== CAPTURE_STATE.CAPTURING || this.captureId !== id) return;
      // A stuck sensor stops delivering lines part-way through; the status never reaches READY.
      if (this.has('stuck-sensor') && this.progress >= 40) return;
      // a timer may fire a little before its time (the event loop's clock is coarse): the exposure is
      // never cut short
      const early = step < steps ? started + (step + 1) * stepMs - performance.now() : 0;
      if (early > 0) {
        this.captureLater(tick, early);
        return;
      }
      step += 1;
      this.progress = step <= steps - 1 ? step * 20 : Math.min(99, 80 + step - steps + 1);
      if (step < steps) {
        this.captureLater(tick, Math.max(0, started + (step + 1) * stepMs - performance.now()));
        return;
      }
      exposed = true;
      if (rendered) {
        this.finishCapture(id, rendered);
        return;
      }
      this.captureLater(tick, Math.max(200, stepMs));
    };
    this.captureLater(tick, stepMs);
  }

  /**
   * The rendered frame of `capture` of the presentation `key`: the one rendered ahead if it is that one,
   * else a new render. Once it is there, the next capture's frame of the same presentation is rendered
   * ahead (`renderAhead`): a real sensor's frame costs its host nothing, while the simulator's render
   * takes CPU time that would otherwise show up in the read-out of the next capture.
   */
  private frameFor(palm: Presentation, capture: number): Promise<Rendered> {
    const key = presentationKey(palm);
    const ahead = this.ahead;
    this.ahead = undefined;
    const rendering =
      ahead && ahead.key === key && ahead.capture === capture ? ahead.frame : this.render(palm, capture);
    if (this.renderAhead) {
      void rendering.then(() => {
        // only while the same hand is still over the sensor, and not twice
        if (this.ahead || !this.palm || presentationKey(this.palm) !== key || this.stopped) return;
        if ((this.captureCounts.get(countKey(palm)) ?? 0) !== capture + 1) return;
        this.ahead = { key, capture: capture + 1, frame: this.render(palm, capture + 1) };
      });
    }
    return rendering;
  }

  private render(palm: Presentation, capture: number): Promise<Rendered> {
    return this.source.render({ ...palm, capture, width: this.width, height: this.height }).then(
      (frame) => ({ frame }),
      (err: unknown) => ({ err }),
    );
  }

  private finishCapture(id: number, r: Rendered): void {
    if (this.captureId !== id || this.state !== CAPTURE_STATE.CAPTURING) return;
    if (!r.frame) {
      this.failCapture(DEVICE_ERROR.SENSOR_FAULT, `sensor read-out failed: ${String(r.err)}`);
      return;
    }
    const frame = r.frame;
    if (!this.plugged) return;
    const data = this.expose(frame.data);
    this.image = { captureId: id, width: frame.width, height: frame.height, data, crc: crc32(data) };
    this.progress = 100;
    this.logCapture('ready');
    this.setState(CAPTURE_STATE.READY);
    this.broadcast({ kind: 'EVT_IMAGE_READY', captureId: id });
  }

  /** Exposure, gain and NIR illumination scale the scene; defaults leave it unchanged. */
  private expose(scene: Uint8Array): Uint8Array {
    const nir = this.ledMask & (LED.NIR_850 | LED.NIR_940) ? this.ledIntensity / 255 : 0.04;
    const factor = (this.exposureUs / DEFAULT_EXPOSURE_US) * (this.gain / DEFAULT_GAIN) * nir;
    if (factor === 1) return scene.slice();
    const out = new Uint8Array(scene.length);
    for (let i = 0; i < scene.length; i++) out[i] = Math.min(255, Math.round(scene[i]! * factor));
    return out;
  }

  private logCapture(outcome: CaptureRecord['outcome']): void {
    const c = this.capturing;
    if (!c || c.id !== this.captureId) return;
    this.capturing = undefined;
    this.captureLog.push({
      captureId: c.id,
      startedAt: c.startedAt,
      exposureMs: this.captureMs,
      renderMs: c.renderMs,
      doneMs: epochNow() - c.startedAt,
      outcome,
    });
    if (this.captureLog.length > CAPTURE_LOG) this.captureLog.shift();
  }

  private failCapture(code: number, message: string): void {
    this.logCapture('failed');
    this.cancelCapture();
    this.setState(CAPTURE_STATE.FAILED);
    this.broadcast({ kind: 'EVT_ERROR', code, message });
  }

  private cancelCapture(): void {
    for (const t of this.captureTimers) {
      clearTimeout(t);
      this.timers.delete(t);
    }
    this.captureTimers = new Set();
  }

  private powerOff(): void {
    this.cancelCapture();
    this.image = undefined;
    this.progress = 0;
    this.lastToken = undefined;
    this.exposureUs = DEFAULT_EXPOSURE_US;
    this.gain = DEFAULT_GAIN;
    this.ledMask = LED.NIR_850 | LED.NIR_940;
    this.ledIntensity = 255;
    this.setState(CAPTURE_STATE.IDLE);
  }

  private setState(state: number): void {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', STATE_NAMES[state]);
  }

  // ---------------------------------------------------------------- line output with faults

  private has(kind: Fault['kind']): boolean {
    return this.faults.some((f) => f.kind === kind);
  }

  private broadcast(msg: Message): void {
    for (const s of this.sessions) this.send(s, msg, 0);
  }

  private send(session: Session, msg: Message, seq: number): void {
    const slow = this.faults.find((f) => f.kind === 'slow');
    const out = () => {
      if (session.link.closed || !this.sessions.has(session)) return;
      for (const bytes of this.withLineFaults(encodeFrame(toFrame(msg, seq)))) {
        try {
          session.link.write(bytes);
        } catch {
          session.detach();
          return;
        }
      }
    };
    if (slow && slow.delayMs > 0) this.later(out, slow.delayMs);
    else out();
  }

  private withLineFaults(frame: Uint8Array): Uint8Array[] {
    const parts: Uint8Array[] = [];
    for (const f of this.faults) {
      if (f.kind === 'garbage' && this.random() < f.probability) {
        const junk = new Uint8Array(f.bytes);
        for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(this.random() * 256);
        parts.push(junk);
      }
      if (f.kind === 'unknown-frames' && this.random() < f.probability) {
        parts.push(encodeFrame({ type: 0x6a, seq: 0, payload: Uint8Array.of(0xde, 0xad) }));
      }
    }
    let body = frame;
    for (const f of this.faults) {
      if (f.kind === 'crc-noise' && this.random() < f.probability) {
        body = body.slice();
        const i = 1 + Math.floor(this.random() * (body.length - 1));
        body[i]! ^= 1 << Math.floor(this.random() * 8);
      }
      if (f.kind === 'truncate' && this.random() < f.probability) {
        body = body.slice(0, Math.max(1, Math.floor(body.length / 2)));
      }
    }
    parts.push(body);
    return parts;
  }

  private later(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  private captureLater(fn: () => void, ms: number): void {
    const t = this.later(() => {
      this.captureTimers.delete(t);
      fn();
    }, ms);
    this.captureTimers.add(t);
  }
}
