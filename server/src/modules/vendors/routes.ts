import { vendorListSchema, vendorParamsSchema, vendorPublicSchema } from '@palmid/contracts/api/vendors';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import { AppError } from '@palmid/contracts/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok } from '../../plugins/app/envelope.ts';
import { getVendor, listVendors } from './service.ts';

const toPublic = (v: { id: string; name: string; url: string }) => ({
  vendor_id: v.id,
  name: v.name,
  url: v.url,
});

/**
 * The vendor directory for users: display names for consents and the audit trail ("Cafe X read your
 * email"), and the vendors a consent can be granted to. Never keys, scopes or modes.
 */
export const vendorDirectoryRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  const common = { config: { auth: 'user' as const, rate: 'user' as const } };
  const tags = ['vendors'];
  const security = [{ bearer: [] }];

  app.get(
    '/v1/vendors',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Vendors a user can grant consent to (id, name, url)',
        response: { 200: successSchema(vendorListSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (_request, reply) => {
      const vendors = await listVendors(ctx.database.db);
      return ok(reply, { vendors: vendors.map(toPublic) });
    },
  );

  app.get(
    '/v1/vendors/:vendor_id',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'One vendor by id (id, name, url)',
        params: vendorParamsSchema,
        response: { 200: successSchema(vendorPublicSchema), 404: errorBodySchema, ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const vendor = await getVendor(ctx.database.db, request.params.vendor_id);
      if (!vendor) {
        throw new AppError('NOT_FOUND', 'No such vendor', { field: 'vendor_id', reason: 'unknown' });
      }
      return ok(reply, toPublic(vendor));
    },
  );
};
