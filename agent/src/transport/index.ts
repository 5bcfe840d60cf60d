import { type DeviceSpec, parseDeviceSpec } from './device-spec.ts';
import { HidTransport } from './hid.ts';
import { MemoryTransport } from './memory.ts';
import { RecordingTransport } from './recording.ts';
import { SerialTransport } from './serial.ts';
import { TcpTransport } from './tcp.ts';
import type { Transport } from './transport.ts';

export * from './device-spec.ts';
export * from './hid.ts';
export * from './memory.ts';
export * from './recording.ts';
export * from './serial.ts';
export * from './tcp.ts';
export * from './transport.ts';

export interface TransportOptions {
  baudRate?: number;
  /** Record all traffic as JSON lines to this file. */
  recordFile?: string;
}

/** Build the transport for a device spec. `sim` starts an in-process simulator owned by the transport. */
export async function createTransport(
  device: string | DeviceSpec,
  options: TransportOptions = {},
): Promise<Transport> {
  const spec = typeof device === 'string' ? parseDeviceSpec(device) : device;
  let transport: Transport;
  switch (spec.kind) {
    case 'serial':
      transport = new SerialTransport(spec.path, options.baudRate ?? 115_200);
      break;
    case 'tcp':
      transport = new TcpTransport(spec.host, spec.port);
      break;
    case 'hid':
      transport = new HidTransport(spec);
      break;
    case 'sim': {
      const { FirmwareSimulator } = await import('@palmid/firmware-sim');
      const sim = new FirmwareSimulator({ autoPresent: { identity: 'demo', hand: 'right' } });
      await sim.warmUp();
      transport = new MemoryTransport(
        () => sim.connectMemory(),
        'sim (in-process simulator)',
        () => sim.stop(),
      );
      break;
    }
  }
  return options.recordFile ? new RecordingTransport(transport, options.recordFile) : transport;
}
