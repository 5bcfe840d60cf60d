import { connect, type Socket } from 'node:net';
import { BaseTransport, describeOpenError, TransportError } from './transport.ts';

/** Raw TCP byte stream (the simulator's `--tcp`, or a ser2net bridge in front of a real scanner). */
export class TcpTransport extends BaseTransport {
  readonly kind = 'tcp';
  readonly description: string;
  private socket: Socket | undefined;
  private closingByUs = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly connectTimeoutMs = 3000,
  ) {
    super();
    this.description = `tcp:${host}:${port}`;
  }

  get isOpen(): boolean {
    return this.socket !== undefined && !this.socket.destroyed;
  }

  open(): Promise<void> {
    if (this.isOpen) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const socket = connect({ host: this.host, port: this.port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new TransportError(
            'UNAVAILABLE',
            `${this.description}: no connection after ${this.connectTimeoutMs} ms`,
          ),
        );
      }, this.connectTimeoutMs);
      const onError = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(describeOpenError(this.description, err));
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        this.socket = socket;
        this.closingByUs = false;
        let lastError: Error | undefined;
        socket.on('data', (b: Buffer) => this.emitData(new Uint8Array(b.buffer, b.byteOffset, b.length)));
        socket.on('error', (err) => {
          lastError = err;
        });
        socket.on('close', () => {
          if (this.socket === socket) this.socket = undefined;
          this.emitClose(
            this.closingByUs ? undefined : (lastError ?? new Error('connection closed by device')),
          );
        });
        resolve();
      });
    });
  }

  write(bytes: Uint8Array): Promise<void> {
    const socket = this.socket;
    if (!socket || socket.destroyed)
      return Promise.reject(new TransportError('CLOSED', `${this.description}: not open`));
    return new Promise((resolve, reject) => {
      socket.write(bytes, (err) =>
        err ? reject(new TransportError('IO', `${this.description}: ${err.message}`)) : resolve(),
      );
    });
  }

  close(): Promise<void> {
    const socket = this.socket;
    if (!socket) return Promise.resolve();
    this.closingByUs = true;
    return new Promise((resolve) => {
      socket.once('close', () => resolve());
      socket.destroy();
    });
  }
}
