import { AppError } from '@palmid/shared/errors.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext, Caller, UserPrincipal, VendorPrincipal, VendorScope } from '../../context.ts';
import { applyRateDecision, type RateBucket } from '../../lib/rate-limits.ts';
import { CredentialGuard } from './credential-guard.ts';
import { VerifiedKeyCache } from './key-cache.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route. Default: none. */
    auth?: 'vendor' | 'user' | 'none';
    scope?: VendorScope;
    rate?: RateBucket;
  }
  interface FastifyInstance {
    /** Verified API keys of this instance (plugins/app/key-cache.ts). */
    verifiedKeys: VerifiedKeyCache;
  }
  interface FastifyRequest {
    vendor?: VendorPrincipal;
    user?: UserPrincipal;
  }
}

export function vendorOf(request: FastifyRequest): VendorPrincipal {
  if (!request.vendor) throw new AppError('UNAUTHORIZED');
  return request.vendor;
}

export function userOf(request: FastifyRequest): UserPrincipal {
  if (!request.user) throw new AppError('UNAUTHORIZED');
  return request.user;
}

export function callerOf(request: FastifyRequest): Caller {
  const ua = request.headers['user-agent'];
  return { ip: request.ip, userAgent: typeof ua === 'string' ? ua : '' };
}

/**
 * Authentication, scope check and rate limiting run in onRequest, before the body is parsed: a caller
 * without valid credentials learns nothing about the body's validity and costs no parsing.
 */
export function registerAuth(app: FastifyInstance, ctx: AppContext): void {
  const guard = new CredentialGuard(ctx);
  const keys = new VerifiedKeyCache(ctx.database.credentials);
  app.decorate('verifiedKeys', keys);
  const checked = async <T>(
    request: FastifyRequest,
    reply: FastifyReply,
    credential: unknown,
    attempt: () => Promise<T>,
  ) => {
    try {
      return await guard.check(request.ip, credential, attempt);
    } catch (err) {
      if (err instanceof AppError && err.code === 'RATE_LIMITED') {
        reply.header('Retry-After', String((err.details as { retry_after_s: number }).retry_after_s));
      }
      throw err;
    }
  };
  const authorize = async (request: FastifyRequest, reply: FastifyReply) => {
    const cfg = request.routeOptions.config;
    if (cfg.auth === 'vendor') {
      const apiKey = request.headers['x-api-key'];
      const vendor = await checked(request, reply, apiKey, () =>
        keys.authenticate(apiKey, () => ctx.credentials.vendor(apiKey)),
      );
      request.vendor = vendor;
      if (cfg.rate) applyRateDecision(reply, await ctx.rateLimits.consume(cfg.rate, vendor.keyId));
      if (cfg.scope && !vendor.scopes.includes(cfg.scope)) {
        throw new AppError('FORBIDDEN', `This API key lacks the '${cfg.scope}' scope`, {
          reason: 'missing_scope',
          scope: cfg.scope,
        });
      }
    } else if (cfg.auth === 'user') {
      const bearer = request.headers.authorization;
      const user = await checked(request, reply, bearer, () => ctx.credentials.user(bearer));
      request.user = user;
      if (cfg.rate) applyRateDecision(reply, await ctx.rateLimits.consume(cfg.rate, user.tokenId));
    } else if (cfg.rate) {
      applyRateDecision(reply, await ctx.rateLimits.consume(cfg.rate, request.ip));
    }
  };
  // Callback style: a route with neither credentials nor a rate limit costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    const cfg = request.routeOptions.config;
    if (!cfg.auth && !cfg.rate) return done();
    authorize(request, reply).then(() => done(), done);
  });
}
