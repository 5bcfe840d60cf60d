import { EventEmitter } from 'node:events';
import {
  type ChannelEvent,
  type ChannelStats,
  type RequestOptions,
  WireChannel,
} from '@palmid/contracts/wire/channel';
import { crc32 } from '@palmid/contracts/wire/crc';
import { WireError } from '@palmid/contracts/wire/errors';
import {
  CAPTURE_STATE,
  DEVICE_ERROR,
  deviceErrorName,
  PROTOCOL_VERSION,
} from '@palmid/contracts/wire/messages';
import type { Transport } from '../transport/transport.ts';
import { ScannerError, toScannerError } from './errors.ts';

export interface DeviceInfo {
  protocol: number;
  firmware: string;
  model: string;
  serial: string;
  width: number;
  height: number;
  bitsPerPixel: number;
  maxChunk: number;
}

export interface CaptureProgress {
  phase: 'waiting-palm' | 'capturing' | 'transferring' | 'done';
  /** Image bytes received so far (transferring) or sensor progress 0–100 (capturing). */
  done: number;
  total: number;
}

/** A raw frame from the scanner (the palm pipeline turns it into a `CaptureResult`, shared/palm/src/capture/pipeline.ts). */
export interface CapturedFrame {
  captureId: number;
  width: number;
  height: number;
  /** 8-bit grayscale, row-major. */
  data: Uint8Array;
  durationMs: number;
  /** Of `durationMs`, the image transfer (READ_IMAGE) after the device reported it ready. */
  transferMs?: number;
}

export interface CaptureOptions {
  onProgress?: (p: CaptureProgress) => void;
  signal?: AbortSignal;
  /** Whole capture, including waiting for a palm. */
  timeoutMs?: number;
  /**
   * Called once START_CAPTURE has been handed to the link (before its answer): work started after it
   * runs while the sensor exposes.
   */
  onStart?: () => void;
}

export interface DriverOptions {
  /** Per-attempt answer timeout. */
  timeoutMs?: number;
  retries?: number;
  /** CAPTURE_STATUS poll interval (an IMAGE_READY event wakes the poll early). */
  pollMs?: number;
  captureTimeoutMs?: number;
  /** Sensor progress may not stand still longer than this while capturing. */
  stallTimeoutMs?: number;
  /** Reopen the link after an unplug, with exponential backoff and jitter. */
  reconnect?: boolean;
  reconnectInitialMs?: number;
  reconnectMaxMs?: number;
  /** READ_IMAGE length; default and upper bound: the device's maxChunk. */
  chunkSize?: number;
  /**
   * READ_IMAGE requests in flight at once (docs/wire-protocol.md §3: the device answers in order).
   * 1 reads one chunk per round trip; the default 8 hides the round trip on USB and TCP links.
   */
  readWindow?: number;
  /**
   * Retries of the idempotent reads of a capture (CAPTURE_STATUS, READ_IMAGE). Higher than `retries`:
   * an image is ~40 chunks, so on a noisy line (30 % of frames lost) 2 retries per chunk lose almost
   * every image, while 8 complete most of them at the cost of a few timeouts.
   */
  readRetries?: number;
}

export type DriverState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting' | 'closed';

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Talks to one scanner over a Transport. Never throws anything but ScannerError, never leaves a
 * promise pending past its timeout. Emits 'state' (DriverState), 'palm' (present: boolean),
 * 'disconnected' (Error), 'reconnected' (DeviceInfo), 'device-error' ({code, message}), 'boot'.
 */
export class ScannerDriver extends EventEmitter {
  private channel: WireChannel | undefined;
  private unsubscribe: Array<() => void> = [];
  private deviceInfo: DeviceInfo | undefined;
  private current: DriverState = 'disconnected';
  private closingByUs = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private lastDeviceError: { code: number; message: string } | undefined;
  private imageReadyWaiter: (() => void) | undefined;
  /**
   * The capture of the last EVT_IMAGE_READY. Kept, not only passed to a waiter: the event can arrive in
   * the same read as the STATUS answer that still said CAPTURING, before the capture loop waits again,
   * and the loop must then not sleep a whole poll interval.
   */
  private imageReadyId: number | undefined;
  private palmPresent = false;
  private capturing = false;
  private readonly opts: Required<Omit<DriverOptions, 'chunkSize'>> & { chunkSize: number | undefined };

