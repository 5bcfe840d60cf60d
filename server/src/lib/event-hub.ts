import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';

/**
 * In-process publish/subscribe between modules (auth contexts → vendor sockets, contexts → kiosks).
 * `RedisEventHub` (redis-event-hub.ts) has the same interface and lets several server instances share events.
 */
export interface HubEvents {
  'auth.updated': {
    vendorId: string;
    authId: string;
    status: string;
    auth_result?: unknown;
    /** a step-up: the context waits for more evidence (shared/contracts/src/ws/vendor.ts) */
    reason?: 'step_up_required';
  };
  'scan.request': { vendorId: string; pvsId: string | null; authId: string };
  'scan.cancel': { vendorId: string; pvsId: string | null; authId: string };
  /** `add` and `update` (a palm removed): reload the user's palms from the store; `remove`: the user was erased. */
  'gallery.changed': { userId: string; action: 'add' | 'update' | 'remove' };
  /** A kiosk (`pvs`, by pvs id) or a vendor's keys (`vendor`, by vendor id) were revoked (admin CLI). */
  'credential.revoked': { kind: 'pvs' | 'vendor'; id: string };
  /** A webhook delivery was queued outside a context change (a replay): senders look at the outbox now. */
  'webhook.queued': { vendorId: string };
}

export const HUB_TOPICS = [
  'auth.updated',
  'scan.request',
  'scan.cancel',
  'gallery.changed',
  'credential.revoked',
  'webhook.queued',
] as const satisfies readonly (keyof HubEvents)[];

/** Where an event came from: the `instanceId` of the publishing hub (this one, or another server instance). */
export interface EventMeta {
  origin: string;
}

export type HubListener<K extends keyof HubEvents> = (payload: HubEvents[K], meta: EventMeta) => void;

export interface EventHub {
  /** Unique per process; events carry it so a listener can tell its own instance's events from others'. */
  readonly instanceId: string;
  publish<K extends keyof HubEvents>(topic: K, payload: HubEvents[K]): void;
  subscribe<K extends keyof HubEvents>(topic: K, listener: HubListener<K>): () => void;
  /**
   * Called after the hub lost its link to the other instances and got it back, with the time (Unix ms) the
   * link was lost: events of other instances published in between were missed, and state kept in step by
   * events (the gallery) must catch up from the database. A local hub never loses anything.
   */
  onResync(listener: (lostAt: number) => void): () => void;
  close(): Promise<void>;
}

export class LocalEventHub implements EventHub {
  readonly instanceId: string = randomUUID();
  readonly #emitter = new EventEmitter({ captureRejections: false });
  readonly #onError: (err: unknown, topic: string) => void;

  constructor(options: { onError?: (err: unknown, topic: string) => void } = {}) {
    this.#emitter.setMaxListeners(0);
    this.#onError =
      options.onError ??
      ((err, topic) => process.emitWarning(`event listener for ${topic} failed: ${(err as Error)?.message}`));
  }

  publish<K extends keyof HubEvents>(topic: K, payload: HubEvents[K]): void {
    this.deliver(topic, payload, { origin: this.instanceId });
  }

  /** Hands an event to this process's listeners; a throwing listener does not stop the others. */
  protected deliver<K extends keyof HubEvents>(topic: K, payload: HubEvents[K], meta: EventMeta): void {
    for (const listener of this.#emitter.listeners(topic) as HubListener<K>[]) {
      try {
        listener(payload, meta);
      } catch (err) {
        this.#onError(err, topic);
      }
    }
  }

  subscribe<K extends keyof HubEvents>(topic: K, listener: HubListener<K>): () => void {
    this.#emitter.on(topic, listener);
    return () => this.#emitter.off(topic, listener);
  }

  onResync(listener: (lostAt: number) => void): () => void {
    this.#emitter.on(RESYNC, listener);
    return () => this.#emitter.off(RESYNC, listener);
  }

  protected resynced(lostAt: number): void {
    for (const listener of this.#emitter.listeners(RESYNC) as ((t: number) => void)[]) {
      try {
        listener(lostAt);
      } catch (err) {
        this.#onError(err, RESYNC);
      }
    }
  }

  async close(): Promise<void> {
    this.#emitter.removeAllListeners();
  }
}

const RESYNC = 'hub.resync';
