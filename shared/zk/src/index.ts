// Public API of palmid's zero-knowledge predicate proofs (docs/zk-proofs.md).
export { releaseZkResources, useSingleThreadedEngine, VERIFICATION_KEY } from './artifacts.ts';
export { ageCutoff, isAtLeastAge, utcDate } from './encoding.ts';
export {
  deriveServiceKey,
  generateServiceKey,
  parseServicePublicKey,
  type ServiceKeyPair,
  serviceKeyFromSeed,
} from './keys.ts';
export {
  type AgeResult,
  type ProveRequest,
  type ProveResult,
  proveAgeForContext,
  provePredicate,
  warmUpProver,
  ZkPredicateFalseError,
} from './prove.ts';
export {
  type Predicate,
  type PredicateProof,
  PredicateProofSchema,
  type ServicePublicKey,
  ServicePublicKeySchema,
  type Statement,
} from './schema.ts';
export {
  type VerifyExpectations,
  type VerifyFailure,
  type VerifyResult,
  verifyPredicateProof,
} from './verify.ts';
