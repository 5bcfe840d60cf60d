import { z } from 'zod';
import { captureAttestationSchema } from '../capture/schema.ts';
import { formatAmount, isCurrency, MAX_MAJOR_AMOUNT, maxAmount } from '../money.ts';
import { catalogueEntry, isReservedName } from './attribute-catalogue.ts';
import {
  ATTRIBUTE_NAME_RE,
  attributeNameSchema,
  handSchema,
  hex64Schema,
  templateB64Schema,
  uuidSchema,
} from './common.ts';
import { invalidSetMembers } from './domains.ts';

export const AUTH_TYPES = ['payment', 'entrance', 'login'] as const;
export const AUTH_STATUSES = ['pending', 'scanning', 'completed', 'failed', 'cancelled', 'expired'] as const;
export const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled', 'expired'] as const;
export const FAILURE_REASONS = [
  'no_match',
  'liveness_failed',
  'consent_missing',
  'underage',
  'cancelled',
  'expired',
  'attestation_failed',
] as const;
/**
 * Why an open context waits (the `reason` of an `auth.updated` event whose status is not terminal):
 * `step_up_required`, the kiosk asks for the other hand (CONTRACT §10, docs/websocket.md "Step-up").
 */
export const PENDING_REASONS = ['step_up_required'] as const;
export type PendingReason = (typeof PENDING_REASONS)[number];
/**
 * More about a `no_match` (auth_result.detail): `ambiguous_match`, two enrolled users were both
 * near the identification bar and neither clearly ahead of the other, so nobody was chosen.
 */
export const FAILURE_DETAILS = ['ambiguous_match'] as const;
export type FailureDetail = (typeof FAILURE_DETAILS)[number];
/** docs/vendor-api.md, "Authentication contexts": a vendor that asks for more than this many attributes in one context is refused. */
export const MAX_ATTRIBUTES_PER_CONTEXT = 16;

export type AuthType = (typeof AUTH_TYPES)[number];
export type AuthStatus = (typeof AUTH_STATUSES)[number];
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** At most this many values in an `in_set` predicate (the proof circuit has 8 set slots). */
export const MAX_PREDICATE_VALUES = 8;
/** At most this many predicates per context (each costs a zero-knowledge proof, ≈ 0.2-0.3 s). */
export const MAX_PREDICATES_PER_CONTEXT = 2;

/**
 * A predicate a vendor asks about an attribute instead of its value (docs/zk-proofs.md): the result holds
 * `<attribute>_in_set: true|false` and, when true and `proof` is not false, `<attribute>_proof`, a
 * zero-knowledge proof that the hidden value is one of `values`, bound to the context.
 */
export const inSetPredicateSchema = z
  .object({
    type: z.literal('in_set'),
    attribute: attributeNameSchema.refine((a) => a !== 'date_of_birth', {
      message: 'date_of_birth supports minimum_age only',
    }),
    values: z
      .array(z.string().min(1).max(256))
      .min(1)
      .max(MAX_PREDICATE_VALUES)
      .refine((v) => new Set(v).size === v.length, { message: 'a value is listed twice' }),
    proof: z.boolean().optional(),
  })
  .strict()
  .superRefine((p, c) => {
    // members must be values the attribute can hold (ISO 3166-1 alpha-2 for country, the catalogue's
    // enumerations): junk members would pad a set past the minimum size (docs/zk-proofs.md)
    for (const bad of invalidSetMembers(p.attribute, p.values))
      c.addIssue({
        code: 'custom',
        path: ['values', bad.index],
        params: { reason: 'not_in_domain' },
        message: `'${bad.value}' is not a value of ${p.attribute}'s domain`,
      });
  });
export type InSetPredicate = z.infer<typeof inSetPredicateSchema>;

/** An attribute name a context may request; checked by name in `requestedNameProblem`. */
const requestedNameSchema = z.string().max(128);

/**
 * Why a context may not request `name`, in a sentence naming it: not a well-formed name, or a name the
 * service derives itself and that is not in the catalogue (`payment`, `ledger_id`, `is_<x>`, `<x>_in_set`,
 * an `age_over_<N>` other than the context's `minimum_age`). `pseudonym` and `age_proof` are requested by
 * name.
 */
export function requestedNameProblem(
  name: string,
  minimumAge?: number,
): { reason: string; message: string } | undefined {
  if (!ATTRIBUTE_NAME_RE.test(name))
    return {
      reason: 'invalid_format',
      message: `'${name.slice(0, 64)}' is not an attribute name (names match ^[a-z][a-z0-9_]{0,63}$)`,
    };
  if (name === 'pseudonym' || name === 'age_proof') return undefined;
  if (minimumAge !== undefined && name === `age_over_${minimumAge}`) return undefined;
  if (isReservedName(name) && catalogueEntry(name) === undefined)
    return {
      reason: 'unknown_attribute',
      message: `'${name}' is neither in the attribute catalogue nor a valid custom name (the service derives it${
        /^age_over_\d+$/.test(name)
          ? '; ask with minimum_age instead'
          : /_in_set$/.test(name)
            ? '; ask with predicates instead'
            : ''
      })`,
    };
  return undefined;
}

