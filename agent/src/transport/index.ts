import { type DeviceSpec, parseDeviceSpec } from './device-spec.ts';
import { HidTransport } from './hid.ts';
import { MemoryTransport } from './memory.ts';
import { RecordingTransport } from './recording.ts';
import { SerialTransport } from './serial.ts';
import { TcpTransport } from './tcp.ts';
import { type Transport, TransportError } from './transport.ts';

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
      const { FirmwareSimulator } = await loadSimulator();
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

/**
 * The simulator is a development package (a devDependency): a production install of the agent has no
 * `sim` transport, and says so instead of failing with a module error.
 */
async function loadSimulator(): Promise<typeof import('@palmid/firmware-sim')> {
  try {
    return await import('@palmid/firmware-sim');
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new TransportError(
        'UNAVAILABLE',
        'the sim transport needs the firmware simulator (@palmid/firmware-sim), a development package that this install leaves out: install with development dependencies, or use a serial, hid or tcp scanner',
      );
    }
    throw err;
  }
}
