import type { FastifyPluginAsync } from 'fastify';
import { healthRoutes } from './modules/health/routes.ts';

/** Every route module, in one list: find an endpoint in modules/<domain>/routes.ts. */
export const ROUTE_MODULES: FastifyPluginAsync[] = [healthRoutes];
