import {
  type AttestationFailure,
  type TrustedVerifier,
  type VerifiedAttributeName,
  type VerifiedValue,
  verifyAttestation,
} from '@palmid/contracts/crypto/attestation';
import { AppError } from '@palmid/contracts/errors';

/** What the attributes module stores for an accepted attestation (kind "verified"). */
export interface VerifiedAttributeRecord {
  readonly name: VerifiedAttributeName;
  readonly value: VerifiedValue;
  readonly kind: 'verified';
  readonly verified_by: string;
  readonly valid_from: string | null;
  readonly valid_until: string;
  /** The signed token, kept (encrypted with the attribute) so the value's origin can be shown later. */
  readonly attestation: string;
}

// An issuer the service does not trust is a permission problem; everything else is a bad request.
const FORBIDDEN_REASONS: readonly AttestationFailure[] = [
  'unknown_issuer',
  'revoked_issuer',
  'attribute_not_allowed',
];

/**
 * Checks an attestation submitted for `userId` and turns it into the record to store, or throws the
 * API error (400 `details.field: "attestation"` with the reason, or 403 for an untrusted issuer).
 */
export function acceptAttestation(
  token: string,
  userId: string,
  verifiers: Iterable<TrustedVerifier>,
  now: Date = new Date(),
  attribute?: string,
): VerifiedAttributeRecord {
  const result = verifyAttestation(token, verifiers, now, {
    subject: userId,
    ...(attribute !== undefined ? { attribute } : {}),
  });
  if (!result.ok) {
    if (FORBIDDEN_REASONS.includes(result.reason)) {
      throw new AppError('FORBIDDEN', `Attestation refused: ${result.reason}`, {
        field: 'attestation',
        reason: result.reason,
      });
    }
    throw AppError.invalid('attestation', result.reason, `Attestation refused: ${result.reason}`);
  }
  const a = result.attestation;
  return {
    name: a.attribute,
    value: a.value,
    kind: 'verified',
    verified_by: a.issuer,
    valid_from: a.validFrom?.toISOString() ?? null,
    valid_until: a.validUntil.toISOString(),
    attestation: token,
  };
}
