import { CLOSE_POLICY } from '@palmid/contracts/ws/frames';
import type { WebSocket } from 'ws';

/**
 * The authenticated WebSockets open on this instance, by the credential that opened them: a kiosk's
 * device token (`pvs`, by pvs id) or a vendor API key (`api_key`, by key id). It bounds how many sockets
 * one credential may hold (docs/websocket.md) and closes them all when the credential is revoked
 * (docs/security.md, "Revocation is immediate").
 */
export type CredentialKind = 'pvs' | 'api_key';

/** At most this many open sockets per credential on one instance. */
export const SOCKETS_PER_CREDENTIAL: Record<CredentialKind, number> = { api_key: 20, pvs: 2 };

/** Close reasons (code 1008): the credential was revoked; the credential already holds its sockets. */
export const CLOSE_REVOKED = 'revoked';
export const CLOSE_TOO_MANY_SOCKETS = 'too_many_sockets';

export class LiveSockets {
  readonly #open = new Map<string, Set<WebSocket>>();

  constructor(private readonly limits: Record<CredentialKind, number> = SOCKETS_PER_CREDENTIAL) {}

  /**
   * Counts `socket` against its credential until it closes. Over the limit the socket is closed with
   * 1008 `too_many_sockets` and `false` is returned.
   */
  admit(kind: CredentialKind, id: string, socket: WebSocket): boolean {
    const key = `${kind}:${id}`;
    let set = this.#open.get(key);
    if (!set) {
      set = new Set();
      this.#open.set(key, set);
    }
    if (set.size >= this.limits[kind]) {
      if (set.size === 0) this.#open.delete(key);
      socket.close(CLOSE_POLICY, CLOSE_TOO_MANY_SOCKETS);
      return false;
    }
    set.add(socket);
    socket.once('close', () => {
      set.delete(socket);
      if (set.size === 0 && this.#open.get(key) === set) this.#open.delete(key);
    });
    return true;
  }

  /** Credential ids of `kind` that have at least one open socket here. */
  ids(kind: CredentialKind): string[] {
    const prefix = `${kind}:`;
    return [...this.#open.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  }

  count(kind: CredentialKind, id: string): number {
    return this.#open.get(`${kind}:${id}`)?.size ?? 0;
  }

  /** Closes every socket of the credential (1008 `revoked`); returns how many were open. */
  revoke(kind: CredentialKind, id: string): number {
    const key = `${kind}:${id}`;
    const set = this.#open.get(key);
    if (!set) return 0;
    this.#open.delete(key);
    for (const socket of set) socket.close(CLOSE_POLICY, CLOSE_REVOKED);
    return set.size;
  }

  get size(): number {
    let n = 0;
    for (const set of this.#open.values()) n += set.size;
    return n;
  }
}

/** What the app asks of the revocation watcher (docs/security.md): whether a credential still holds, and its lifecycle. */
export interface RevocationCheck {
  start(): void;
  stop(): void;
  isLive(kind: CredentialKind, id: string): Promise<boolean>;
}
