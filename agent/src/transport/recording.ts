import { appendFileSync } from 'node:fs';
import type { Transport } from './transport.ts';

export interface RecordEntry {
  /** Milliseconds since the recording started. */
  t: number;
  dir: 'tx' | 'rx' | 'open' | 'close';
  /** Bytes as hex (tx/rx), or the close reason. */
  data?: string;
}

/**
 * Wraps any transport and records traffic both ways, in memory and optionally as JSON lines in a
 * file — for field diagnosis ("record a session, attach the file to the ticket") and for tests.
 */
export class RecordingTransport implements Transport {
  readonly kind = 'recording';
  readonly entries: RecordEntry[] = [];
  private readonly started = Date.now();

  constructor(
    private readonly inner: Transport,
    private readonly file?: string,
  ) {
    inner.onData((bytes) => this.record('rx', Buffer.from(bytes).toString('hex')));
    inner.onClose((err) => this.record('close', err?.message));
  }

  get description(): string {
    return `${this.inner.description} (recording${this.file ? ` to ${this.file}` : ''})`;
  }
  get isOpen(): boolean {
    return this.inner.isOpen;
  }

  async open(): Promise<void> {
    await this.inner.open();
    this.record('open', this.inner.description);
  }
  async write(bytes: Uint8Array): Promise<void> {
    this.record('tx', Buffer.from(bytes).toString('hex'));
    await this.inner.write(bytes);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  async dispose(): Promise<void> {
    await this.inner.dispose?.();
  }
  onData(listener: (bytes: Uint8Array) => void): () => void {
    return this.inner.onData(listener);
  }
  onClose(listener: (error: Error | undefined) => void): () => void {
    return this.inner.onClose(listener);
  }

  /** All bytes seen in one direction, concatenated. */
  bytes(dir: 'tx' | 'rx'): Uint8Array {
    return Buffer.concat(
      this.entries.filter((e) => e.dir === dir).map((e) => Buffer.from(e.data ?? '', 'hex')),
    );
  }

  private record(dir: RecordEntry['dir'], data: string | undefined): void {
    const entry: RecordEntry = { t: Date.now() - this.started, dir, ...(data !== undefined ? { data } : {}) };
    this.entries.push(entry);
    if (this.file) {
      try {
        appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
      } catch {
        // Recording is diagnostic; never let it break the link.
      }
    }
  }
}