  constructor(
    readonly transport: Transport,
    options: DriverOptions = {},
  ) {
    super();
    this.opts = {
      timeoutMs: options.timeoutMs ?? 500,
      retries: options.retries ?? 2,
      readRetries: options.readRetries ?? 8,
      pollMs: options.pollMs ?? 100,
      captureTimeoutMs: options.captureTimeoutMs ?? 30_000,
      stallTimeoutMs: options.stallTimeoutMs ?? 3000,
      reconnect: options.reconnect ?? true,
      reconnectInitialMs: options.reconnectInitialMs ?? 250,
      reconnectMaxMs: options.reconnectMaxMs ?? 5000,
      chunkSize: options.chunkSize,
      readWindow: Math.max(1, Math.min(32, Math.floor(options.readWindow ?? 8))),
    };
    this.on('error', () => {});
  }

  get state(): DriverState {
    return this.current;
  }
  get info(): DeviceInfo | undefined {
    return this.deviceInfo;
  }
  get isPalmPresent(): boolean {
    return this.palmPresent;
  }
  /** Link counters: frames, bad CRCs, dropped bytes, timeouts, retries, unknown frames… */
  get stats(): ChannelStats | undefined {
    return this.channel?.stats;
  }

  /** Open the link and identify the device. */
  async connect(): Promise<DeviceInfo> {
    if (this.current === 'closed') throw new ScannerError('NOT_CONNECTED', 'driver was closed');
    if (this.current === 'connected' && this.deviceInfo) return this.deviceInfo;
    this.closingByUs = false;
    this.setState('connecting');
    try {
      return await this.openAndIdentify();
    } catch (err) {
      this.setState('disconnected');
      throw err;
    }
  }

