import { ByteReader, ByteWriter } from './bytes.ts';
import { WireError } from './errors.ts';
import type { Frame } from './frame.ts';

/**
 * Frame types. Ranges carry meaning so a host can classify a type it does not know:
 * 0x01–0x3F host → device commands; command | 0x80 its response; 0x7F NAK (refusal of any
 * command); 0xC0–0xCF unsolicited device events.
 */
export const FRAME_TYPE = {
  GET_INFO: 0x01,
  START_CAPTURE: 0x02,
  CAPTURE_STATUS: 0x03,
  READ_IMAGE: 0x04,
  SET_LEDS: 0x05,
  RESET: 0x06,
  SET_EXPOSURE: 0x07,
  ABORT_CAPTURE: 0x08,

  INFO: 0x81,
  CAPTURE_STARTED: 0x82,
  STATUS: 0x83,
  IMAGE_CHUNK: 0x84,
  LEDS_SET: 0x85,
  RESET_DONE: 0x86,
  EXPOSURE_SET: 0x87,
  CAPTURE_ABORTED: 0x88,

  NAK: 0x7f,

  EVT_BOOT: 0xc0,
  EVT_PALM_PRESENT: 0xc1,
  EVT_PALM_REMOVED: 0xc2,
  EVT_IMAGE_READY: 0xc3,
  EVT_ERROR: 0xce,
} as const;
export type MessageKind = keyof typeof FRAME_TYPE;

export const PROTOCOL_VERSION = 1;

/** Reasons a device refuses a command (NAK) or reports a fault (EVT_ERROR). */
export const DEVICE_ERROR = {
  BAD_REQUEST: 1,
  UNKNOWN_COMMAND: 2,
  BUSY: 3,
  NO_IMAGE: 4,
  OUT_OF_RANGE: 5,
  SENSOR_FAULT: 6,
  NO_PALM_TIMEOUT: 7,
} as const;
export type DeviceErrorName = keyof typeof DEVICE_ERROR;

export function deviceErrorName(code: number): string {
  for (const [name, value] of Object.entries(DEVICE_ERROR)) if (value === code) return name;
  return `DEVICE_ERROR_${code}`;
}

export const CAPTURE_STATE = {
  IDLE: 0,
  WAITING_PALM: 1,
  CAPTURING: 2,
  READY: 3,
  FAILED: 4,
} as const;
export type CaptureStateName = keyof typeof CAPTURE_STATE;

export const BOOT_REASON = { POWER_ON: 0, RESET_COMMAND: 1, WATCHDOG: 2 } as const;

/**
 * LED bit mask for SET_LEDS. STATUS_AMBER is the kiosk's "present your other hand" prompt (a
 * step-up, docs/websocket.md); the simulator's person answers it by presenting the other hand.
 */
export const LED = {
  NIR_850: 0x01,
  NIR_940: 0x02,
  STATUS_GREEN: 0x04,
  STATUS_RED: 0x08,
  STATUS_AMBER: 0x10,
} as const;

export type Message =
  | { kind: 'GET_INFO' }
  | { kind: 'START_CAPTURE'; token: number }
  | { kind: 'CAPTURE_STATUS' }
  | { kind: 'READ_IMAGE'; captureId: number; offset: number; length: number }
  | { kind: 'SET_LEDS'; mask: number; intensity: number }
  | { kind: 'RESET' }
  | { kind: 'SET_EXPOSURE'; exposureUs: number; gain: number }
  | { kind: 'ABORT_CAPTURE' }
  | {
      kind: 'INFO';
      protocol: number;
      width: number;
      height: number;
      bitsPerPixel: number;
      maxChunk: number;
      firmware: string;
      model: string;
      serial: string;
    }
  | { kind: 'CAPTURE_STARTED'; captureId: number }
  | {
      kind: 'STATUS';
      state: number;
      palmPresent: boolean;
      progress: number;
      captureId: number;
      width: number;
      height: number;
      size: number;
      imageCrc: number;
    }
  | { kind: 'IMAGE_CHUNK'; captureId: number; offset: number; data: Uint8Array }
  | { kind: 'LEDS_SET'; mask: number; intensity: number }
  | { kind: 'RESET_DONE' }
  | { kind: 'EXPOSURE_SET'; exposureUs: number; gain: number }
  | { kind: 'CAPTURE_ABORTED' }
  | { kind: 'NAK'; forType: number; code: number; message: string }
  | { kind: 'EVT_BOOT'; reason: number }
  | { kind: 'EVT_PALM_PRESENT'; distanceMm: number; coverage: number }
  | { kind: 'EVT_PALM_REMOVED' }
  | { kind: 'EVT_IMAGE_READY'; captureId: number }
  | { kind: 'EVT_ERROR'; code: number; message: string };

export type MessageOf<K extends MessageKind> = Extract<Message, { kind: K }>;

const KIND_BY_TYPE = new Map<number, MessageKind>(
  Object.entries(FRAME_TYPE).map(([k, v]) => [v, k as MessageKind]),
);

export function kindOfType(type: number): MessageKind | undefined {
  return KIND_BY_TYPE.get(type);
}

export const isCommandType = (type: number): boolean => type >= 0x01 && type <= 0x3f;
export const isResponseType = (type: number): boolean => (type >= 0x81 && type <= 0xbf) || type === 0x7f;
export const isEventType = (type: number): boolean => type >= 0xc0 && type <= 0xcf;
/** The response type a command expects. */
export const responseTypeOf = (commandType: number): number => commandType | 0x80;

