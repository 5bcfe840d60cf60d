import { WireError } from './errors.ts';

/**
 * The wire byte stream carried in 64-byte USB HID reports with report ID 0 (docs/wire-protocol.md §6):
 * host → device `[0x00][n][n bytes][zero padding]` with n ≤ 62, device → host `[n][n bytes][padding]`
 * with n ≤ 63. Frames may span reports; the stream is the one every other link carries. Both ends of the
 * framing live here, so the agent's HID transport and anything playing the device (the tests) share one
 * definition of the format.
 */
export const HID_REPORT_SIZE = 64;
/** Stream bytes one host → device (output) report carries. */
export const HID_OUT_PAYLOAD = HID_REPORT_SIZE - 2;
/** Stream bytes one device → host (input) report carries. */
export const HID_IN_PAYLOAD = HID_REPORT_SIZE - 1;

function split(bytes: Uint8Array, payload: number, header: number): Uint8Array[] {
  const reports: Uint8Array[] = [];
  for (let off = 0; off < bytes.length || reports.length === 0; off += payload) {
    const n = Math.min(payload, bytes.length - off);
    const report = new Uint8Array(HID_REPORT_SIZE);
    report[header - 1] = n;
    report.set(bytes.subarray(off, off + n), header);
    reports.push(report);
  }
  return reports;
}

/** Host side: the output reports that carry `bytes` (one empty report when there are none). */
export function encodeHidOutputReports(bytes: Uint8Array): Uint8Array[] {
  return split(bytes, HID_OUT_PAYLOAD, 2); // byte 0 stays 0: the report ID
}

/** Device side: the stream bytes one output report carries. Throws on a report that breaks the format. */
export function decodeHidOutputReport(report: ArrayLike<number>): Uint8Array {
  if (report.length !== HID_REPORT_SIZE)
    throw new WireError(
      'BAD_PAYLOAD',
      `HID output report of ${report.length} bytes (want ${HID_REPORT_SIZE})`,
    );
  if (report[0] !== 0) throw new WireError('BAD_PAYLOAD', `HID output report ID ${report[0]} (want 0)`);
  const n = report[1]!;
  if (n > HID_OUT_PAYLOAD)
    throw new WireError('BAD_PAYLOAD', `HID output report says ${n} bytes (at most ${HID_OUT_PAYLOAD})`);
  return Uint8Array.from({ length: n }, (_, i) => report[2 + i]!);
}

/** Device side: the input reports that carry `bytes` (one empty report when there are none). */
export function encodeHidInputReports(bytes: Uint8Array): Uint8Array[] {
  return split(bytes, HID_IN_PAYLOAD, 1);
}

/**
 * Host side: the stream bytes one input report carries. Lenient, as a host must be with real devices: a
 * length byte beyond the report is cut to what the report holds, and an empty report carries nothing.
 */
export function decodeHidInputReport(report: Uint8Array): Uint8Array {
  const n = Math.min(report[0] ?? 0, HID_IN_PAYLOAD, Math.max(0, report.length - 1));
  return report.slice(1, 1 + n);
}
