import type { Readable, Writable } from 'node:stream';
import type { ByteLink } from '@palmid/contracts/wire/link';

/** Adapt a readable/writable pair (socket, child stdio) to a ByteLink. */
export function streamLink(input: Readable, output: Writable, destroy: () => void): ByteLink {
  const closeListeners = new Set<(reason: Error | undefined) => void>();
  let closed = false;
  let lastError: Error | undefined;
  const shut = () => {
    if (closed) return;
    closed = true;
    for (const l of closeListeners) l(lastError);
    closeListeners.clear();
  };
  input.on('error', (e) => {
    lastError = e;
  });
  output.on('error', (e) => {
    lastError = e;
  });
  input.on('close', shut);
  input.on('end', shut);
  return {
    get closed() {
      return closed;
    },
    write(bytes) {
      if (closed) throw new Error('link closed');
      output.write(bytes);
    },
    onData(listener) {
      const l = (chunk: Buffer) => listener(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
      input.on('data', l);
      return () => input.off('data', l);
    },
    onClose(listener) {
      closeListeners.add(listener);
      return () => closeListeners.delete(listener);
    },
    close(reason) {
      if (reason) lastError = reason;
      destroy();
      shut();
    },
  };
}
