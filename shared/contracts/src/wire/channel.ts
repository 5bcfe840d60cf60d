import { WireError } from './errors.ts';
import { encodeFrame, type Frame } from './frame.ts';
import {
  decodeMessage,
  deviceErrorName,
  FRAME_TYPE,
  isEventType,
  type Message,
  type MessageKind,
  type MessageOf,
  toFrame,
} from './messages.ts';
import { FrameParser, type ParserStats } from './parser.ts';

export interface ChannelOptions {
  /** How long to wait for each attempt's answer. */
  timeoutMs?: number;
  /** Extra attempts after the first one times out (each with a fresh sequence number). */
  retries?: number;
}

/** One request's options: the channel's own, and a hook on its command going out. */
export interface RequestOptions extends ChannelOptions {
  /**
   * Called once, right after the first attempt's frame was handed to the link (not again for a
   * retry); a hook that throws is ignored.
   */
  onSent?: () => void;
}

export interface ChannelStats extends ParserStats {
  requests: number;
  timeouts: number;
  retries: number;
  naks: number;
  unknownFrames: number;
  badPayloads: number;
  /** Intact responses that matched no outstanding request (late answers to a retried request). */
  unmatched: number;
  /**
   * Requests retried at once because the answer to a request sent after them arrived first: the device
   * answers in order, so theirs was lost (corrupted beyond recognition, or the command never arrived).
   */
  overtaken: number;
}

export type ChannelEvent = Extract<Message, { kind: `EVT_${string}` }>;

interface Pending {
  seq: number;
  expect: number;
  resolve(msg: Message): void;
  reject(err: Error): void;
  /** Ends this attempt early (answer arrived corrupted): retry without waiting for the timer. */
  retryNow(): void;
}

/**
 * Host side of the request/response protocol, in the style of a "waitress": every command gets a
 * sequence number, the device echoes it, answers are matched by (seq, expected type) and unmatched
 * or late answers are counted and dropped. Timeouts retry with a new sequence number, so a late
 * answer to an earlier attempt can never be mistaken for the current one.
 */
export class WireChannel {
  private readonly parser = new FrameParser();
  /**
   * Outstanding attempts in send order: a Map iterates in insertion order, and every attempt (a retry
   * too) is inserted under a fresh seq, so the device answers in the order of this Map.
   */
  private readonly pending = new Map<number, Pending>();
  private nextSeq = 1;
  /** When the device last answered (or sent a frame that failed its CRC): the line is alive. */
  private lastAnswerAt = Number.NEGATIVE_INFINITY;
  private closedWith: WireError | undefined;
  private readonly counters = {
    requests: 0,
    timeouts: 0,
    retries: 0,
    naks: 0,
    unknownFrames: 0,
    badPayloads: 0,
    unmatched: 0,
    overtaken: 0,
  };
  private readonly defaults: Required<ChannelOptions>;

  constructor(
    private readonly send: (bytes: Uint8Array) => void | Promise<void>,
    options: ChannelOptions & {
      onEvent?: (event: ChannelEvent) => void;
      onUnknownFrame?: (frame: Frame) => void;
    } = {},
  ) {
    this.defaults = { timeoutMs: options.timeoutMs ?? 500, retries: options.retries ?? 2 };
    this.onEvent = options.onEvent;
    this.onUnknownFrame = options.onUnknownFrame;
  }

  private readonly onEvent: ((event: ChannelEvent) => void) | undefined;
  private readonly onUnknownFrame: ((frame: Frame) => void) | undefined;

  get stats(): ChannelStats {
    return { ...this.parser.stats, ...this.counters };
  }

  /** Feed bytes received from the link. Never throws. */
  receive(bytes: Uint8Array): void {
    const corrupted = this.parser.stats.badCrc;
    for (const frame of this.parser.push(bytes)) this.dispatch(frame);
    // A frame failed its CRC: the device answers in order, so it was almost surely the answer to the
    // oldest request still waiting, lost on a noisy line. Retry that one now instead of sitting out the
    // timeout (the seq of a corrupted frame cannot be trusted, the order can). A stray retry (the
    // corrupted frame was an event) is harmless: the new attempt has a fresh seq and the late answer to
    // the old one is dropped as unmatched.
    if (this.parser.stats.badCrc > corrupted) {
      this.lastAnswerAt = performance.now();
      const oldest = this.pending.values().next();
      if (!oldest.done) oldest.value.retryNow();
    }
  }

