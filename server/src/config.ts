import { readFileSync } from 'node:fs';
import { DEFAULT_TARGET_FPIR } from '@palmid/palm/decision';
import { matchThresholdFor } from '@palmid/palm/threshold';
import { z } from 'zod';

/**
 * Server configuration: one schema; defaults → config file (PALMID_CONFIG, JSON) → environment → flags.
 * Bad configuration stops start-up with one line naming the key.
 */
export const ENVIRONMENTS = ['development', 'sandbox', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

const portSchema = z.coerce.number().int().min(0).max(65535);

/** One OpenID Connect issuer whose ID tokens `POST /v1/attributes/import` accepts (docs/user-api.md). */
export const oidcIssuerSchema = z
  .object({
    issuer: z.string().url(),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** A JWKS object, an http(s) URL, or a path to a JWKS JSON file. */
    jwks: z.union([
      z.string().min(1),
      z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).passthrough(),
    ]),
    algorithms: z
      .array(z.enum(['RS256', 'PS256', 'ES256', 'EdDSA']))
      .min(1)
      .optional(),
  })
  .strict();
export type OidcIssuer = z.infer<typeof oidcIssuerSchema>;

/** PALMID_OIDC_ISSUERS: a JSON array, or a path to a file holding one (config file: the array itself). */
const oidcIssuersSchema = z
  .union([z.string(), z.array(z.unknown())])
  .transform((v, c) => {
    if (Array.isArray(v)) return v;
    const text = v.trim();
    try {
      return JSON.parse(text.startsWith('[') ? text : readFileSync(text, 'utf8')) as unknown;
    } catch (err) {
      c.addIssue({
        code: 'custom',
        message: `not a JSON array or a readable JSON file: ${(err as Error).message}`,
      });
      return z.NEVER;
    }
  })
  .pipe(z.array(oidcIssuerSchema));

export const configSchema = z
  .object({
    PORT: portSchema.default(8080),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z
      .string()
      .regex(/^(sqlite:.+|postgres(ql)?:\/\/.+)$/, 'must be sqlite:<path> or postgres://…')
      .default('sqlite:./data/palmid.db'),
    PALMID_ENV: z.enum(ENVIRONMENTS).default('development'),
    PALMID_MASTER_KEY: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
      .optional(),
    PALMID_KEY_FILE: z.string().min(1).default('./data/master.key'),
    /** Where the server keeps the audit anchor (docs/reliability.md); default beside PALMID_KEY_FILE. */
    PALMID_AUDIT_ANCHOR: z.string().min(1).optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\/.+/, 'must be redis://…')
      .optional(),
    /**
     * The false-positive identification rate one 1:N search may have, whatever the gallery's size
     * (CONTRACT §10; docs/palm-pipeline.md "Identification at scale"): the identification bar is
     * log10(palms searched / target) decades of evidence. Between 1e-9 and 1e-2.
     */
    PALMID_TARGET_FPIR: z.coerce
      .number()
      .min(1e-9, 'must be at least 1e-9 (below it nearly every genuine palm is refused)')
      .max(1e-2, 'must be at most 1e-2 (one stranger in a hundred matched to somebody)')
      .default(DEFAULT_TARGET_FPIR),
    /**
     * Per-comparison floor on the similarity of an identified palm and the matcher's 1:1 threshold
     * (docs/palm-pipeline.md, "Threshold for FMR 1e-4 on whole frames"); default and least value: the
     * calibrated one of PALMID_TEMPLATE_CODING (`matchThresholdFor`: 0.325 `wide`, 0.25 `fine`). The gallery-wide bar of
     * PALMID_TARGET_FPIR decides identification; this floor binds only where a site raises it for
     * its sensor (colour cameras with pegs: 0.41), never below the calibrated default. The
     * duplicate-enrolment check ignores it (`Gallery.findDuplicate`).
     */
    PALMID_MATCH_THRESHOLD: z.coerce
      .number()
      .min(0, 'must be a similarity between 0 and 0.95')
      .max(0.95, 'must be at most 0.95 (above it nearly every genuine palm is refused)')
      .optional(),
    /**
     * Gallery calibration (docs/deployment.md "Identification policy"): `on` checks the impostor
     * model the decision reads against the gallery's own different-user pairs once it holds 200
     * users (at start-up, then at every quarter's growth) and adopts a stricter fit, never a
     * looser one; `off` keeps the shipped model.
     */
    PALMID_GALLERY_CALIBRATION: z.enum(['on', 'off']).default('on'),
    /**
     * The template coding this network compares (docs/deployment.md "Identification policy"): the
     * scanners' sensor profiles must write it — `wide` (simulator and NIR profiles, the default) or
     * `fine` (the visible-light print profiles grey-dark and colour). Templates of the other coding
     * are refused with 400 `wrong_coding`; stored palms of the other coding are not searched.
     */
    PALMID_TEMPLATE_CODING: z.enum(['wide', 'fine']).default('wide'),
    PALMID_SIM: z.enum(['0', '1']).default('1'),
    PALMID_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** `pretty`: one readable line per event (default in development); `json`: one JSON object per line. */
    PALMID_LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
    PALMID_AUTH_TTL_S: z.coerce.number().int().min(1).max(3600).default(120),
    PALMID_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
    PALMID_OIDC_ISSUERS: oidcIssuersSchema.default([]),
    /** How often open sockets' credentials are re-checked against the store (docs/security.md). */
    PALMID_REVOCATION_POLL_MS: z.coerce.number().int().min(20).max(1000).default(200),
    /** Enrolments per capture device (docs/security.md): per minute and per day. */
    PALMID_ENROL_PER_MIN: z.coerce.number().int().min(1).max(10_000).default(10),
    PALMID_ENROL_PER_DAY: z.coerce.number().int().min(1).max(1_000_000).default(200),
    /**
     * Webhooks (docs/vendor-api.md, "Webhooks"): the first retry's delay (each further one doubles, up to
     * an hour, with jitter; retried for 24 h) and how often the shared outbox is polled.
     */
    PALMID_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(10_000),
    PALMID_WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
    /**
     * Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed (comma separated);
     * empty: none. Per-IP limits then count the real client, not the proxy.
     */
    PALMID_TRUST_PROXY: z
      .string()
      .regex(/^[0-9a-fA-F.:/,\s]*$/, 'must be IP addresses or CIDR ranges, comma separated')
      .default(''),
  })
  .strict();