export function encodePayload(msg: Message): Uint8Array {
  const w = new ByteWriter();
  switch (msg.kind) {
    case 'GET_INFO':
    case 'CAPTURE_STATUS':
    case 'RESET':
    case 'RESET_DONE':
    case 'ABORT_CAPTURE':
    case 'CAPTURE_ABORTED':
    case 'EVT_PALM_REMOVED':
      break;
    case 'START_CAPTURE':
      w.u16(msg.token);
      break;
    case 'READ_IMAGE':
      w.u16(msg.captureId).u32(msg.offset).u16(msg.length);
      break;
    case 'SET_LEDS':
    case 'LEDS_SET':
      w.u8(msg.mask).u8(msg.intensity);
      break;
    case 'SET_EXPOSURE':
    case 'EXPOSURE_SET':
      w.u32(msg.exposureUs).u8(msg.gain);
      break;
    case 'INFO':
      w.u8(msg.protocol).u16(msg.width).u16(msg.height).u8(msg.bitsPerPixel).u16(msg.maxChunk);
      w.str8(msg.firmware).str8(msg.model).str8(msg.serial);
      break;
    case 'CAPTURE_STARTED':
    case 'EVT_IMAGE_READY':
      w.u16(msg.captureId);
      break;
    case 'STATUS':
      w.u8(msg.state)
        .u8(msg.palmPresent ? 1 : 0)
        .u8(msg.progress)
        .u16(msg.captureId);
      w.u16(msg.width).u16(msg.height).u32(msg.size).u32(msg.imageCrc);
      break;
    case 'IMAGE_CHUNK':
      w.u16(msg.captureId).u32(msg.offset).raw(msg.data);
      break;
    case 'NAK':
      w.u8(msg.forType).u8(msg.code).str8(msg.message);
      break;
    case 'EVT_BOOT':
      w.u8(msg.reason);
      break;
    case 'EVT_PALM_PRESENT':
      w.u8(msg.distanceMm).u8(msg.coverage);
      break;
    case 'EVT_ERROR':
      w.u8(msg.code).str8(msg.message);
      break;
  }
  return w.finish();
}

/** Decode a frame's payload. Throws WireError UNKNOWN_TYPE or BAD_PAYLOAD, nothing else. */
export function decodeMessage(frame: Pick<Frame, 'type' | 'payload'>): Message {
  const kind = kindOfType(frame.type);
  if (!kind) {
    throw new WireError('UNKNOWN_TYPE', `unknown frame type 0x${frame.type.toString(16).padStart(2, '0')}`);
  }
  const r = new ByteReader(frame.payload, kind);
  let msg: Message;
  switch (kind) {
    case 'GET_INFO':
    case 'CAPTURE_STATUS':
    case 'RESET':
    case 'RESET_DONE':
    case 'ABORT_CAPTURE':
    case 'CAPTURE_ABORTED':
    case 'EVT_PALM_REMOVED':
      msg = { kind };
      break;
    case 'START_CAPTURE':
      msg = { kind, token: r.u16() };
      break;
    case 'READ_IMAGE':
      msg = { kind, captureId: r.u16(), offset: r.u32(), length: r.u16() };
      break;
    case 'SET_LEDS':
    case 'LEDS_SET':
      msg = { kind, mask: r.u8(), intensity: r.u8() };
      break;
    case 'SET_EXPOSURE':
    case 'EXPOSURE_SET':
      msg = { kind, exposureUs: r.u32(), gain: r.u8() };
      break;
    case 'INFO':
      msg = {
        kind,
        protocol: r.u8(),
        width: r.u16(),
        height: r.u16(),
        bitsPerPixel: r.u8(),
        maxChunk: r.u16(),
        firmware: r.str8(),
        model: r.str8(),
        serial: r.str8(),
      };
      break;
    case 'CAPTURE_STARTED':
    case 'EVT_IMAGE_READY':
      msg = { kind, captureId: r.u16() };
      break;
    case 'STATUS': {
      const state = r.u8();
      const palm = r.u8();
      if (palm > 1) throw new WireError('BAD_PAYLOAD', `STATUS: palmPresent must be 0 or 1, got ${palm}`);
      msg = {
        kind,
        state,
        palmPresent: palm === 1,
        progress: r.u8(),
        captureId: r.u16(),
        width: r.u16(),
        height: r.u16(),
        size: r.u32(),
        imageCrc: r.u32(),
      };
      break;
    }
    case 'IMAGE_CHUNK':
      msg = { kind, captureId: r.u16(), offset: r.u32(), data: r.rest() };
      break;
    case 'NAK':
      msg = { kind, forType: r.u8(), code: r.u8(), message: r.str8() };
      break;
    case 'EVT_BOOT':
      msg = { kind, reason: r.u8() };
      break;
    case 'EVT_PALM_PRESENT':
      msg = { kind, distanceMm: r.u8(), coverage: r.u8() };
      break;
    case 'EVT_ERROR':
      msg = { kind, code: r.u8(), message: r.str8() };
      break;
  }
  r.end();
  return msg;
}

export function toFrame(msg: Message, seq: number): Frame {
  return { type: FRAME_TYPE[msg.kind], seq, payload: encodePayload(msg) };
}
