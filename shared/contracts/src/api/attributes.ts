import { z } from 'zod';

/** docs/attributes.md, "Names": every attribute name, in paths, bodies and auth contexts. */
export const ATTRIBUTE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

export const attributeNameSchema = z
  .string()
  .regex(ATTRIBUTE_NAME, 'must match ^[a-z][a-z0-9_]{0,63}$')
  .describe('Attribute name');

export const ATTRIBUTE_KINDS = ['system', 'user', 'verified', 'computed'] as const;
export const attributeKindSchema = z.enum(ATTRIBUTE_KINDS);

/** Whether a temporal attribute may be disclosed now. Only `valid` ones ever are. */
export const ATTRIBUTE_STATUSES = ['valid', 'expired', 'not_yet_valid'] as const;

const isoTimestamp = z.iso.datetime({ offset: true }).describe('ISO 8601 timestamp');

/** For routes without query parameters: an unknown one is a 400 like an unknown body field. */
export const noQuerySchema = z.object({}).strict();

export const attributeParamsSchema = z.object({ name: attributeNameSchema }).strict();

export const putAttributeBodySchema = z
  .object({
    value: z.unknown().describe('The value; with encrypted=true a client-encrypted string'),
    encrypted: z.boolean().optional().describe('true: the value is already encrypted by the client'),
    valid_from: isoTimestamp.nullable().optional(),
    valid_until: isoTimestamp.nullable().optional(),
  })
  .strict();
export type PutAttributeBody = z.infer<typeof putAttributeBodySchema>;

export const putAttributeResponseSchema = z.object({
  name: z.string(),
  kind: attributeKindSchema,
  updated_at: z.string(),
  valid_from: z.string().nullable(),
  valid_until: z.string().nullable(),
});

export const attributeItemSchema = z.object({
  name: z.string(),
  kind: attributeKindSchema,
  value: z.unknown(),
  encrypted: z.boolean(),
  status: z.enum(ATTRIBUTE_STATUSES),
  updated_at: z.string().nullable(),
  valid_from: z.string().nullable(),
  valid_until: z.string().nullable(),
  verified_by: z.string().optional(),
});
export type AttributeItem = z.infer<typeof attributeItemSchema>;

export const attributeListSchema = z.object({ attributes: z.array(attributeItemSchema) });

export const deleteAttributeResponseSchema = z.object({ name: z.string(), deleted: z.literal(true) });