  /** Send a command and wait for its response kind (a NAK rejects with code NAK). */
  async request<K extends MessageKind>(
    msg: Message,
    expect: K,
    options: RequestOptions = {},
  ): Promise<MessageOf<K>> {
    const timeoutMs = options.timeoutMs ?? this.defaults.timeoutMs;
    const attempts = 1 + (options.retries ?? this.defaults.retries);
    this.counters.requests += 1;
    let lastReason = 'no answer';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (this.closedWith) throw this.closedWith;
      if (attempt > 1) this.counters.retries += 1;
      const outcome = await this.attempt(
        msg,
        FRAME_TYPE[expect],
        timeoutMs,
        attempt === 1 ? options.onSent : undefined,
      );
      if (outcome.ok) return outcome.msg as MessageOf<K>;
      lastReason = outcome.reason;
    }
    throw new WireError(
      'TIMEOUT',
      `device did not answer ${msg.kind} after ${attempts} attempt(s) of ${timeoutMs} ms (${lastReason})`,
    );
  }

  /** Fail everything outstanding and refuse new requests (the link went away). */
  close(error = new WireError('DISCONNECTED', 'link closed')): void {
    this.closedWith = error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  get isClosed(): boolean {
    return this.closedWith !== undefined;
  }

  private allocSeq(): number {
    // 0 is left to the device for unsolicited events; skip seqs still in flight.
    for (let i = 0; i < 255; i++) {
      const seq = this.nextSeq;
      this.nextSeq = this.nextSeq === 255 ? 1 : this.nextSeq + 1;
      if (!this.pending.has(seq)) return seq;
    }
    throw new Error('more than 254 requests in flight');
  }

  private attempt(
    msg: Message,
    expect: number,
    timeoutMs: number,
    onSent?: () => void,
  ): Promise<{ ok: true; msg: Message } | { ok: false; reason: string }> {
    return new Promise((resolve, reject) => {
      const seq = this.allocSeq();
      const finish = () => {
        clearTimeout(timer);
        this.pending.delete(seq);
      };
      // With several requests in flight the answers queue up behind each other on a slow line (a serial
      // port at 115 200 baud carries one 1 KiB chunk in ~90 ms). An attempt therefore times out only
      // when it has waited timeoutMs AND the device has not answered anything for timeoutMs: while the
      // queue moves, a request behind it is not lost, and a silent device still fails every request
      // timeoutMs after it was sent.
      const onTimer = () => {
        const quietUntil = this.lastAnswerAt + timeoutMs;
        const now = performance.now();
        if (quietUntil > now && this.pending.has(seq)) {
          timer = setTimeout(onTimer, Math.ceil(quietUntil - now));
          return;
        }
        finish();
        this.counters.timeouts += 1;
        // A truncated frame may be blocking the parser; give up on it and rescan.
        for (const frame of this.parser.skipPending()) this.dispatch(frame);
        resolve({ ok: false, reason: 'timed out' });
      };
      let timer = setTimeout(onTimer, timeoutMs);
      this.pending.set(seq, {
        seq,
        expect,
        resolve: (m) => {
          finish();
          resolve({ ok: true, msg: m });
        },
        reject: (e) => {
          finish();
          reject(e);
        },
        retryNow: () => {
          finish();
          resolve({ ok: false, reason: 'answer arrived corrupted' });
        },
      });
      let bytes: Uint8Array;
      try {
        bytes = encodeFrame(toFrame(msg, seq));
      } catch (err) {
        finish();
        reject(err);
        return;
      }
      Promise.resolve()
        .then(() => {
          const sent = this.send(bytes);
          try {
            onSent?.();
          } catch {
            // the caller's hook failing is not the request's failure
          }
          return sent;
        })
        .catch((err: unknown) => {
          const p = this.pending.get(seq);
          const reason = err instanceof Error ? err.message : String(err);
          p?.reject(new WireError('DISCONNECTED', `write failed: ${reason}`));
        });
    });
  }

  private dispatch(frame: Frame): void {
    let msg: Message;
    try {
      msg = decodeMessage(frame);
    } catch (err) {
      if (err instanceof WireError && err.code === 'UNKNOWN_TYPE') {
        this.counters.unknownFrames += 1;
        this.onUnknownFrame?.(frame);
      } else {
        this.counters.badPayloads += 1;
        this.pending.get(frame.seq)?.retryNow();
      }
      return;
    }
    if (isEventType(frame.type)) {
      try {
        this.onEvent?.(msg as ChannelEvent);
      } catch {
        // A listener's bug must not break the link.
      }
      return;
    }
    const p = this.pending.get(frame.seq);
    if (!p) {
      this.counters.unmatched += 1;
      return;
    }
    const nak = msg.kind === 'NAK' && msg.forType === (p.expect & 0x7f) ? msg : undefined;
    if (!nak && frame.type !== p.expect) {
      this.counters.unmatched += 1;
      return;
    }
    this.lastAnswerAt = performance.now();
    // Answers come in the order the commands were sent: every request sent before this one and still
    // waiting has lost its answer (or its command). Retry those now, within the window of requests in
    // flight, rather than after their timeout.
    for (const q of [...this.pending.values()]) {
      if (q === p) break;
      this.counters.overtaken += 1;
      q.retryNow();
    }
    if (nak) {
      this.counters.naks += 1;
      p.reject(
        new WireError(
          'NAK',
          `device refused the command: ${deviceErrorName(nak.code)} (${nak.message})`,
          nak.code,
        ),
      );
      return;
    }
    p.resolve(msg);
  }
}
