import { z } from 'zod';
import { attributeItemSchema } from './attributes.ts';
import { consentSchema } from './consents.ts';

/** An audit record as the user sees it (docs/user-api.md, "Audit"; (GET /v1/audit and the export). */
export const auditRecordSchema = z.object({
  id: z.string(),
  timestamp: z.string(),
  user_id: z.string(),
  vendor_id: z.string().optional(),
  attribute_name: z.string(),
  operation: z.enum(['READ', 'UPDATE', 'DELETE']),
  ip_address: z.string(),
  user_agent: z.string(),
  result: z.enum(['SUCCESS', 'DENIED', 'ERROR']),
});

export const auditQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).optional().describe('At most this many (default 1000)'),
  })
  .strict();

export const auditListSchema = z.object({ records: z.array(auditRecordSchema) });

/** A ledger transaction (docs/vendor-api.md, "Ledger"), decoded (the export shows the JSON, not its hex). */
export const ledgerTransactionSchema = z.object({
  'user-id': z.string(),
  'context-id': z.string(),
  attributes: z.array(z.object({ type: z.string(), context: z.unknown() })),
  vendor: z.object({ id: z.string(), url: z.string() }),
  timestamp: z.number().int(),
  result: z.object({ code: z.string() }),
});

export const exportQuerySchema = z
  .object({
    format: z.enum(['json']).optional().describe('json: inline; omitted: the same JSON as a download'),
  })
  .strict();

export const gdprExportSchema = z.object({
  exported_at: z.string(),
  user: z.object({
    user_id: z.string(),
    registration_date: z.string(),
    last_auth: z.string().nullable(),
    ledger_id: z.string(),
    palm_registered: z.array(z.enum(['left', 'right'])),
    palms: z.array(
      z.object({ palm_id: z.string(), hand: z.enum(['left', 'right']), registered_at: z.string() }),
    ),
  }),
  attributes: z.array(attributeItemSchema),
  consents: z.array(consentSchema),
  audit: z.array(auditRecordSchema),
  ledger: z.object({ transactions: z.array(ledgerTransactionSchema) }),
});
export type GdprExport = z.infer<typeof gdprExportSchema>;

export const deleteMeResponseSchema = z.object({ deleted: z.literal(true), deleted_at: z.string() });
