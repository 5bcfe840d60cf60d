import { z } from 'zod';

/** What a user may know about a vendor: enough to recognise it in consents and the audit trail. */
export const vendorPublicSchema = z.object({
  vendor_id: z.string(),
  name: z.string(),
  url: z.string(),
});
export type VendorPublic = z.infer<typeof vendorPublicSchema>;

export const vendorListSchema = z.object({ vendors: z.array(vendorPublicSchema) });
export const vendorParamsSchema = z.object({ vendor_id: z.uuid() }).strict();
