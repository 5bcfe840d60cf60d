import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { callerOf, userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { importOwnIdToken, issueImportNonce, submitOwnAttestation } from './service.ts';

const servicePublicKeySchema = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string(),
  kid: z.string(),
  alg: z.literal('EdDSA'),
  use: z.literal('sig'),
});

const writtenSchema = z.object({
  name: z.string(),
  kind: z.enum(['user', 'verified']),
  value: z.unknown(),
  verified_by: z.string(),
  updated_at: z.string(),
  valid_from: z.string().nullable(),
  valid_until: z.string().nullable(),
});

const verifiedBodySchema = z.object({ attestation: z.string().min(1).max(8192) }).strict();
const importBodySchema = z
  .object({
    id_token: z.string().min(1).max(16384),
    nonce: z
      .string()
      .min(1)
      .max(512)
      .describe('The nonce from POST /v1/attributes/import/nonce, sent in the authentication request'),
  })
  .strict();

export const verificationRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;

  // Open (no API key): it is a public key, and a vendor fetches it once to pin it (docs/vendor-api.md).
  app.get(
    '/api/v1/keys/zk',
    {
      config: { rate: 'health' },
      schema: {
        tags: ['keys'],
        summary: "The service's Ed25519 public key that signs zero-knowledge proofs (pin it on first use)",
        response: { 200: successSchema(servicePublicKeySchema), 429: errorBodySchema },
      },
    },
    async (_request, reply) => {
      const { publicKey } = ctx.keyring.zkServiceKey();
      return ok(reply, { ...publicKey, alg: 'EdDSA' as const, use: 'sig' as const });
    },
  );

  const common = { config: { auth: 'user' as const, rate: 'user' as const } };
  const tags = ['attributes'];
  const security = [{ bearer: [] }];

  app.post(
    '/v1/attributes/verified',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Store a verified attribute from an attestation signed by a registered verifier',
        body: verifiedBodySchema,
        response: {
          200: successSchema(writtenSchema),
          403: errorBodySchema,
          ...USER_ROUTE_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const written = await submitOwnAttestation(ctx, callerOf(request), user.id, request.body.attestation);
      return ok(reply, written);
    },
  );

  app.post(
    '/v1/attributes/import/nonce',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'A single-use nonce (10 min) to put in the identity-provider authentication request',
        response: {
          200: successSchema(z.object({ nonce: z.string(), expires_at: z.string() })),
          ...USER_ROUTE_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      return ok(reply, await issueImportNonce(ctx, ctx.database.db, user.id));
    },
  );

  app.post(
    '/v1/attributes/import',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Import attributes from an OpenID Connect ID token of a configured identity provider',
        body: importBodySchema,
        response: {
          200: successSchema(
            z.object({
              issuer: z.string(),
              attributes: z.array(writtenSchema),
              skipped: z.array(z.string()),
            }),
          ),
          ...USER_ROUTE_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const { id_token, nonce } = request.body;
      const out = await importOwnIdToken(ctx, callerOf(request), user.id, id_token, nonce);
      return ok(reply, out);
    },
  );
};