export const authContextInputSchema = z
  .object({
    type: z.enum(AUTH_TYPES).describe('payment (needs amount), entrance (may carry minimum_age) or login'),
    amount: z
      .number()
      .refine(Number.isInteger, {
        message: "must be a whole number of the currency's smallest unit",
        params: { reason: 'invalid_type' },
      })
      .refine((n) => n > 0, { message: 'must be positive', params: { reason: 'too_small' } })
      .optional()
      .describe(
        "Payment only: in the currency's smallest unit (1250 EUR = 12.50 €; 1250 JPY = ¥1,250); at most " +
          `${MAX_MAJOR_AMOUNT} major units (EUR: ${maxAmount('EUR')}, JPY: ${maxAmount('JPY')}, KWD: ${maxAmount('KWD')})`,
      ),
    currency: z
      .string()
      .refine(isCurrency, {
        message: 'must be an ISO 4217 currency code such as EUR',
        params: { reason: 'unknown_currency' },
      })
      .optional()
      .describe('Payment only: ISO 4217 code, default EUR'),
    minimum_age: z
      .number()
      .int()
      .min(1)
      .max(130)
      .optional()
      .describe(
        'Entrance only: the result says whether the person is at least this old, never the birth date',
      ),
    minimum_age_source: z
      .enum(['any', 'verified'])
      .optional()
      .describe(
        'With minimum_age: `verified` accepts only a birth date vouched for by a verifier (identity provider), ' +
          'a self-asserted one counts as missing (consent_missing); default `any`',
      ),
    attributes_required: z
      .array(requestedNameSchema)
      .max(MAX_ATTRIBUTES_PER_CONTEXT)
      .optional()
      .describe('Attributes the person must have consented to share with you; missing ones fail the context'),
    attributes_optional: z
      .array(requestedNameSchema)
      .max(MAX_ATTRIBUTES_PER_CONTEXT)
      .optional()
      .describe('Attributes returned when consented to; absent ones are simply left out'),
    pvs_id: uuidSchema
      .optional()
      .describe('One kiosk to present on; default: every connected kiosk of yours and the unbound ones'),
    expires_in_s: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .optional()
      .describe('Lifetime in seconds (default PALMID_AUTH_TTL_S, 120)'),
    predicates: z
      .array(inSetPredicateSchema)
      .min(1)
      .max(MAX_PREDICATES_PER_CONTEXT)
      .optional()
      .describe('Questions about an attribute answered with a zero-knowledge proof instead of its value'),
  })
  .strict()
  .superRefine((v, c) => {
    if (v.type === 'payment' && v.amount === undefined) {
      c.addIssue({
        code: 'custom',
        path: ['amount'],
        message: 'amount is required for payment',
        params: { reason: 'required' },
      });
    }
    if (v.type === 'payment' && v.amount !== undefined && Number.isInteger(v.amount)) {
      const currency = v.currency ?? 'EUR';
      if (isCurrency(currency) && v.amount > maxAmount(currency)) {
        c.addIssue({
          code: 'custom',
          path: ['amount'],
          message: `amount exceeds the maximum for ${currency}: ${maxAmount(currency)} (${formatAmount(maxAmount(currency), currency)})`,
          params: { reason: 'too_big', maximum: maxAmount(currency) },
        });
      }
    }
    if (v.type !== 'payment' && (v.amount !== undefined || v.currency !== undefined)) {
      c.addIssue({
        code: 'custom',
        path: [v.amount !== undefined ? 'amount' : 'currency'],
        message: 'only payment contexts carry an amount',
      });
    }
    if (v.type !== 'entrance' && v.minimum_age !== undefined) {
      c.addIssue({
        code: 'custom',
        path: ['minimum_age'],
        message: 'only entrance contexts carry minimum_age',
      });
    }
    // A name that is neither in the catalogue nor a valid custom name is refused by name: a typo must not
    // read as "not consented".
    for (const field of ['attributes_required', 'attributes_optional'] as const) {
      (v[field] ?? []).forEach((name, i) => {
        const why = requestedNameProblem(name, v.minimum_age);
        if (why)
          c.addIssue({
            code: 'custom',
            path: [field, i],
            message: why.message,
            params: { reason: why.reason },
          });
      });
    }
    const all = [...(v.attributes_required ?? []), ...(v.attributes_optional ?? [])];
    if (new Set(all).size !== all.length) {
      c.addIssue({ code: 'custom', path: ['attributes_optional'], message: 'an attribute is listed twice' });
    }
    if (v.minimum_age_source !== undefined && v.minimum_age === undefined) {
      c.addIssue({
        code: 'custom',
        path: ['minimum_age_source'],
        message: 'minimum_age_source needs minimum_age',
      });
    }
    if (all.includes('age_proof') && v.minimum_age === undefined) {
      c.addIssue({
        code: 'custom',
        path: [v.attributes_required?.includes('age_proof') ? 'attributes_required' : 'attributes_optional'],
        message: 'age_proof needs an entrance context with minimum_age',
      });
    }
    const predicated = (v.predicates ?? []).map((p) => p.attribute);
    if (new Set(predicated).size !== predicated.length) {
      c.addIssue({ code: 'custom', path: ['predicates'], message: 'one predicate per attribute' });
    }
    const disclosed = predicated.find((a) => all.includes(a));
    if (disclosed !== undefined) {
      c.addIssue({
        code: 'custom',
        path: ['predicates'],
        message: `${disclosed} is asked for by value and by predicate: ask for one`,
      });
    }
    if (all.length > MAX_ATTRIBUTES_PER_CONTEXT) {
      c.addIssue({
        code: 'custom',
        path: ['attributes_optional'],
        message: `at most ${MAX_ATTRIBUTES_PER_CONTEXT} attributes per context (excessive attribute request)`,
      });
    }
  });
