import {
  createAttestation,
  generateVerifierKey,
  type TrustedVerifier,
} from '@palmid/contracts/crypto/attestation';
import { AppError } from '@palmid/contracts/errors';
import { describe, expect, it } from 'vitest';
import { acceptAttestation } from './attestations.ts';

const NOW = new Date('2026-11-23T10:00:00Z');
const USER = 'user-1';
const gym = generateVerifierKey('ver_gym');
const verifiers: TrustedVerifier[] = [
  { verifierId: 'ver_gym', publicKey: gym.publicKey, attributes: ['membership_status'] },
];
const token = (validUntil: Date, subject = USER) =>
  createAttestation(gym, {
    subject,
    attribute: 'membership_status',
    value: 'gold',
    issuedAt: NOW,
    validUntil,
  });

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
  }
  throw new Error('expected an AppError');
}

describe('acceptAttestation', () => {
  it('returns the verified attribute with its issuer and expiry', () => {
    const t = token(new Date('2027-01-01T00:00:00Z'));
    expect(acceptAttestation(t, USER, verifiers, NOW)).toEqual({
      name: 'membership_status',
      value: 'gold',
      kind: 'verified',
      verified_by: 'ver_gym',
      valid_from: null,
      valid_until: '2027-01-01T00:00:00.000Z',
      attestation: t,
    });
  });

  it('answers 400 with the reason for an expired attestation or another subject', () => {
    const expired = refusal(() =>
      acceptAttestation(token(new Date('2026-11-01T00:00:00Z')), USER, verifiers, NOW),
    );
    expect([expired.status, expired.details]).toEqual([400, { field: 'attestation', reason: 'expired' }]);
    const other = refusal(() =>
      acceptAttestation(token(new Date('2027-01-01T00:00:00Z'), 'user-2'), USER, verifiers, NOW),
    );
    expect(other.details.reason).toBe('wrong_subject');
  });

  it('answers 403 for an issuer the service does not trust', () => {
    const err = refusal(() => acceptAttestation(token(new Date('2027-01-01T00:00:00Z')), USER, [], NOW));
    expect([err.status, err.details.reason]).toEqual([403, 'unknown_issuer']);
  });
});
