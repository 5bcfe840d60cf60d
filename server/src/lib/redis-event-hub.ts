import type { Redis } from 'ioredis';
import { type EventMeta, HUB_TOPICS, type HubEvents, LocalEventHub } from './event-hub.ts';

/**
 * The event hub shared by several server instances over Redis pub/sub. A publish is delivered to this
 * process's listeners at once (as with `LocalEventHub`) and sent to Redis as JSON `{o: instanceId, p: payload}`;
 * messages coming back from Redis with this instance's id are dropped, so every listener sees every event
 * exactly once, with `meta.origin` naming the instance that published it.
 *
 * Pub/sub is fire-and-forget: an instance that is disconnected from Redis misses events. After the
 * subscriber reconnects, `onResync` listeners get the time the link was lost (the gallery catches up from the
 * database); vendor sockets and kiosks recover through their own re-sync (`subscribe`, backlog on `hello`).
 */
export interface RedisEventHubOptions {
  /** Channel prefix; instances that should talk to each other must share it. */
  prefix?: string;
  onError?: (err: unknown, topic: string) => void;
}

const RESUBSCRIBE_GRACE_MS = 200;

interface Envelope {
  o: string;
  p: unknown;
}

export class RedisEventHub extends LocalEventHub {
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #prefix: string;
  readonly #report: (err: unknown, topic: string) => void;
  #closed = false;

  private constructor(pub: Redis, sub: Redis, options: RedisEventHubOptions) {
    super(options.onError ? { onError: options.onError } : {});
    this.#pub = pub;
    this.#sub = sub;
    this.#prefix = options.prefix ?? 'palmid:events:';
    this.#report =
      options.onError ??
      ((err, topic) => process.emitWarning(`redis event hub (${topic}): ${(err as Error)?.message}`));
    sub.on('message', (channel: string, message: string) => this.#receive(channel, message));
    // ioredis reconnects and resubscribes by itself; what was published meanwhile is gone, so listeners
    // are told to catch up (a little after 'ready', once the resubscription has surely gone through).
    let lostAt: number | undefined;
    sub.on('close', () => {
      lostAt ??= Date.now();
    });
    // Connection errors repeat on every retry while Redis is away: report those of the first second only.
    sub.on('error', (err: Error) => {
      if (lostAt === undefined || Date.now() - lostAt < 1000) this.#report(err, 'subscriber');
    });
    sub.on('ready', () => {
      if (lostAt === undefined || this.#closed) return;
      const since = lostAt;
      lostAt = undefined;
      setTimeout(() => {
        if (!this.#closed) this.resynced(since);
      }, RESUBSCRIBE_GRACE_MS).unref();
    });
  }

  /**
   * `client` is used for publishing (it may be shared with other users such as the rate limiter); a
   * dedicated subscriber connection is duplicated from it and owned by the hub. Resolves once subscribed.
   */
  static async connect(client: Redis, options: RedisEventHubOptions = {}): Promise<RedisEventHub> {
    const sub = client.duplicate();
    const hub = new RedisEventHub(client, sub, options);
    await sub.subscribe(...HUB_TOPICS.map((t) => hub.#prefix + t));
    return hub;
  }

  override publish<K extends keyof HubEvents>(topic: K, payload: HubEvents[K]): void {
    this.deliver(topic, payload, { origin: this.instanceId });
    if (this.#closed) return;
    const envelope: Envelope = { o: this.instanceId, p: payload };
    this.#pub.publish(this.#prefix + topic, JSON.stringify(envelope)).catch((err: unknown) => {
      this.#report(err, topic);
    });
  }

  #receive(channel: string, message: string): void {
    if (!channel.startsWith(this.#prefix)) return;
    const topic = channel.slice(this.#prefix.length) as keyof HubEvents;
    if (!(HUB_TOPICS as readonly string[]).includes(topic)) return;
    let envelope: Envelope;
    try {
      envelope = JSON.parse(message) as Envelope;
    } catch (err) {
      this.#report(err, topic);
      return;
    }
    if (typeof envelope?.o !== 'string' || envelope.o === this.instanceId) return;
    const meta: EventMeta = { origin: envelope.o };
    this.deliver(topic, envelope.p as HubEvents[typeof topic], meta);
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await super.close();
    try {
      await this.#sub.quit();
    } catch {
      this.#sub.disconnect();
    }
  }
}
