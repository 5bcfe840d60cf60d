import {
  ATTRIBUTE_NAME,
  attributeItemSchema,
  attributeListSchema,
  attributeParamsSchema,
  deleteAttributeResponseSchema,
  noQuerySchema,
  putAttributeBodySchema,
  putAttributeResponseSchema,
} from '@palmid/contracts/api/attributes';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.ts';
import { callerOf, userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { auditRejectedWrite } from './audit.ts';
import { deleteOwnAttribute, getOwnAttribute, listOwnAttributes, writeOwnAttribute } from './service.ts';

const toMs = (iso: string | null | undefined) => (iso === null || iso === undefined ? null : Date.parse(iso));

/**
 * A PUT whose body never reaches the handler (malformed JSON, wrong content type, schema violation) is
 * still an attempted update of a named attribute by a known user: it is recorded as UPDATE/ERROR. Requests
 * without a valid token or with a malformed name are not attribute accesses and are not recorded.
 */
function auditRejectedUpdate(ctx: AppContext) {
  return async (request: FastifyRequest, _reply: FastifyReply, error: FastifyError): Promise<void> => {
    const rejectedBeforeHandler =
      Boolean(error.validation) || (typeof error.code === 'string' && error.code.startsWith('FST_ERR_CTP'));
    const name = (request.params as { name?: unknown } | undefined)?.name;
    if (!rejectedBeforeHandler || !request.user || typeof name !== 'string' || !ATTRIBUTE_NAME.test(name))
      return;
    await auditRejectedWrite(ctx, callerOf(request), request.user.id, name);
  };
}

export const attributeRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  const common = { config: { auth: 'user' as const, rate: 'user' as const } };
  const tags = ['attributes'];
  const security = [{ bearer: [] }];

  app.get(
    '/v1/attributes',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'All attributes of the user: system, user, verified and computed',
        querystring: noQuerySchema,
        response: { 200: successSchema(attributeListSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const attributes = await listOwnAttributes(ctx, callerOf(request), user.id);
      return ok(reply, { attributes });
    },
  );

  app.get(
    '/v1/attributes/:name',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'One attribute (expired and not-yet-valid ones are shown with their status)',
        params: attributeParamsSchema,
        querystring: noQuerySchema,
        response: { 200: successSchema(attributeItemSchema), 404: errorBodySchema, ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const { name } = request.params;
      const item = await getOwnAttribute(ctx, callerOf(request), user.id, name);
      return ok(reply, item);
    },
  );

  app.put(
    '/v1/attributes/:name',
    {
      ...common,
      onError: auditRejectedUpdate(ctx),
      schema: {
        tags,
        security,
        summary: 'Create or correct a user attribute (validated, then encrypted with the user key)',
        params: attributeParamsSchema,
        querystring: noQuerySchema,
        body: putAttributeBodySchema,
        response: {
          200: successSchema(putAttributeResponseSchema),
          403: errorBodySchema,
          404: errorBodySchema,
          ...USER_ROUTE_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const { name } = request.params;
      const body = request.body;
      const written = await writeOwnAttribute(ctx, callerOf(request), user.id, {
        name,
        value: body.value,
        clientEncrypted: body.encrypted === true,
        validFrom: toMs(body.valid_from),
        validUntil: toMs(body.valid_until),
      });
      return ok(reply, written);
    },
  );

  app.delete(
    '/v1/attributes/:name',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Delete a user attribute',
        params: attributeParamsSchema,
        querystring: noQuerySchema,
        response: {
          200: successSchema(deleteAttributeResponseSchema),
          403: errorBodySchema,
          404: errorBodySchema,
          ...USER_ROUTE_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const { name } = request.params;
      await deleteOwnAttribute(ctx, callerOf(request), user.id, name);
      return ok(reply, { name, deleted: true as const });
    },
  );
};
