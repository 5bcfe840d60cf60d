/**
 * A duplex byte pipe: the physical layer under the frame codec. Serial ports, TCP sockets, ptys
 * and the in-memory pair all reduce to this on the device side; the agent wraps it as a Transport.
 */
export interface ByteLink {
  write(bytes: Uint8Array): void;
  onData(listener: (bytes: Uint8Array) => void): () => void;
  /** Called once when either side closes (a pulled cable closes both ends). */
  onClose(listener: (reason: Error | undefined) => void): () => void;
  close(reason?: Error): void;
  readonly closed: boolean;
}

class MemoryEnd implements ByteLink {
  peer!: MemoryEnd;
  closed = false;
  private readonly dataListeners = new Set<(bytes: Uint8Array) => void>();
  private readonly closeListeners = new Set<(reason: Error | undefined) => void>();

  write(bytes: Uint8Array): void {
    if (this.closed) throw new Error('link closed');
    const copy = bytes.slice();
    const peer = this.peer;
    // Deliver on a later turn, in order, like real I/O: no re-entrancy between the two sides.
    setImmediate(() => {
      if (peer.closed) return;
      for (const l of peer.dataListeners) l(copy);
    });
  }
  onData(listener: (bytes: Uint8Array) => void): () => void {
    this.dataListeners.add(listener);
    return () => this.dataListeners.delete(listener);
  }
  onClose(listener: (reason: Error | undefined) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }
  close(reason?: Error): void {
    this.shut(reason);
    this.peer.shut(reason);
  }
  private shut(reason: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    setImmediate(() => {
      for (const l of this.closeListeners) l(reason);
      this.closeListeners.clear();
      this.dataListeners.clear();
    });
  }
}

/** Two connected ends: what one writes, the other receives. */
export function createLinkPair(): [ByteLink, ByteLink] {
  const a = new MemoryEnd();
  const b = new MemoryEnd();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
