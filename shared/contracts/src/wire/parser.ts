import { crc8, crc16 } from './crc.ts';
import { FRAME_OVERHEAD, type Frame, HEADER_SIZE, MAX_PAYLOAD, SOF } from './frame.ts';

export interface ParserStats {
  /** Frames delivered intact. */
  frames: number;
  /** Candidate headers rejected by the header CRC or an impossible length. */
  badHeaders: number;
  /** Frames whose header was sound but whose CRC-16 did not match. */
  badCrc: number;
  /** Bytes thrown away while hunting for a start byte. */
  droppedBytes: number;
}

/**
 * Byte-stream → frames. Never throws on input: garbage before a start byte is skipped,
 * a bad header or bad CRC drops only the start byte and scanning resumes right after it,
 * so a frame hidden inside a truncated one is still found.
 */
export class FrameParser {
  private buf: Uint8Array = new Uint8Array(0);
  readonly stats: ParserStats = { frames: 0, badHeaders: 0, badCrc: 0, droppedBytes: 0 };

  push(chunk: Uint8Array): Frame[] {
    if (chunk.length > 0) {
      const next = new Uint8Array(this.buf.length + chunk.length);
      next.set(this.buf, 0);
      next.set(chunk, this.buf.length);
      this.buf = next;
    }
    return this.drain();
  }

  /** Bytes held while waiting for the rest of a frame. */
  get pending(): number {
    return this.buf.length;
  }

  /**
   * Give up on the frame currently being assembled (e.g. after a request timed out, the rest of a
   * truncated frame will never come): drop its start byte and rescan what is buffered.
   */
  skipPending(): Frame[] {
    if (this.buf.length === 0) return [];
    this.stats.droppedBytes += 1;
    this.buf = this.buf.subarray(1);
    return this.drain();
  }

  reset(): void {
    this.stats.droppedBytes += this.buf.length;
    this.buf = new Uint8Array(0);
  }

  private drain(): Frame[] {
    const frames: Frame[] = [];
    let buf = this.buf;
    for (;;) {
      const start = buf.indexOf(SOF);
      if (start < 0) {
        this.stats.droppedBytes += buf.length;
        buf = buf.subarray(buf.length);
        break;
      }
      if (start > 0) {
        this.stats.droppedBytes += start;
        buf = buf.subarray(start);
      }
      if (buf.length < HEADER_SIZE) break;
      const length = buf[3]! | (buf[4]! << 8);
      if (crc8(buf, 1, 5) !== buf[5] || length > MAX_PAYLOAD) {
        this.stats.badHeaders += 1;
        this.stats.droppedBytes += 1;
        buf = buf.subarray(1);
        continue;
      }
      const total = FRAME_OVERHEAD + length;
      if (buf.length < total) break;
      const expected = buf[HEADER_SIZE + length]! | (buf[HEADER_SIZE + length + 1]! << 8);
      if (crc16(buf, 1, HEADER_SIZE + length) !== expected) {
        this.stats.badCrc += 1;
        this.stats.droppedBytes += 1;
        buf = buf.subarray(1);
        continue;
      }
      frames.push({ type: buf[1]!, seq: buf[2]!, payload: buf.slice(HEADER_SIZE, HEADER_SIZE + length) });
      this.stats.frames += 1;
      buf = buf.subarray(total);
    }
    // Copy so a long-lived remainder does not pin a large earlier buffer.
    this.buf = buf.length === 0 ? new Uint8Array(0) : buf.slice();
    return frames;
  }
}