export type AuthContextInput = z.infer<typeof authContextInputSchema>;

export const createAuthBodySchema = z.object({ auth_context: authContextInputSchema }).strict();

export const authResultSchema = z.object({
  success: z.boolean(),
  user_id: z
    .string()
    .nullable()
    .describe(
      "Your pseudonym of the person: hex HMAC-SHA256(key = the person's internal id, message = your vendor id); null when nobody was identified",
    ),
  attributes: z.record(z.string(), z.unknown()),
  timestamp: z.string(),
  ledger_id: hex64Schema.optional(),
  reason: z.enum(FAILURE_REASONS).optional(),
  /** With `reason: "no_match"`: `ambiguous_match` when two users were too close to tell apart. */
  detail: z.enum(FAILURE_DETAILS).optional(),
  missing: z.array(z.string()).optional(),
  /**
   * Names of attributes disclosed by this result whose values the service no longer keeps (an hour after the
   * context ended, at once after delivery under `retention_days: 0`, or the consent was revoked):
   * `attributes` then holds only what is still kept (docs/vendor-api.md, "Disclosed values do not linger").
   */
  attributes_removed: z.array(z.string()).optional(),
  /** Requested attribute names the result does not carry (not consented to you, no value, or the context failed). */
  withheld: z.array(z.string()).optional(),
});
export type AuthResult = z.infer<typeof authResultSchema>;

export const authContextRecordSchema = z.object({
  auth_id: uuidSchema,
  status: z.enum(AUTH_STATUSES),
  type: z.enum(AUTH_TYPES),
  amount: z.number().int().nullable(),
  currency: z.string().nullable(),
  minimum_age: z.number().int().nullable(),
  minimum_age_source: z.enum(['any', 'verified']).optional(),
  attributes_required: z.array(z.string()),
  attributes_optional: z.array(z.string()),
  pvs_id: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type AuthContextRecord = z.infer<typeof authContextRecordSchema>;

export const authStatusSchema = z.object({
  auth_id: uuidSchema,
  status: z.enum(AUTH_STATUSES),
  /** What the context asked for (absent in the cancel answer): shown by clients that did not create it. */
  type: z.enum(AUTH_TYPES).optional(),
  amount: z.number().int().nullable().optional(),
  currency: z.string().nullable().optional(),
  created_at: z.string().optional(),
  auth_result: authResultSchema.optional(),
});

export const palmInputSchema = z
  .object({
    template: templateB64Schema,
    hand: handSchema.optional(),
    /** required for a capture to be believed (docs/vendor-api.md "Attested palms") */
    liveness: z.number().min(0).max(1).optional(),
    quality: z.number().min(0).max(1).optional(),
    /** signature of a capture device registered to the calling vendor (shared/contracts/src/crypto/capture.ts) */
    attestation: captureAttestationSchema.optional(),
  })
  .strict();

/** At most this many captures in one `POST /api/v1/auth` (e.g. two frames of each hand). */
export const MAX_DIRECT_CAPTURES = 4;

export const oneShotAuthBodySchema = z
  .object({
    auth_context: authContextInputSchema,
    palm: palmInputSchema.optional().describe('One capture (or use `captures`)'),
    captures: z
      .array(palmInputSchema)
      .min(1)
      .max(MAX_DIRECT_CAPTURES)
      .optional()
      .describe(
        'Several captures of one presentation, attested together (one subject, increasing counters): ' +
          'captures of the two hands are fused as independent evidence, captures of one hand count ' +
          'by the best of them (docs/vendor-api.md "Several captures")',
      ),
  })
  .strict()
  .superRefine((v, c) => {
    if ((v.palm === undefined) === (v.captures === undefined)) {
      c.addIssue({
        code: 'custom',
        path: ['palm'],
        message: 'send either palm or captures',
        params: { reason: v.palm === undefined ? 'required' : 'conflict' },
      });
    }
  });

export const authIdParamsSchema = z.object({ auth_id: uuidSchema });
