import { createServer, type Socket } from 'node:net';
import type { FirmwareSimulator } from '../device.ts';
import { streamLink } from './stream-link.ts';

export interface TcpEndpoint {
  host: string;
  port: number;
  /** Device spec for the agent, e.g. `tcp:127.0.0.1:7070`. */
  device: string;
  close(): Promise<void>;
}

/**
 * Serve the device on a TCP port (like a ser2net bridge). While the simulator is unplugged,
 * connections are accepted and closed at once, which the agent sees as "device not answering".
 */
export async function listenTcp(
  sim: FirmwareSimulator,
  port = 7070,
  host = '127.0.0.1',
): Promise<TcpEndpoint> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    if (!sim.isPlugged) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    sim.attach(streamLink(socket, socket, () => socket.destroy()));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const onStop = () => void endpoint.close();
  sim.once('stopped', onStop);
  const endpoint: TcpEndpoint = {
    host,
    port: bound,
    device: `tcp:${host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        sim.off('stopped', onStop);
        for (const s of sockets) s.destroy();
        if (!server.listening) return resolve();
        server.close(() => resolve());
      }),
  };
  return endpoint;
}
