import type { ByteLink } from '@palmid/contracts/wire/link';
import { BaseTransport, TransportError } from './transport.ts';

/**
 * In-process link to a device (normally the firmware simulator): `connect` plugs in a fresh
 * cable and returns the host end, or throws when no device is there.
 */
export class MemoryTransport extends BaseTransport {
  readonly kind = 'memory';
  private link: ByteLink | undefined;
  private closingByUs = false;

  constructor(
    private readonly connect: () => ByteLink,
    readonly description = 'memory link',
    private readonly onDispose?: () => Promise<void> | void,
  ) {
    super();
  }

  get isOpen(): boolean {
    return this.link !== undefined && !this.link.closed;
  }

  async open(): Promise<void> {
    if (this.isOpen) return;
    let link: ByteLink;
    try {
      link = this.connect();
    } catch (err) {
      throw new TransportError(
        'NOT_FOUND',
        `${this.description}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    this.link = link;
    this.closingByUs = false;
    link.onData((bytes) => this.emitData(bytes));
    link.onClose((reason) => {
      if (this.link === link) this.link = undefined;
      this.emitClose(this.closingByUs ? undefined : (reason ?? new Error('link closed by device')));
    });
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (!this.link || this.link.closed) throw new TransportError('CLOSED', `${this.description}: not open`);
    this.link.write(bytes);
  }

  async close(): Promise<void> {
    const link = this.link;
    if (!link) return;
    this.closingByUs = true;
    await new Promise<void>((resolve) => {
      link.onClose(() => resolve());
      link.close();
    });
  }

  async dispose(): Promise<void> {
    await this.close();
    await this.onDispose?.();
  }
}
