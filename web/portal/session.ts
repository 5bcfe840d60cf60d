import type { VendorPublic } from '@palmid/shared/api/vendors.ts';
import { call, type Reply } from '../lib/http.ts';

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

export function userApi<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<Reply<T>> {
  return call<T>(path, authHeader(), init);
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