  /** Wait until connected (e.g. while reconnecting after an unplug). */
  async whenConnected(timeoutMs: number): Promise<DeviceInfo> {
    if (this.current === 'connected' && this.deviceInfo) return this.deviceInfo;
    if (this.current === 'disconnected') return this.connect();
    if (this.current === 'closed') throw new ScannerError('NOT_CONNECTED', 'driver was closed');
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off('state', onState);
        reject(
          new ScannerError(
            'NOT_CONNECTED',
            `scanner not connected (${this.transport.description}); still trying`,
          ),
        );
      }, timeoutMs);
      const onState = (state: DriverState) => {
        if (state !== 'connected' && state !== 'closed') return;
        clearTimeout(timer);
        this.off('state', onState);
        if (state === 'connected' && this.deviceInfo) resolve(this.deviceInfo);
        else reject(new ScannerError('NOT_CONNECTED', 'driver was closed'));
      };
      this.on('state', onState);
    });
  }

  async getInfo(): Promise<DeviceInfo> {
    const info = await this.request({ kind: 'GET_INFO' }, 'INFO', 'while reading device info');
    this.deviceInfo = {
      protocol: info.protocol,
      firmware: info.firmware,
      model: info.model,
      serial: info.serial,
      width: info.width,
      height: info.height,
      bitsPerPixel: info.bitsPerPixel,
      maxChunk: info.maxChunk,
    };
    return this.deviceInfo;
  }

  async setLeds(mask: number, intensity: number): Promise<void> {
    await this.request({ kind: 'SET_LEDS', mask, intensity }, 'LEDS_SET', 'while setting LEDs');
  }

  async setExposure(exposureUs: number, gain: number): Promise<void> {
    await this.request({ kind: 'SET_EXPOSURE', exposureUs, gain }, 'EXPOSURE_SET', 'while setting exposure');
  }

  /** Reboot the firmware (clears a stuck sensor, drops any image). */
  async reset(): Promise<void> {
    await this.request({ kind: 'RESET' }, 'RESET_DONE', 'while resetting');
  }

  /** One capture at a time: the device has one sensor and one image buffer. */
  async capture(options: CaptureOptions = {}): Promise<CapturedFrame> {
    if (this.capturing) throw new ScannerError('BUSY', 'a capture is already running on this scanner');
    this.capturing = true;
    try {
      return await this.captureOnce(options);
    } finally {
      this.capturing = false;
    }
  }

  private async captureOnce(options: CaptureOptions): Promise<CapturedFrame> {
    const started = Date.now();
    const timeoutMs = options.timeoutMs ?? this.opts.captureTimeoutMs;
    const deadline = started + timeoutMs;
    const info = await this.whenConnected(Math.min(timeoutMs, 10_000));
    if (info.bitsPerPixel !== 8) {
      throw new ScannerError(
        'INCOMPATIBLE',
        `scanner sends ${info.bitsPerPixel}-bit images; only 8-bit is supported`,
      );
    }
    const progress = (p: CaptureProgress) => {
      try {
        options.onProgress?.(p);
      } catch {
        // A progress bar's failure is not a capture failure.
      }
    };
    // One ABORT_CAPTURE however many chunk readers notice the abort.
    let aborting: Promise<never> | undefined;
    const checkAbort = async () => {
      if (!options.signal?.aborted) return;
      aborting ??= this.abortQuietly().then(() => {
        throw new ScannerError('ABORTED', 'capture aborted');
      });
      await aborting;
    };

    this.lastDeviceError = undefined;
    this.imageReadyId = undefined;
    const token = Math.floor(Math.random() * 0xffff);
    // onStart: once START_CAPTURE has been handed to the line (the channel ignores a hook that throws)
    const { captureId } = await this.request(
      { kind: 'START_CAPTURE', token },
      'CAPTURE_STARTED',
      'while starting capture',
      options.onStart ? { onSent: options.onStart } : {},
    );

    // ---- wait for the image
    let lastProgress = -1;
    let lastProgressAt = Date.now();
    let status: Awaited<ReturnType<ScannerDriver['status']>>;
    for (;;) {
      await checkAbort();
      status = await this.status();
      if (status.captureId !== captureId || status.state === CAPTURE_STATE.IDLE) {
        throw new ScannerError(
          'CAPTURE_FAILED',
          'scanner lost the capture (it was reset or restarted); try again',
        );
      }
      if (status.state === CAPTURE_STATE.READY) break;
      if (status.state === CAPTURE_STATE.FAILED) {
        const why = this.lastDeviceError as { code: number; message: string } | undefined;
        const reason = why
          ? `${why.message} (${deviceErrorName(why.code)})`
          : 'the device reported a failed capture';
        if (why?.code === DEVICE_ERROR.NO_PALM_TIMEOUT)
          throw new ScannerError('CAPTURE_TIMEOUT', `no palm presented: ${reason}`);
        throw new ScannerError('CAPTURE_FAILED', `capture failed: ${reason}`);
      }
      const now = Date.now();
      if (status.state === CAPTURE_STATE.CAPTURING) {
        progress({ phase: 'capturing', done: status.progress, total: 100 });
        if (status.progress !== lastProgress) {
          lastProgress = status.progress;
          lastProgressAt = now;
        } else if (now - lastProgressAt > this.opts.stallTimeoutMs) {
          await this.resetQuietly();
          throw new ScannerError(
            'SENSOR_STUCK',
            `sensor stopped at ${status.progress}% for ${this.opts.stallTimeoutMs} ms (stuck sensor); the scanner was reset — try again, and replace the sensor if it keeps happening`,
          );
        }
      } else {
        progress({ phase: 'waiting-palm', done: 0, total: 100 });
        lastProgressAt = now;
      }
      if (now >= deadline) {
        await this.abortQuietly();
        throw new ScannerError(
          'CAPTURE_TIMEOUT',
          status.state === CAPTURE_STATE.WAITING_PALM
            ? `no palm presented within ${Math.round(timeoutMs / 1000)} s`
            : `capture did not finish within ${Math.round(timeoutMs / 1000)} s`,
        );
      }
      // The device said the image is ready since that answer was sent: ask again at once.
      if (this.imageReadyId === captureId) this.imageReadyId = undefined;
      else await this.waitForImageReady(Math.min(this.opts.pollMs, Math.max(1, deadline - now)));
    }

    // ---- transfer
    const { width, height, size, imageCrc } = status;
    if (size !== width * height) {
      throw new ScannerError(
        'INCOMPATIBLE',
        `image of ${size} bytes does not match ${width}×${height} at 8 bits`,
      );
    }
    const chunk = Math.max(1, Math.min(this.opts.chunkSize ?? info.maxChunk, info.maxChunk));
    const data = new Uint8Array(size);
    const transferStarted = performance.now();
    progress({ phase: 'transferring', done: 0, total: size });
    await this.readImage(captureId, data, chunk, checkAbort, (done) =>
      progress({ phase: 'transferring', done, total: size }),
    );
    if (crc32(data) !== imageCrc) {
      throw new ScannerError('CORRUPT_IMAGE', 'image checksum mismatch after transfer; try again');
    }
    progress({ phase: 'done', done: size, total: size });
    const transferMs = performance.now() - transferStarted;
    return { captureId, width, height, data, durationMs: Date.now() - started, transferMs };
  }

  /**
   * Reads the image with up to `readWindow` READ_IMAGE requests in flight. Each chunk keeps its own
   * retries (a corrupted or overtaken answer is asked for again at once, docs/wire-protocol.md §3); the
   * first failure stops new requests, waits for those in flight and is thrown.
   */
  private async readImage(
    captureId: number,
    data: Uint8Array,
    chunk: number,
    checkAbort: () => Promise<void>,
    onBytes: (done: number) => void,
  ): Promise<void> {
    const size = data.length;
    let nextOffset = 0;
    let received = 0;
    let failure: unknown;
    const worker = async () => {
      while (failure === undefined && nextOffset < size) {
        const offset = nextOffset;
        const length = Math.min(chunk, size - offset);
        nextOffset += length;
        const context = `during image transfer (${offset}/${size} bytes)`;
        try {
          await checkAbort();
          const part = await this.request(
            { kind: 'READ_IMAGE', captureId, offset, length },
            'IMAGE_CHUNK',
            context,
            { retries: this.opts.readRetries },
          );
          if (part.captureId !== captureId || part.offset !== offset || part.data.length !== length) {
            throw new ScannerError('DEVICE_ERROR', `scanner answered with the wrong image chunk ${context}`);
          }
          data.set(part.data, offset);
          received += length;
          onBytes(received);
        } catch (err) {
          failure ??= err;
        }
      }
    };
    const workers = Math.min(this.opts.readWindow, Math.ceil(size / chunk));
    await Promise.all(Array.from({ length: workers }, worker));
    if (failure !== undefined) throw failure;
  }

  /** Close the link for good (stops reconnecting). */
  async close(): Promise<void> {
    this.closingByUs = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.teardownChannel(new WireError('DISCONNECTED', 'driver closed'));
    try {
      await this.transport.close();
      await this.transport.dispose?.();
    } catch {
      // Closing a dead port can fail; it is closed either way.
    }
    this.setState('closed');
  }

  // ------------------------------------------------------------------ internals

  private async status() {
    return this.request({ kind: 'CAPTURE_STATUS' }, 'STATUS', 'while polling capture status', {
      retries: this.opts.readRetries,
    });
  }

  private async request<K extends Parameters<WireChannel['request']>[1]>(
    msg: Parameters<WireChannel['request']>[0],
    expect: K,
    context: string,
    options: RequestOptions = {},
  ) {
    const channel = this.channel;
    if (!channel) {
      // Known device gone (unplugged) vs. never connected: different advice.
      if (this.deviceInfo && this.current !== 'closed') {
        throw new ScannerError(
          'DISCONNECTED',
          `scanner disconnected ${context} (${this.transport.description})`,
        );
      }
      throw new ScannerError(
        'NOT_CONNECTED',
        `scanner not connected ${context} (${this.transport.description})`,
      );
    }
    try {
      return await channel.request(msg, expect, options);
    } catch (err) {
      throw toScannerError(err, context);
    }
  }

  private async openAndIdentify(): Promise<DeviceInfo> {
    try {
      await this.transport.open();
    } catch (err) {
      throw toScannerError(err, `while opening ${this.transport.description}`);
    }
    const channel = new WireChannel((bytes) => this.transport.write(bytes), {
      timeoutMs: this.opts.timeoutMs,
      retries: this.opts.retries,
      onEvent: (e) => this.onEvent(e),
    });
    this.channel = channel;
    this.unsubscribe = [
      this.transport.onData((bytes) => channel.receive(bytes)),
      this.transport.onClose((error) => this.onLinkClosed(channel, error)),
    ];
    let info: DeviceInfo;
    try {
      info = await this.getInfo();
    } catch (err) {
      this.teardownChannel(new WireError('DISCONNECTED', 'identification failed'));
      this.closingByUs = true;
      await this.transport.close().catch(() => {});
      this.closingByUs = false;
      const e = toScannerError(err, 'while identifying');
      if (e.code === 'TIMEOUT') {
        throw new ScannerError(
          'TIMEOUT',
          `no answer from a scanner on ${this.transport.description} (wrong port or baud rate, or the firmware is hung — power-cycle it)`,
          { cause: err },
        );
      }
      throw e;
    }
    if (info.protocol !== PROTOCOL_VERSION) {
      await this.close();
      throw new ScannerError(
        'INCOMPATIBLE',
        `scanner speaks protocol v${info.protocol}; this agent speaks v${PROTOCOL_VERSION} (update the firmware or the agent)`,
      );
    }
    this.setState('connected');
    return info;
  }

  private onEvent(e: ChannelEvent): void {
    switch (e.kind) {
      case 'EVT_PALM_PRESENT':
        this.palmPresent = true;
        this.emit('palm', true);
        break;
      case 'EVT_PALM_REMOVED':
        this.palmPresent = false;
        this.emit('palm', false);
        break;
      case 'EVT_IMAGE_READY':
        this.imageReadyId = e.captureId;
        this.imageReadyWaiter?.();
        break;
      case 'EVT_ERROR':
        this.lastDeviceError = { code: e.code, message: e.message };
        this.emit('device-error', this.lastDeviceError);
        break;
      case 'EVT_BOOT':
        this.emit('boot', e.reason);
        break;
    }
  }

  private waitForImageReady(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waiter = () => {
        clearTimeout(timer);
        if (this.imageReadyWaiter === waiter) this.imageReadyWaiter = undefined;
        resolve();
      };
      const timer = setTimeout(waiter, ms);
      this.imageReadyWaiter = waiter;
    });
  }

  private onLinkClosed(channel: WireChannel, error: Error | undefined): void {
    if (this.channel !== channel) return;
    this.teardownChannel(new WireError('DISCONNECTED', error?.message ?? 'link closed'));
    if (this.closingByUs || this.current === 'closed') return;
    // A link that closes before the device was identified (a connect or a reconnect attempt in flight:
    // a port that opens and drops while the scanner is still unplugged) is that attempt's failure: its
    // identification fails and the one reconnect loop tries again. Only a working link going down is a
    // disconnection, said once, with one loop started.
    if (this.current !== 'connected') return;
    this.palmPresent = false;
    const reason = error ?? new Error('link closed');
    this.emit('disconnected', reason);
    if (!this.opts.reconnect) {
      this.setState('disconnected');
      return;
    }
    this.setState('reconnecting');
    this.scheduleReconnect(this.opts.reconnectInitialMs);
  }

  private scheduleReconnect(waitMs: number): void {
    if (this.reconnectTimer) return; // one loop: a second caller joins the one already waiting
    const jittered = waitMs * (0.75 + Math.random() * 0.5);
    this.reconnectTimer = setTimeout(async () => {
      this.reconnectTimer = undefined;
      if (this.current !== 'reconnecting') return;
      try {
        const info = await this.openAndIdentify();
        if ((this.current as DriverState) !== 'connected') return;
        this.emit('reconnected', info);
      } catch {
        if ((this.current as DriverState) === 'closed') return;
        this.current = 'reconnecting';
        this.scheduleReconnect(Math.min(waitMs * 2, this.opts.reconnectMaxMs));
      }
    }, jittered);
  }

  private teardownChannel(error: WireError): void {
    for (const off of this.unsubscribe) off();
    this.unsubscribe = [];
    this.channel?.close(error);
    this.channel = undefined;
    this.imageReadyWaiter?.();
  }

  private async abortQuietly(): Promise<void> {
    try {
      await this.channel?.request({ kind: 'ABORT_CAPTURE' }, 'CAPTURE_ABORTED', { retries: 0 });
    } catch {
      // Best effort: the capture has failed either way.
    }
  }

  private async resetQuietly(): Promise<void> {
    try {
      await this.channel?.request({ kind: 'RESET' }, 'RESET_DONE', { retries: 0 });
      await delay(50);
    } catch {
      // Best effort.
    }
  }

  private setState(state: DriverState): void {
    if (this.current === state) return;
    this.current = state;
    this.emit('state', state);
  }
}
