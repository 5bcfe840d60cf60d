import { z } from 'zod';

/** Attribute names (docs/attributes.md, "Names"). */
export const ATTRIBUTE_NAME_RE = /^[a-z][a-z0-9_]{0,63}$/;
export const attributeNameSchema = z.string().regex(ATTRIBUTE_NAME_RE, 'must match ^[a-z][a-z0-9_]{0,63}$');
export const uuidSchema = z.uuid();
export const isoTimestamp = z.string();
export const hex64Schema = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters');
export const handSchema = z.enum(['left', 'right']);
/** Base64 (standard or URL alphabet) of a palm template, at most 1 KB decoded. */
export const templateB64Schema = z
  .string()
  .min(4)
  .max(1400)
  .regex(/^[A-Za-z0-9+/_-]+={0,2}$/, 'must be base64');
