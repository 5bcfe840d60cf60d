import { z } from 'zod';
import { FAILURE_REASONS } from '../api/auth-contexts.ts';
import { handSchema, templateB64Schema, uuidSchema } from '../api/common.ts';
import { palmConfirmationCodeSchema } from '../api/palms.ts';
import { passesLiveness } from '../capture/liveness.ts';
import { captureAttestationSchema } from '../capture/schema.ts';

/** Capabilities a kiosk may declare in `hello`. */
export const KIOSK_CAPABILITIES = ['step_up'] as const;

/**
 * `identify`'s answer when one capture is not enough (CONTRACT §10): the context stays open and the
 * kiosk is to capture `hand` and send it with `identify` again (a new request id, the same auth_id
 * and nonce); the server then decides on both captures together.
 */
export const stepUpAnswerSchema = z.object({
  status: z.literal('scanning'),
  step_up: z.object({ reason: z.literal('step_up_required'), hand: handSchema }),
});
export type StepUpAnswer = z.infer<typeof stepUpAnswerSchema>;

/** /ws/pvs: kiosk agent ↔ server (docs/websocket.md). */
const sample = z.object({
  template: templateB64Schema,
  hand: handSchema,
  quality: z.number().min(0).max(1),
  liveness: z.number().min(0).max(1),
  /**
   * The device's signature over this capture (shared/contracts/src/crypto/capture.ts, docs/websocket.md).
   * Optional in the schema only so that a capture without one is answered `attestation_failed`.
   */
  attestation: captureAttestationSchema.optional(),
});

export const pvsMethods = {
  hello: {
    params: z
      .object({
        pvs_id: uuidSchema,
        agent_version: z.string().min(1).max(64),
        firmware: z.string().max(64),
        model: z.string().max(128),
        /** `enrol`: a short enrolment session that takes no authentication requests. Default `kiosk`. */
        /** `check`: a diagnostic connection (agent doctor) that takes no requests either. */
        mode: z.enum(['kiosk', 'enrol', 'check']).optional(),
        /**
         * What this agent can do beyond the base protocol. `step_up`: it can ask the person for the
         * other hand when `identify` answers `step_up` (docs/websocket.md "Step-up"); without it a
         * plausible match below the bar fails the context as before.
         */
        capabilities: z.array(z.enum(KIOSK_CAPABILITIES)).max(8).optional(),
        /**
         * The device's Ed25519 public key (raw 32 bytes, base64url). With the one-time provisioning secret
         * of `admin pvs create` (or `pvs rekey`) the first hello binds it; afterwards another key is refused.
         */
        device_key: z
          .object({
            public_key: z.string().max(64),
            provisioning_secret: z.string().max(128).optional(),
          })
          .strict()
          .optional(),
      })
      .strict(),
    result: z.object({
      pvs_id: z.string(),
      vendor_id: z.string().nullable(),
      server_version: z.string(),
      time: z.string(),
      /** whether a device key is registered: until it is, no capture of this device is believed */
      device_key: z.enum(['bound', 'unbound']),
    }),
  },
  'enroll.begin': {
    /**
     * Starts an enrolment: its id and single-use nonce go into the signature of every sample. With the
     * user's `confirmation_code` the code is checked (not spent) first, so a wrong one is said before any
     * capture.
     */
    params: z.object({ confirmation_code: z.string().min(1).max(64).optional() }).strict(),
    result: z.object({ enrolment_id: z.string(), nonce: z.string(), expires_at: z.string() }),
  },
  enroll: {
    /** One sample, plus optional further samples (both hands, several captures) enrolled together. */
    params: sample
      .extend({
        samples: z.array(sample).max(9).optional(),
        /**
         * The user's one-time code from `POST /v1/palms/confirm`: the palm is added to that user, at any
         * kiosk. Without it a new user is enrolled (kiosks without a vendor only).
         */
        confirmation_code: palmConfirmationCodeSchema.optional(),
      })
      .strict(),
    /** A new user: `{user_id, claim_code, expires_at}`; palms added with a code: `{added, hands}`. */
    result: z.union([
      z.object({ user_id: z.string(), claim_code: z.string(), expires_at: z.string() }),
      z.object({ added: z.literal(true), hands: z.array(handSchema) }),
    ]),
  },
  identify: {
    /**
     * `template` may be left out only to report a presentation attack (liveness below 0.5): an attack
     * frame is never matched against the gallery, so it cannot be used to probe it.
     */
    params: sample
      .extend({
        auth_id: uuidSchema,
        template: templateB64Schema.optional(),
        /**
         * Left out when the capture could not tell the side (camera profiles; the template's header then
         * says `unknown`): the server searches both hands' palms. Enrolment always names the side.
         */
        hand: handSchema.optional(),
      })
      .strict()
      .refine((p) => p.template !== undefined || !passesLiveness(p.liveness), {
        path: ['template'],
        message: 'template is required unless liveness is below 0.5',
      }),
    /**
     * What a kiosk needs to show the outcome, and nothing more: never attributes nor identifiers (the
     * vendor reads those through its own API; docs/websocket.md); or a request for the other hand.
     */
    result: z.union([
      z
        .object({ status: z.string(), success: z.boolean(), reason: z.enum(FAILURE_REASONS).optional() })
        .strict(),
      stepUpAnswerSchema,
    ]),
  },
  heartbeat: {
    params: z
      .object({ uptime_s: z.number().nonnegative().optional(), device: z.string().max(64).optional() })
      .strict(),
    result: z.object({ time: z.string() }),
  },
} as const;

export type PvsMethod = keyof typeof pvsMethods;

export const scanRequestSchema = z.object({
  auth_id: uuidSchema,
  type: z.string(),
  amount: z.number().nullable(),
  currency: z.string().nullable(),
  display: z.string(),
  expires_at: z.string(),
  /** single-use server nonce: the capture's attestation must carry it (docs/websocket.md) */
  nonce: z.string(),
});
export const scanCancelSchema = z.object({ auth_id: uuidSchema, reason: z.string().optional() });

export type ScanRequest = z.infer<typeof scanRequestSchema>;
export type ScanCancel = z.infer<typeof scanCancelSchema>;
