import { AppError } from '@palmid/contracts/errors';
import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
} from 'fastify';
import type { AppContext, Caller, UserPrincipal, VendorPrincipal, VendorScope } from '../../context.ts';
import { applyRateDecision, type RateBucket, type RateDecision } from '../../lib/rate-limits.ts';
import { CredentialGuard } from './credential-guard.ts';
import { VerifiedKeyCache } from './key-cache.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route. Default: none. */
    auth?: 'vendor' | 'user' | 'none';
    scope?: VendorScope;
    rate?: RateBucket;
    /**
     * How an `Idempotency-Key` replay is answered (plugins/app/idempotency.ts): `stored` (default) sends the
     * first answer again; `rerun` runs the handler again and keeps no copy of the answer — for reads, whose
     * first answer may hold values the person has since stopped sharing.
     */
    idempotency?: 'stored' | 'rerun';
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
 *
 * The hook is attached to each route that declares `auth` or `rate` when the route is added (HEAD routes
 * that Fastify adds for GET routes included), with the route's configuration bound once: a route with
 * neither has no hook at all, and no request reads its route options (docs/performance.md). A vendor key
 * verified in memory (plugins/app/key-cache.ts) is accepted without a promise, and so is its rate-limit
 * count when the counters are in memory (lib/rate-limits.ts); with Redis the count is awaited.
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

  const hookFor = (cfg: FastifyContextConfig): onRequestHookHandler | undefined => {
    const { auth, scope, rate } = cfg;
    if (auth !== 'vendor' && auth !== 'user' && !rate) return undefined;
    /** Counts the request in the route's bucket under `key`, then checks the scope (in that order). */
    const admit = (
      key: string,
      reply: FastifyReply,
      vendor: VendorPrincipal | undefined,
      done: HookHandlerDoneFunction,
    ) => {
      if (!rate) return done(vendor ? scopeError(vendor, scope) : undefined);
      // Counted in memory: answered at once, so a key verified in memory costs this request no promise.
      const now = ctx.rateLimits.consumeNow(rate, key);
      if (now !== undefined) return counted(reply, now, vendor, scope, done);
      ctx.rateLimits
        .consume(rate, key)
        .then((decision) => counted(reply, decision, vendor, scope, done), done);
    };
    if (auth === 'vendor') {
      const verify = async (request: FastifyRequest, reply: FastifyReply, apiKey: unknown) =>
        checked(request, reply, apiKey, () => keys.remember(apiKey, () => ctx.credentials.vendor(apiKey)));
      return (request, reply, done) => {
        const apiKey = request.headers['x-api-key'];
        // An API key sent the way user tokens are: say where it goes instead of only "missing".
        if (apiKey === undefined && /^Bearer\s+sk_/i.test(request.headers.authorization ?? ''))
          return done(
            new AppError(
              'UNAUTHORIZED',
              'Send the API key in the X-API-Key header, not as Authorization: Bearer',
              {
                field: 'X-API-Key',
                reason: 'missing',
                hint: 'X-API-Key: sk_test_… (Authorization: Bearer is for user tokens, ut_…)',
              },
            ),
          );
        const hit = keys.cached(apiKey);
        if (hit) {
          request.vendor = hit;
          return admit(hit.keyId, reply, hit, done);
        }
        verify(request, reply, apiKey).then((vendor) => {
          request.vendor = vendor;
          admit(vendor.keyId, reply, vendor, done);
        }, done);
      };
    }
    if (auth === 'user') {
      return (request, reply, done) => {
        const bearer = request.headers.authorization;
        checked(request, reply, bearer, () => ctx.credentials.user(bearer)).then((user) => {
          request.user = user;
          admit(user.tokenId, reply, undefined, done);
        }, done);
      };
    }
    return (request, reply, done) => admit(request.ip, reply, undefined, done);
  };

  app.addHook('onRoute', (route) => {
    const hook = hookFor(route.config ?? {});
    if (!hook) return;
    const own = route.onRequest;
    route.onRequest = own === undefined ? [hook] : [hook, ...(Array.isArray(own) ? own : [own])];
  });
}

/** The rate-limit headers of a counted request (a refusal is the error), then the scope check. */
function counted(
  reply: FastifyReply,
  decision: RateDecision,
  vendor: VendorPrincipal | undefined,
  scope: VendorScope | undefined,
  done: HookHandlerDoneFunction,
): void {
  try {
    applyRateDecision(reply, decision);
  } catch (err) {
    done(err as Error);
    return;
  }
  done(vendor ? scopeError(vendor, scope) : undefined);
}

function scopeError(vendor: VendorPrincipal, scope: VendorScope | undefined): AppError | undefined {
  if (!scope || vendor.scopes.includes(scope)) return undefined;
  return new AppError('FORBIDDEN', `This API key lacks the '${scope}' scope`, {
    reason: 'missing_scope',
    scope,
  });
}
