import type { FastifyPluginAsync } from 'fastify';
import { attributeRoutes } from './modules/attributes/routes.ts';
import { auditRoutes } from './modules/audit/routes.ts';
import { consentWithdrawalRoutes } from './modules/auth-contexts/consent-routes.ts';
import { authContextRoutes } from './modules/auth-contexts/routes.ts';
import { vendorSocketRoutes } from './modules/auth-contexts/ws.ts';
import { consentRoutes } from './modules/consents/routes.ts';
import { paymentRoutes } from './modules/gdpr/payments-routes.ts';
import { gdprRoutes } from './modules/gdpr/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { pvsRoutes } from './modules/kiosk-link/routes.ts';
import { ledgerRoutes } from './modules/ledger/routes.ts';
import { mpcUserRoutes } from './modules/mpc-users/routes.ts';
import { palmRoutes } from './modules/palms/routes.ts';
import { sessionRoutes } from './modules/session/routes.ts';
import { tokenRoutes } from './modules/users/routes.ts';
import { vendorDirectoryRoutes } from './modules/vendors/routes.ts';
import { verificationRoutes } from './modules/verification/routes.ts';
import { webRoutes } from './modules/web/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';

/** Every route module, in one list: find an endpoint in modules/<domain>/routes.ts. */
export const ROUTE_MODULES: FastifyPluginAsync[] = [
  healthRoutes,
  authContextRoutes,
  ledgerRoutes,
  mpcUserRoutes,
  palmRoutes,
  tokenRoutes,
  vendorSocketRoutes,
  pvsRoutes,
  attributeRoutes,
  consentRoutes,
  consentWithdrawalRoutes,
  auditRoutes,
  paymentRoutes,
  gdprRoutes,
  sessionRoutes,
  vendorDirectoryRoutes,
  webRoutes,
  verificationRoutes,
  webhookRoutes,
];
