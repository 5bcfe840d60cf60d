import { z } from 'zod';
import { attributeNameSchema } from './attributes.ts';
import { invalidSetMembers } from './domains.ts';

/** Decided in docs/user-api.md: a consent without expires_at lasts 365 days; none lasts over 730. */
export const CONSENT_DEFAULT_DAYS = 365;
export const CONSENT_MAX_DAYS = 730;
export const MAX_RETENTION_DAYS = 3650;
export const MAX_CONSENT_ATTRIBUTES = 64;
export const MAX_PURPOSE_CHARS = 500;
/** A consent to `<attr>_in_set` without a named set admits only sets at least this large (docs/zk-proofs.md). */
export const IN_SET_MIN_SIZE = 3;
export const IN_SET_MAX_VALUES = 8;

export const consentAttributeSchema = z
  .object({
    name: attributeNameSchema,
    purpose: z
      .string()
      .min(1)
      .max(MAX_PURPOSE_CHARS)
      .refine((s) => s.trim().length > 0, 'must not be blank')
      .describe('Why the vendor needs the attribute'),
    retention_days: z
      .number()
      .int()
      .min(0)
      .max(MAX_RETENTION_DAYS)
      .describe('Days the vendor may keep the value; 0: must not store it'),
    values: z
      .array(z.string().min(1).max(256))
      .min(1)
      .max(IN_SET_MAX_VALUES)
      .optional()
      .describe('`<attr>_in_set` only: the one set a vendor may ask about (docs/zk-proofs.md)'),
    min_set_size: z
      .number()
      .int()
      .min(IN_SET_MIN_SIZE)
      .max(IN_SET_MAX_VALUES)
      .optional()
      .describe(
        `\`<attr>_in_set\` without values: the fewest values a set asked about must have (default ${IN_SET_MIN_SIZE})`,
      ),
  })
  .strict()
  .superRefine((a, c) => {
    if (!a.name.endsWith('_in_set') && (a.values !== undefined || a.min_set_size !== undefined))
      c.addIssue({
        code: 'custom',
        path: ['values'],
        message: 'values and min_set_size are for <attr>_in_set only',
      });
    if (a.values !== undefined && a.min_set_size !== undefined)
      c.addIssue({ code: 'custom', path: ['min_set_size'], message: 'give either values or min_set_size' });
    // a named set's members must be values the attribute can hold (docs/zk-proofs.md, "Set predicates")
    if (a.values !== undefined && a.name.endsWith('_in_set'))
      for (const bad of invalidSetMembers(a.name.slice(0, -'_in_set'.length), a.values))
        c.addIssue({
          code: 'custom',
          path: ['values', bad.index],
          params: { reason: 'not_in_domain' },
          message: `'${bad.value}' is not a value of ${a.name.slice(0, -'_in_set'.length)}'s domain`,
        });
  });

export const createConsentBodySchema = z
  .object({
    vendor_id: z.uuid().describe('The vendor that receives access'),
    attributes: z.array(consentAttributeSchema).min(1).max(MAX_CONSENT_ATTRIBUTES),
    expires_at: z.iso
      .datetime({ offset: true })
      .optional()
      .describe(`Default: ${CONSENT_DEFAULT_DAYS} days from now; at most ${CONSENT_MAX_DAYS} days ahead`),
    revocable: z.boolean().optional().describe('Default true; a non-revocable consent cannot be revoked'),
  })
  .strict();
export type CreateConsentBody = z.infer<typeof createConsentBodySchema>;

export const CONSENT_STATUSES = ['active', 'expired', 'revoked'] as const;

export const consentSchema = z.object({
  consent_id: z.string(),
  user_id: z.string(),
  vendor_id: z.string(),
  attributes: z.array(
    z.object({
      name: z.string(),
      purpose: z.string(),
      retention_days: z.number().int(),
      values: z.array(z.string()).optional(),
      min_set_size: z.number().int().optional(),
    }),
  ),
  granted_at: z.string(),
  expires_at: z.string(),
  revocable: z.boolean(),
  audit_log: z.boolean(),
  status: z.enum(CONSENT_STATUSES),
  revoked_at: z.string().nullable(),
});
export type Consent = z.infer<typeof consentSchema>;

export const consentListQuerySchema = z
  .object({
    all: z.enum(['true', 'false']).optional().describe('true: include revoked and expired consents'),
  })
  .strict();

export const consentListSchema = z.object({ consents: z.array(consentSchema) });

export const consentParamsSchema = z.object({ consent_id: z.uuid() }).strict();

export const revokeConsentResponseSchema = z.object({ consent_id: z.string(), revoked_at: z.string() });
