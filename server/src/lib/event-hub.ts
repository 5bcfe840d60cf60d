import { EventEmitter } from 'node:events';

/**
 * In-process publish/subscribe between modules (auth contexts → vendor sockets, contexts → kiosks).
 * A Redis-backed hub with the same interface lets several server instances share events.
 */
export interface HubEvents {
  'auth.updated': { vendorId: string; authId: string; status: string; auth_result?: unknown };
  'scan.request': {
    vendorId: string;
    pvsId: string | null;
    authId: string;
    context: Record<string, unknown>;
  };
  'scan.cancel': { vendorId: string; pvsId: string | null; authId: string };
  'gallery.changed': { userId: string; action: 'add' | 'remove' };
}

export interface EventHub {
  publish<K extends keyof HubEvents>(topic: K, payload: HubEvents[K]): void;
  subscribe<K extends keyof HubEvents>(topic: K, listener: (payload: HubEvents[K]) => void): () => void;
  close(): Promise<void>;
}

export class LocalEventHub implements EventHub {
  readonly #emitter = new EventEmitter({ captureRejections: false });

  constructor() {
    this.#emitter.setMaxListeners(0);
  }

  publish<K extends keyof HubEvents>(topic: K, payload: HubEvents[K]): void {
    this.#emitter.emit(topic, payload);
  }

  subscribe<K extends keyof HubEvents>(topic: K, listener: (payload: HubEvents[K]) => void): () => void {
    this.#emitter.on(topic, listener);
    return () => this.#emitter.off(topic, listener);
  }

  async close(): Promise<void> {
    this.#emitter.removeAllListeners();
  }
}
