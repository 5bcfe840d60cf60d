import { call, type RateBudget, type Reply, rateBudgetOf } from '../lib/http.ts';

/**
 * The API key lives in this module's closure only: never in localStorage, sessionStorage, cookies or a
 * URL. It is sent in the X-API-Key header and, for the socket, in the first frame.
 */
let apiKey: string | null = null;
const budgets = new Map<string, RateBudget>();
const listeners = new Set<() => void>();

export function useKey(key: string | null): void {
  apiKey = key;
  if (!key) budgets.clear();
}

export function currentKey(): string | null {
  return apiKey;
}

function bucketOf(path: string): string {
  if (path.startsWith('/api/v1/ledger')) return 'Ledger';
  if (path.startsWith('/api/v1/auth')) return 'Authentication contexts';
  if (path.startsWith('/api/v1/status')) return 'Status';
  return path;
}

export function rateBudgets(): [string, RateBudget][] {
  return [...budgets.entries()].sort(([a], [b]) => a.localeCompare(b));
}

export function onBudget(fn: () => void): void {
  listeners.add(fn);
}

let onRefused: () => void = () => undefined;

/** Called when the API stops accepting the key mid-session (revoked or rotated elsewhere). */
export function onKeyRefused(fn: () => void): void {
  onRefused = fn;
}

export async function vendorApi<T>(
  path: string,
  init: { method?: string; body?: unknown; raw?: boolean } = {},
): Promise<Reply<T>> {
  try {
    const reply = await call<T>(path, apiKey ? { 'X-API-Key': apiKey } : {}, init);
    record(path, reply.response);
    return reply;
  } catch (err) {
    const response = (err as { response?: Response }).response;
    if (response) record(path, response);
    if (response?.status === 401 && apiKey !== null) onRefused();
    throw err;
  }
}

function record(path: string, response: Response): void {
  const budget = rateBudgetOf(response);
  if (!budget) return;
  budgets.set(bucketOf(path), budget);
  for (const fn of listeners) fn();
}
