import type { VendorPublic } from '@palmid/contracts/api/vendors';
import { ApiError, call, type Reply } from '../lib/http.ts';

/**
 * The signed-in user's token lives in this module only: not in storage, cookies or the URL. Closing or
 * reloading the tab signs out.
 */
let token: string | null = null;
const vendorNames = new Map<string, VendorPublic>();

export function signIn(t: string): void {
  token = t;
}

export function signOut(): void {
  token = null;
  vendorNames.clear();
}

export function signedIn(): boolean {
  return token !== null;
}

export function authHeader(): Record<string, string> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

let onExpired: () => void = () => undefined;

/** Called when the API stops accepting the token mid-session (expired, or erased elsewhere). */
export function onSessionExpired(fn: () => void): void {
  onExpired = fn;
}

export async function userApi<T>(
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<Reply<T>> {
  try {
    return await call<T>(path, authHeader(), init);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && token !== null) onExpired();
    throw err;
  }
}

export function rememberVendors(list: VendorPublic[]): void {
  for (const v of list) vendorNames.set(v.vendor_id, v);
}

export function vendors(): VendorPublic[] {
  return [...vendorNames.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** A vendor's display name, or a neutral label for one the directory does not know (e.g. deleted). */
export function vendorName(id: string | null | undefined): string {
  if (!id) return 'palmid';
  return vendorNames.get(id)?.name ?? `A shop (${id.slice(0, 8)})`;
}
