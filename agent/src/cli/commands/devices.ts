import type { Command } from 'commander';
import { listHidDevices } from '../../transport/hid.ts';
import { listSerialPorts, type SerialPortInfo } from '../../transport/serial.ts';
import type { CliContext } from '../context.ts';

/** USB IDs of palmid scanners, and of the USB-serial bridges scanners are commonly built on. */
export const KNOWN_SCANNERS = [{ vendorId: 0x1209, productId: 0xa1d5, name: 'palmid PV-320' }] as const;
const USB_SERIAL_BRIDGES: Record<string, string> = {
  '0403': 'FTDI USB-serial',
  '10c4': 'Silicon Labs CP210x',
  '1a86': 'WCH CH340',
  '067b': 'Prolific PL2303',
};

export interface FoundDevice {
  device: string;
  interface: 'serial' | 'hid';
  description: string;
  usbId?: string;
  serialNumber?: string;
  likelyScanner: boolean;
}

const hex4 = (n: number | string) =>
  (typeof n === 'number' ? n.toString(16) : n).toLowerCase().padStart(4, '0');
const isKnown = (vid: number, pid: number) =>
  KNOWN_SCANNERS.some((k) => k.vendorId === vid && k.productId === pid);

export function describeSerial(port: SerialPortInfo): FoundDevice {
  const vid = port.vendorId ? hex4(port.vendorId) : undefined;
  const pid = port.productId ? hex4(port.productId) : undefined;
  const known = vid && pid ? isKnown(Number.parseInt(vid, 16), Number.parseInt(pid, 16)) : false;
  const bridge = vid ? USB_SERIAL_BRIDGES[vid] : undefined;
  const what = known
    ? 'palmid scanner'
    : (port.manufacturer ?? bridge ?? (/ttyS\d+$/.test(port.path) ? 'on-board UART' : 'serial port'));
  return {
    device: `serial:${port.path}`,
    interface: 'serial',
    description: what,
    ...(vid && pid ? { usbId: `${vid}:${pid}` } : {}),
    ...(port.serialNumber ? { serialNumber: port.serialNumber } : {}),
    likelyScanner: known || Boolean(bridge) || /ttyACM|ttyUSB/.test(port.path),
  };
}

export function registerDevices(program: Command, ctx: CliContext): void {
  program
    .command('devices')
    .description('list serial and USB HID devices that may be scanners')
    .option('--all', 'include serial ports that do not look like scanners (on-board UARTs)')
    .option('--probe', 'ask each candidate for its identity (opens the port briefly)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { all?: boolean; probe?: boolean; json?: boolean }, cmd: Command) => {
      const notes: string[] = [];
      const found: Array<FoundDevice & { probe?: string }> = [];
      try {
        for (const port of await listSerialPorts()) found.push(describeSerial(port));
      } catch (err) {
        notes.push(`serial ports could not be listed: ${err instanceof Error ? err.message : String(err)}`);
      }
      try {
        for (const d of await listHidDevices()) {
          if (!isKnown(d.vendorId, d.productId)) continue;
          found.push({
            device: `hid:${hex4(d.vendorId)}:${hex4(d.productId)}`,
            interface: 'hid',
            description: d.product ?? 'palmid scanner (HID)',
            usbId: `${hex4(d.vendorId)}:${hex4(d.productId)}`,
            ...(d.serialNumber ? { serialNumber: d.serialNumber } : {}),
            likelyScanner: true,
          });
        }
      } catch (err) {
        notes.push(err instanceof Error ? err.message : String(err));
      }
      const shown = opts.all ? found : found.filter((d) => d.likelyScanner);

      if (opts.probe) {
        const base = ctx.config(cmd);
        for (const d of shown) {
          try {
            const driver = await ctx.openScanner(
              { ...base, config: { ...base.config, device: d.device } },
              { timeoutMs: 200 },
            );
            const i = driver.info!;
            d.probe = `${i.model}, firmware ${i.firmware}, S/N ${i.serial}`;
            await driver.close();
          } catch (err) {
            d.probe = `no scanner answered (${err instanceof Error ? err.message : String(err)})`;
          }
        }
      }

      if (opts.json) {
        ctx.io.out(`${JSON.stringify({ devices: shown, notes }, null, 2)}\n`);
        return;
      }
      if (shown.length === 0) {
        ctx.io.out(
          `no scanners found${found.length > shown.length ? ` (${found.length - shown.length} other serial ports; --all shows them)` : ''}\n`,
        );
      } else {
        for (const d of shown) {
          const extra = [d.usbId && `usb ${d.usbId}`, d.serialNumber && `s/n ${d.serialNumber}`]
            .filter(Boolean)
            .join(', ');
          ctx.io.out(`${d.device.padEnd(28)} ${d.description}${extra ? ` (${extra})` : ''}\n`);
          if (d.probe) ctx.io.out(`${''.padEnd(28)} → ${d.probe}\n`);
        }
      }
      for (const n of notes) ctx.io.out(`note: ${n}\n`);
      ctx.io.out(
        'hint: the simulator is not listed; start it with `npm run sim -- --tcp 7070` and use --device tcp:127.0.0.1:7070\n',
      );
    });
}
