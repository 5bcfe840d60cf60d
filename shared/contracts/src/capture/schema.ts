import { z } from 'zod';

/**
 * The wire form of a capture attestation (docs/websocket.md "Attested captures"), apart from the signer
 * and verifier (./attestation.ts, which need node:crypto) so that browser bundles can use the API schemas.
 * It travels beside a sample (`identify`, `enroll`, `POST /api/v1/auth`).
 */
export const captureAttestationSchema = z
  .object({
    /** the capture device's pvs_id */
    device_id: z.uuid(),
    /** auth_id (identify), enrolment_id (enroll) or a fresh capture id chosen by the device (direct) */
    subject: z.uuid(),
    /** the server nonce from `scan.request` or `enroll.begin`; absent on the direct path */
    nonce: z
      .string()
      .max(88)
      .regex(/^[A-Za-z0-9_-]*$/, 'must be base64url')
      .optional(),
    /** ISO 8601 instant of the capture (device clock; must be within 60 s of the server's) */
    captured_at: z.iso.datetime({ offset: true }),
    /** strictly increasing per device */
    counter: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    /** Ed25519 signature of the canonical bytes, base64url (64 bytes) */
    signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'must be a base64url Ed25519 signature'),
  })
  .strict();
export type CaptureAttestation = z.infer<typeof captureAttestationSchema>;
