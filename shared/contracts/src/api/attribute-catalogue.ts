/**
 * The attribute catalogue (docs/attributes.md), shared by the server (validation, kinds) and the user
 * portal (which names a user may edit). `system` values are managed by the service, `verified` ones are
 * written by a third party (a vendor or an identity provider) and `computed` ones are derived on every
 * read; none of the three can be written by the user. Everything else — the catalogue's `user` names and
 * any other well-formed name — is a user attribute. docs/attributes.md is the prose version of this table.
 */
export type AttributeKind = 'system' | 'user' | 'verified' | 'computed';

export type ValueType = 'email' | 'phone' | 'date' | 'postal_code' | 'country' | 'text' | 'boolean' | 'any';

export interface CatalogueEntry {
  kind: AttributeKind;
  type: ValueType;
  description: string;
  /** True for system names that only exist per vendor or per context (never listed to the user). */
  contextual?: boolean;
}

export const CATALOGUE = {
  user_id: {
    kind: 'system',
    type: 'text',
    description: 'unique user identifier (UUID v4); a vendor receives its own UUID v4 for the user instead',
  },
  registration_date: { kind: 'system', type: 'date', description: 'when the user joined (YYYY-MM-DD)' },
  palm_registered: { kind: 'system', type: 'any', description: 'registered palms: ["left"|"right"]' },
  last_auth: { kind: 'system', type: 'text', description: 'last authentication (ISO 8601 UTC)' },
  pseudonym: {
    kind: 'system',
    type: 'text',
    description: 'per-vendor identifier, HMAC-SHA256(key = internal user_id, message = vendor_id)',
    contextual: true,
  },
  payment: {
    kind: 'system',
    type: 'any',
    description: 'the amount of a payment context (ledger attribute type)',
    contextual: true,
  },
  email: { kind: 'user', type: 'email', description: 'e-mail address' },
  phone: { kind: 'user', type: 'phone', description: 'phone number (E.164)' },
  date_of_birth: { kind: 'user', type: 'date', description: 'birth date (YYYY-MM-DD, not in the future)' },
  postal_code: { kind: 'user', type: 'postal_code', description: 'postal or ZIP code, checked per country' },
  country: { kind: 'user', type: 'country', description: 'ISO 3166-1 alpha-2 country code' },
  name: { kind: 'user', type: 'text', description: 'display name' },
  promotion_eligible: { kind: 'user', type: 'boolean', description: 'opt-in to vendor promotions' },
  age_verified: { kind: 'verified', type: 'boolean', description: 'verified by a government ID service' },
  identity_verified: { kind: 'verified', type: 'boolean', description: 'verified by a KYC provider' },
  membership_status: { kind: 'verified', type: 'text', description: 'verified by an organization' },
  vaccination_status: { kind: 'verified', type: 'text', description: 'verified by a health authority' },
  email_verified: { kind: 'verified', type: 'boolean', description: 'e-mail ownership confirmed by an IdP' },
  legal_name: { kind: 'verified', type: 'text', description: 'legal name from an identity provider' },
  loyalty_status: { kind: 'verified', type: 'text', description: 'status in a loyalty programme' },
  event_ticket: { kind: 'verified', type: 'any', description: 'ticket issued by an event organiser' },
  is_adult: { kind: 'computed', type: 'boolean', description: 'date_of_birth at least 18 years ago' },
  is_senior: { kind: 'computed', type: 'boolean', description: 'date_of_birth at least 65 years ago' },
  loyalty_tier: { kind: 'computed', type: 'text', description: 'derived from the ledger history' },
  risk_score: { kind: 'computed', type: 'any', description: 'derived from the authentication history' },
} as const satisfies Record<string, CatalogueEntry>;

export type CatalogueName = keyof typeof CATALOGUE;

export const SYSTEM_NAMES = ['user_id', 'registration_date', 'palm_registered', 'last_auth'] as const;
export const COMPUTED_NAMES = ['is_adult', 'is_senior', 'loyalty_tier', 'risk_score'] as const;

export function catalogueEntry(name: string): CatalogueEntry | undefined {
  return Object.hasOwn(CATALOGUE, name) ? (CATALOGUE as Record<string, CatalogueEntry>)[name] : undefined;
}

/** The kind of any well-formed name: catalogue names have theirs, every other name is a user attribute. */
export function attributeKind(name: string): AttributeKind {
  return catalogueEntry(name)?.kind ?? 'user';
}

/** Names the service derives per vendor or per context; never stored (docs/attributes.md, "Reserved names"). */
export const RESERVED_NAMES = ['pseudonym', 'payment', 'ledger_id', 'age_proof'] as const;

/**
 * True for a service-derived name nobody may store: the reserved names, `age_over_<N>`, `<name>_in_set`,
 * `<name>_proof` (the zero-knowledge proof of a predicate),
 * `is_<name>`, and every system or computed catalogue name. Verified names are stored, by trusted writers only.
 */
export function isReservedName(name: string): boolean {
  const kind = catalogueEntry(name)?.kind;
  if (kind === 'system' || kind === 'computed') return true;
  return (
    (RESERVED_NAMES as readonly string[]).includes(name) ||
    /^age_over_\d+$/.test(name) ||
    /^[a-z][a-z0-9_]*_in_set$/.test(name) ||
    /^[a-z][a-z0-9_]*_proof$/.test(name) ||
    /^is_[a-z0-9_]+$/.test(name)
  );
}

export function isStoredKind(kind: AttributeKind): kind is 'user' | 'verified' {
  return kind === 'user' || kind === 'verified';
}
