import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook may be sent (docs/vendor-api.md, "Webhooks"): `https://` on a public address. Private,
 * loopback, link-local, shared, multicast and documentation ranges are refused, when registered (an address
 * literal) and again at every send after DNS resolution (the connection then goes to the address that was
 * checked, so a name cannot be rebound in between). Development allows `http://` and `https://` to a
 * loopback address, for local testing.
 */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) or compatible IPv6 address. */
function embeddedV4(address: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const hi = Number.parseInt(hex[1]!, 16);
  const lo = Number.parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function family(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 4 ? 'ipv4' : 'ipv6';
}

export function isLoopback(address: string): boolean {
  const v4 = isIP(address) === 6 ? embeddedV4(address) : undefined;
  if (v4) return LOOPBACK.check(v4, 'ipv4');
  return LOOPBACK.check(address, family(address));
}

/** A routable public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false;
  const v4 = isIP(address) === 6 ? embeddedV4(address) : undefined;
  if (v4) return isPublicAddress(v4);
  return !NOT_PUBLIC.check(address, family(address));
}

/** Host of a URL without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string; message: string };

/** Checks a webhook URL as registered: scheme, shape, and an address literal's range. */
export function checkWebhookUrl(text: string, development: boolean): UrlVerdict {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'invalid_url', message: 'url is not an absolute URL' };
  }
  if (url.username || url.password)
    return { ok: false, reason: 'credentials_in_url', message: 'url must not carry a user name or password' };
  if (url.hash) return { ok: false, reason: 'invalid_url', message: 'url must not carry a #fragment' };
  const host = bareHost(url);
  const loopbackHost = host === 'localhost' || (isIP(host) !== 0 && isLoopback(host));
  if (development && loopbackHost && (url.protocol === 'http:' || url.protocol === 'https:'))
    return { ok: true, url };
  if (url.protocol !== 'https:')
    return {
      ok: false,
      reason: 'https_required',
      message: development
        ? 'url must be https:// (http:// only to a loopback address in development)'
        : 'url must be https://',
    };
  if (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) !== 0 && !isPublicAddress(host)))
    return {
      ok: false,
      reason: 'private_address',
      message: 'url must be on a public address (private, loopback and link-local addresses are refused)',
    };
  return { ok: true, url };
}

export class AddressRefused extends Error {}

/**
 * Resolves the URL's host at send time and returns the one address to connect to; throws AddressRefused
 * when any resolved address is not public (loopback allowed in development).
 */
export async function resolveTarget(
  url: URL,
  development: boolean,
): Promise<{ address: string; family: 4 | 6 }> {
  const host = bareHost(url);
  const addresses =
    isIP(host) !== 0
      ? [{ address: host, family: isIP(host) as 4 | 6 }]
      : (await lookup(host, { all: true, verbatim: true })).map((a) => ({
          address: a.address,
          family: a.family as 4 | 6,
        }));
  if (addresses.length === 0) throw new AddressRefused(`${host} has no address`);
  for (const a of addresses) {
    if (isPublicAddress(a.address)) continue;
    if (development && isLoopback(a.address)) continue;
    throw new AddressRefused(`${host} resolves to a non-public address`);
  }
  return addresses[0]!;
}
