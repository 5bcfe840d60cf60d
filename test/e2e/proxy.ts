import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP proxy on loopback that a test can cut (drop every connection, refuse new ones) and restore. */
export class CuttableProxy {
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #open = true;
  port = 0;

  constructor(readonly targetPort: number) {}

  async start(): Promise<void> {
    this.#server = createServer((client) => {
      if (!this.#open) {
        client.destroy();
        return;
      }
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => this.#server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.#server.address() as { port: number }).port;
  }

  /** The network goes down: every connection is reset and new ones are refused. */
  cut(): void {
    this.#open = false;
    for (const s of this.#sockets) s.resetAndDestroy();
  }

  restore(): void {
    this.#open = true;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
  }
}
