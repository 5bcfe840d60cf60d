import { z } from 'zod';

/**
 * Faults the simulated device can show. Line faults act on what the device sends; behaviour
 * faults change what the firmware does. All can be combined; `clearFaults()` removes them.
 */
export const faultSchema = z.discriminatedUnion('kind', [
  /** Random bytes on the line before a frame (EMI, a half-initialised UART). */
  z
    .object({
      kind: z.literal('garbage'),
      bytes: z.number().int().min(1).max(4096).default(16),
      probability: z.number().min(0).max(1).default(1),
    })
    .strict(),
  /** One bit flipped in a sent frame, so its CRC fails. */
  z.object({ kind: z.literal('crc-noise'), probability: z.number().min(0).max(1).default(0.2) }).strict(),
  /** A frame cut short (the rest never sent). */
  z.object({ kind: z.literal('truncate'), probability: z.number().min(0).max(1).default(0.2) }).strict(),
  /** A frame of a type the protocol does not define, sent before the answer. */
  z.object({ kind: z.literal('unknown-frames'), probability: z.number().min(0).max(1).default(1) }).strict(),
  /** Every answer delayed. */
  z.object({ kind: z.literal('slow'), delayMs: z.number().int().min(0).max(60_000).default(200) }).strict(),
  /** Firmware hung: commands are read but never answered. */
  z.object({ kind: z.literal('silent') }).strict(),
  /** Sensor stalls part-way through every capture; a RESET clears it unless `persistent`. */
  z.object({ kind: z.literal('stuck-sensor'), persistent: z.boolean().default(false) }).strict(),
  /** Cable pulled once the host has read `atOffset` image bytes; plugged back after `forMs` (0 = stays out). */
  z
    .object({
      kind: z.literal('unplug-mid-image'),
      atOffset: z.number().int().min(0).default(0),
      forMs: z.number().int().min(0).default(0),
    })
    .strict(),
]);
export type FaultInput = z.input<typeof faultSchema>;
export type Fault = z.output<typeof faultSchema>;
export type FaultKind = Fault['kind'];
