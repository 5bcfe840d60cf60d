import { WireError } from './errors.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** Little-endian payload builder. */
export class ByteWriter {
  private readonly chunks: Uint8Array[] = [];

  u8(v: number): this {
    checkInt(v, 0xff);
    return this.raw(Uint8Array.of(v));
  }
  u16(v: number): this {
    checkInt(v, 0xffff);
    return this.raw(Uint8Array.of(v & 0xff, v >>> 8));
  }
  u32(v: number): this {
    checkInt(v, 0xffffffff);
    return this.raw(Uint8Array.of(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24));
  }
  /** Short string: one length byte, then at most 255 bytes of UTF-8. */
  str8(s: string): this {
    const bytes = encoder.encode(s);
    if (bytes.length > 0xff) throw new RangeError(`string too long for str8: ${bytes.length} bytes`);
    this.u8(bytes.length);
    return this.raw(bytes);
  }
  raw(bytes: Uint8Array): this {
    this.chunks.push(bytes);
    return this;
  }
  finish(): Uint8Array {
    const out = new Uint8Array(this.chunks.reduce((n, c) => n + c.length, 0));
    let pos = 0;
    for (const c of this.chunks) {
      out.set(c, pos);
      pos += c.length;
    }
    return out;
  }
}

function checkInt(v: number, max: number): void {
  if (!Number.isInteger(v) || v < 0 || v > max) throw new RangeError(`value ${v} out of range 0…${max}`);
}

/** Little-endian payload reader; every short read is a BAD_PAYLOAD WireError. */
export class ByteReader {
  private pos = 0;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly what: string,
  ) {}

  private need(n: number): void {
    if (this.pos + n > this.bytes.length) {
      throw new WireError('BAD_PAYLOAD', `${this.what}: payload too short (${this.bytes.length} bytes)`);
    }
  }
  u8(): number {
    this.need(1);
    return this.bytes[this.pos++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.bytes[this.pos]! | (this.bytes[this.pos + 1]! << 8);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const b = this.bytes;
    const p = this.pos;
    this.pos += 4;
    return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  }
  str8(): string {
    const n = this.u8();
    this.need(n);
    const slice = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    try {
      return decoder.decode(slice);
    } catch {
      throw new WireError('BAD_PAYLOAD', `${this.what}: string is not valid UTF-8`);
    }
  }
  rest(): Uint8Array {
    const out = this.bytes.slice(this.pos);
    this.pos = this.bytes.length;
    return out;
  }
  end(): void {
    if (this.pos !== this.bytes.length) {
      throw new WireError(
        'BAD_PAYLOAD',
        `${this.what}: ${this.bytes.length - this.pos} unexpected trailing bytes`,
      );
    }
  }
}
