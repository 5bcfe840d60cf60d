import { describe, expect, it } from 'vitest';
import {
  decodeHidInputReport,
  decodeHidOutputReport,
  encodeHidInputReports,
  encodeHidOutputReports,
  HID_REPORT_SIZE,
} from './hid-reports.ts';

const stream = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + 1) & 0xff);
const concat = (parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

describe('HID report framing', () => {
  it('host → device: [0x00][n][n bytes][zero padding], n ≤ 62', () => {
    const reports = encodeHidOutputReports(Uint8Array.of(0xa5, 1, 2));
    expect(reports).toHaveLength(1);
    expect([...reports[0]!]).toEqual([0, 3, 0xa5, 1, 2, ...new Array(HID_REPORT_SIZE - 5).fill(0)]);
    expect(encodeHidOutputReports(stream(130)).map((r) => r[1])).toEqual([62, 62, 6]);
    expect(encodeHidOutputReports(new Uint8Array(0)).map((r) => [...r])).toEqual([
      new Array(HID_REPORT_SIZE).fill(0),
    ]);
  });

  it('device → host: [n][n bytes][padding], n ≤ 63', () => {
    const reports = encodeHidInputReports(stream(130));
    expect(reports.map((r) => r.length)).toEqual([64, 64, 64]);
    expect(reports.map((r) => r[0])).toEqual([63, 63, 4]);
    expect([...reports[2]!.subarray(1, 5)]).toEqual([...stream(130).subarray(126)]);
  });

  it('each direction decodes what the other end encodes, across report boundaries', () => {
    for (const n of [0, 1, 62, 63, 64, 500]) {
      const bytes = stream(n);
      expect(concat(encodeHidOutputReports(bytes).map(decodeHidOutputReport))).toEqual(bytes);
      expect(concat(encodeHidInputReports(bytes).map(decodeHidInputReport))).toEqual(bytes);
    }
  });

  it('the device end refuses an output report that breaks the format', () => {
    const good = [...encodeHidOutputReports(Uint8Array.of(1))[0]!];
    expect(() => decodeHidOutputReport(good.slice(0, 63))).toThrow(/63 bytes \(want 64\)/);
    expect(() => decodeHidOutputReport([1, ...good.slice(1)])).toThrow(/report ID 1/);
    expect(() => decodeHidOutputReport([0, 63, ...good.slice(2)])).toThrow(/63 bytes \(at most 62\)/);
  });

  it('the host end reads a short or overlong length byte as what the report holds', () => {
    expect([...decodeHidInputReport(Uint8Array.of(200, 1, 2, 3))]).toEqual([1, 2, 3]);
    expect([...decodeHidInputReport(new Uint8Array(0))]).toEqual([]);
  });
});