/** The configuration once loaded: the match threshold resolved for the template coding. */
export type Config = z.infer<typeof configSchema> & { PALMID_MATCH_THRESHOLD: number };
const KEYS = Object.keys(configSchema.shape) as (keyof Config)[];

export class ConfigError extends Error {
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`Invalid configuration ${key}: ${reason}`);
    this.name = 'ConfigError';
  }
}

function pickKnown(source: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of KEYS) {
    const v = source[k];
    if (v !== undefined && v !== '') out[k] = v;
  }
  return out;
}

export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  flags: Partial<Record<keyof Config, unknown>> = {},
): Config {
  let fileValues: Record<string, unknown> = {};
  const file = env.PALMID_CONFIG;
  if (file) {
    try {
      const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new ConfigError('PALMID_CONFIG', `${file} must hold a JSON object`);
      }
      fileValues = parsed as Record<string, unknown>;
      const unknownKey = Object.keys(fileValues).find((k) => !KEYS.includes(k as keyof Config));
      if (unknownKey) throw new ConfigError(unknownKey, `unknown key in ${file}`);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError('PALMID_CONFIG', `cannot read ${file}: ${(err as Error).message}`);
    }
  }
  const merged = { ...pickKnown(fileValues), ...pickKnown(env), ...pickKnown(flags) };
  const result = configSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new ConfigError(String(issue.path[0] ?? 'config'), issue.message);
  }
  const floor = matchThresholdFor(result.data.PALMID_TEMPLATE_CODING);
  const threshold = result.data.PALMID_MATCH_THRESHOLD ?? floor;
  if (threshold < floor)
    throw new ConfigError(
      'PALMID_MATCH_THRESHOLD',
      `must be at least the calibrated default ${floor} of the ${result.data.PALMID_TEMPLATE_CODING} template coding (raise it, never lower it)`,
    );
  for (const issuer of result.data.PALMID_OIDC_ISSUERS) {
    const refused =
      typeof issuer.jwks === 'string' ? jwksUrlRefusal(issuer.jwks, result.data.PALMID_ENV) : null;
    if (refused) throw new ConfigError('PALMID_OIDC_ISSUERS', `${issuer.issuer}: jwks ${refused}`);
  }
  return { ...result.data, PALMID_MATCH_THRESHOLD: threshold };
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Why a JWKS location is refused, or null: an issuer's keys are fetched over `https://` only (a key set read
 * over plain HTTP could be swapped on the way); `http://` on a loopback address is allowed in
 * `development` (a local test identity provider). A string without a scheme is a file path.
 */
export function jwksUrlRefusal(jwks: string, env: Environment): string | null {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(jwks)?.[1]?.toLowerCase();
  if (scheme === undefined || scheme === 'https') return null;
  if (scheme === 'http' && env === 'development') {
    try {
      if (LOOPBACK_HOSTS.has(new URL(jwks).hostname)) return null;
    } catch {
      return 'is not a valid URL';
    }
  }
  return 'must be an https:// URL (http:// only on a loopback address in development)';
}
