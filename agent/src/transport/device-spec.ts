/** Where the scanner is: the `device` config key / `--device` flag. */
export type DeviceSpec =
  | { kind: 'serial'; path: string }
  | { kind: 'tcp'; host: string; port: number }
  | { kind: 'hid'; vendorId: number; productId: number }
  | { kind: 'hid'; path: string }
  | { kind: 'sim' };

export const DEVICE_SPEC_HELP =
  'serial:/dev/ttyUSB0 | tcp:HOST:PORT | hid:VID:PID (hex) | hid:/dev/hidrawN | sim (in-process simulator)';

/** Parse, or throw an Error whose message says what a valid value looks like. */
export function parseDeviceSpec(text: string): DeviceSpec {
  const value = text.trim();
  if (value === 'sim') return { kind: 'sim' };
  const colon = value.indexOf(':');
  const scheme = colon < 0 ? '' : value.slice(0, colon);
  const rest = colon < 0 ? value : value.slice(colon + 1);
  if (scheme === 'serial' && rest.length > 0) return { kind: 'serial', path: rest };
  if (scheme === 'tcp') {
    const at = rest.lastIndexOf(':');
    const host = rest.slice(0, at);
    const port = Number(rest.slice(at + 1));
    if (at > 0 && Number.isInteger(port) && port > 0 && port < 65536) return { kind: 'tcp', host, port };
  }
  if (scheme === 'hid') {
    const ids = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(rest);
    if (ids)
      return { kind: 'hid', vendorId: Number.parseInt(ids[1]!, 16), productId: Number.parseInt(ids[2]!, 16) };
    if (rest.startsWith('/')) return { kind: 'hid', path: rest };
  }
  // A bare path is what technicians type most often.
  if (colon < 0 && value.startsWith('/')) return { kind: 'serial', path: value };
  throw new Error(`"${text}" is not a device (expected ${DEVICE_SPEC_HELP})`);
}

export function formatDeviceSpec(spec: DeviceSpec): string {
  switch (spec.kind) {
    case 'sim':
      return 'sim';
    case 'serial':
      return `serial:${spec.path}`;
    case 'tcp':
      return `tcp:${spec.host}:${spec.port}`;
    case 'hid':
      return 'path' in spec
        ? `hid:${spec.path}`
        : `hid:${spec.vendorId.toString(16).padStart(4, '0')}:${spec.productId.toString(16).padStart(4, '0')}`;
  }
}
