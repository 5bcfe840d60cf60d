import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { AppContext } from './context.ts';
import { registerAuth } from './plugins/app/auth.ts';
import { pickRequestId } from './plugins/app/envelope.ts';
import { registerErrorHandling } from './plugins/app/errors.ts';
import { ROUTE_MODULES } from './routes.ts';

export const BODY_LIMIT = 1024 * 1024;

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}

/** Builds the HTTP application without listening (tests use `app.inject`, server.ts listens). */
export async function buildApp(
  ctx: AppContext,
  opts: { logger?: FastifyServerOptions['logger'] } = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit: BODY_LIMIT,
    trustProxy: false,
    requestIdHeader: false,
    genReqId: (req) => pickRequestId(req.headers['x-request-id']) ?? crypto.randomUUID(),
    routerOptions: { ignoreTrailingSlash: true },
  });
  app.decorate('ctx', ctx);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  registerAuth(app, ctx);

  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'palmid',
        description:
          'Palm-biometric identity and authentication network. Vendor API under /api/v1 (X-API-Key), user API under /v1 (Bearer token).',
        version: ctx.version,
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  await app.register(fastifyWebsocket, { options: { maxPayload: 64 * 1024 } });

  for (const register of ROUTE_MODULES) await app.register(register);
  return app;
}
