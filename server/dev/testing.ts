import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attestCapture,
  type CaptureAttestation,
  type CapturePurpose,
  generateDeviceKey,
  publicKeyToString,
} from '@palmid/contracts/crypto/capture';
import { ExactGallery, ExactMatcher } from '@palmid/palm/gallery/exact';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { buildApp } from '../src/app.ts';
import { type ContextOverrides, closeContext, createContext } from '../src/bootstrap.ts';
import { type Config, loadConfig } from '../src/config.ts';
import type { AppContext } from '../src/context.ts';
import { createScratchDatabase, type ScratchDatabase } from '../src/db/scratch.ts';
import { bindOnHello } from '../src/modules/devices/service.ts';
import { createPvs } from '../src/modules/pvs/service.ts';
import { createUser, issueUserToken } from '../src/modules/users/service.ts';
import { createVendor } from '../src/modules/vendors/service.ts';

export { ExactGallery, ExactMatcher };

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  dir: string;
  close(): Promise<void>;
}

/**
 * A test app on a fresh store: SQLite in a temp dir, or, when `PALMID_TEST_DATABASE_URL` names a PostgreSQL
 * server (`npx tsx test/support/run-on-postgres.ts <vitest args>` sets it), a fresh database there.
 */
export async function createTestApp(
  env: Partial<Record<keyof Config, string>> = {},
  now?: () => number,
  overrides: Omit<ContextOverrides, 'now'> = {},
): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-test-'));
  const pgServer = process.env.PALMID_TEST_DATABASE_URL;
  let scratch: ScratchDatabase | undefined;
  if (!env.DATABASE_URL && pgServer) scratch = await createScratchDatabase(pgServer);
  const config = loadConfig({
    DATABASE_URL: scratch?.url ?? `sqlite:${join(dir, 'palmid.db')}`,
    PALMID_KEY_FILE: join(dir, 'master.key'),
    PALMID_ENV: 'development',
    ...env,
  });
  const matcher = new ExactMatcher();
  const ctx = await createContext(config, {
    matcher,
    gallery: new ExactGallery(),
    ...overrides,
    ...(now ? { now } : {}),
  });
  const app = await buildApp(ctx);
  await app.ready();
  return {
    app,
    ctx,
    dir,
    async close() {
      await app.close();
      await closeContext(ctx);
      await scratch?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function seedVendor(ctx: AppContext, name = 'Cafe X', scopes?: ('auth' | 'users')[]) {
  return createVendor(ctx.database.db, {
    name,
    url: `https://${name.toLowerCase().replace(/\W+/g, '-')}.example`,
    ...(scopes ? { scopes } : {}),
  });
}

export async function seedUser(ctx: AppContext) {
  const user = await createUser(ctx, ctx.database.db, null);
  const token = await issueUserToken(ctx, ctx.database.db, user.id);
  return { userId: user.id, token: token.user_token, ledgerId: user.ledgerId };
}

export interface Sample {
  template?: string;
  hand?: 'left' | 'right' | undefined;
  quality?: number;
  liveness?: number;
}

/**
 * A capture device as tests need one: its own Ed25519 key (as the agent makes it) and a counter; signs
 * samples the way the agent does (shared/contracts/src/crypto/capture.ts).
 */
export class TestDevice {
  readonly key = generateDeviceKey();
  counter = 0;

  constructor(readonly pvsId: string) {}

  get publicKey(): string {
    return publicKeyToString(this.key.publicKey);
  }

  attest(
    purpose: CapturePurpose,
    subject: string,
    nonce: string | undefined,
    sample: Sample,
    capturedAt = Date.now(),
  ): CaptureAttestation {
    this.counter += 1;
    return attestCapture({
      privateKey: this.key.privateKey,
      purpose,
      deviceId: this.pvsId,
      subject,
      nonce,
      template:
        sample.template === undefined ? undefined : new Uint8Array(Buffer.from(sample.template, 'base64')),
      hand: sample.hand,
      quality: sample.quality ?? 0.9,
      liveness: sample.liveness ?? 0.9,
      capturedAt,
      counter: this.counter,
    });
  }

  /** A palm for `POST /api/v1/auth`, attested by this device (a fresh capture id, no server nonce). */
  direct<T extends Sample>(
    palm: T,
    capturedAt = Date.now(),
  ): T & { quality: number; liveness: number; attestation: CaptureAttestation } {
    const full = { ...palm, quality: palm.quality ?? 0.9, liveness: palm.liveness ?? 0.9 };
    return { ...full, attestation: this.attest('direct', randomUUID(), undefined, full, capturedAt) };
  }
}

/**
 * `mpc/users/create` / `update` palms attested by `device` (purpose `register`: one capture id for the
 * request, increasing counters), as a vendor's capture host signs them.
 */
export function attestPalms<T extends Sample & { template: string }>(
  device: TestDevice,
  palms: T[],
  capturedAt = Date.now(),
): (T & { quality: number; liveness: number; attestation: CaptureAttestation })[] {
  const subject = randomUUID();
  return palms.map((p) => {
    const full = { ...p, quality: p.quality ?? 0.9, liveness: p.liveness ?? 0.9 };
    return { ...full, attestation: device.attest('register', subject, undefined, full, capturedAt) };
  });
}

/** Binds a new test device's key to a kiosk made with `createPvs` (what the agent's first hello does). */
export async function provisionDevice(
  ctx: AppContext,
  pvs: { pvs_id: string; provisioning_secret: string },
): Promise<TestDevice> {
  const device = new TestDevice(pvs.pvs_id);
  await bindOnHello(
    ctx.database.db,
    pvs.pvs_id,
    { public_key: device.publicKey, provisioning_secret: pvs.provisioning_secret },
    ctx.now(),
  );
  return device;
}

/** An integrator's capture host registered to `vendorId` (`admin pvs create --vendor`), key bound. */
export async function vendorDevice(
  ctx: AppContext,
  vendorId: string,
  name = 'capture host',
): Promise<TestDevice> {
  return provisionDevice(ctx, await createPvs(ctx.database.db, { name, vendorId }));
}

/** A `POST /api/v1/auth` body with its palm attested by `device` (bodies without a palm unchanged). */
export function attestBody<T>(device: TestDevice, body: T, capturedAt = Date.now()): T {
  const b = body as { palm?: Sample };
  if (!b || typeof b !== 'object' || !b.palm || typeof b.palm !== 'object') return body;
  return { ...b, palm: device.direct(b.palm, capturedAt) } as T;
}

/** A minimal JSON-frame WebSocket client (kiosk or vendor side). */
export class FrameClient {
  readonly frames: Record<string, unknown>[] = [];
  readonly #waiters: {
    pred: (f: Record<string, unknown>) => boolean;
    resolve: (f: Record<string, unknown>) => void;
  }[] = [];

  /** The latest nonce of each `scan.request` this (kiosk) socket received, by auth_id. */
  readonly nonces = new Map<string, string>();
  readonly #nonceWaiters: { authId: string; resolve: (nonce: string) => void }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const f = JSON.parse(d.toString()) as Record<string, unknown>;
      if (f.method === 'scan.request') {
        const p = f.params as { auth_id: string; nonce: string };
        this.nonces.set(p.auth_id, p.nonce);
        for (const n of this.#nonceWaiters.filter((x) => x.authId === p.auth_id)) {
          this.#nonceWaiters.splice(this.#nonceWaiters.indexOf(n), 1);
          n.resolve(p.nonce);
        }
      }
      const w = this.#waiters.find((x) => x.pred(f));
      if (w) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(f);
      } else this.frames.push(f);
    });
  }

  static async open(url: string, headers: Record<string, string>): Promise<FrameClient> {
    const ws = new WebSocket(url, { headers });
    const c = new FrameClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return c;
  }

  next(pred: (f: Record<string, unknown>) => boolean, timeoutMs = 5000): Promise<Record<string, unknown>> {
    const found = this.frames.find(pred);
    if (found) {
      this.frames.splice(this.frames.indexOf(found), 1);
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out waiting for a frame')), timeoutMs);
      this.#waiters.push({
        pred,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      });
    });
  }

  async call(id: string, method: string, params: unknown): Promise<Record<string, unknown>> {
    this.ws.send(JSON.stringify({ id, method, params }));
    return this.next((f) => f.id === id);
  }

  /** The nonce of the `scan.request` for `authId` (waits for it). */
  nonceFor(authId: string, timeoutMs = 5000): Promise<string> {
    const known = this.nonces.get(authId);
    if (known) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no scan.request for ${authId}`)), timeoutMs);
      this.#nonceWaiters.push({
        authId,
        resolve: (n) => {
          clearTimeout(timer);
          resolve(n);
        },
      });
    });
  }

  /** `hello` with the device's public key (and the provisioning secret, which binds it the first time). */
  hello(
    id: string,
    device: TestDevice,
    extra: {
      provisioning_secret?: string;
      mode?: 'kiosk' | 'enrol' | 'check';
      capabilities?: 'step_up'[];
    } = {},
  ): Promise<Record<string, unknown>> {
    const { provisioning_secret, ...rest } = extra;
    return this.call(id, 'hello', {
      pvs_id: device.pvsId,
      agent_version: 'test',
      firmware: 'test',
      model: 'test',
      ...rest,
      device_key: { public_key: device.publicKey, ...(provisioning_secret ? { provisioning_secret } : {}) },
    });
  }

  /**
   * The params of an `identify` for a context pushed to this socket, attested by `device` with the
   * context's nonce: one frame a test may send more than once (a kiosk's retry, a replay).
   */
  async identifyFrame(
    device: TestDevice,
    params: Sample & { auth_id: string; capturedAt?: number },
  ): Promise<Record<string, unknown>> {
    const nonce = await this.nonceFor(params.auth_id);
    const { capturedAt, ...rest } = params;
    const sample = { hand: 'right' as const, quality: 0.9, liveness: 0.9, ...rest };
    return { ...sample, attestation: device.attest('identify', params.auth_id, nonce, sample, capturedAt) };
  }

  /** `identify` for a context pushed to this socket, attested by `device` with the context's nonce. */
  async identify(
    id: string,
    device: TestDevice,
    params: Sample & { auth_id: string; capturedAt?: number },
  ): Promise<Record<string, unknown>> {
    return this.call(id, 'identify', await this.identifyFrame(device, params));
  }

  /** `enroll.begin`, then `enroll` with every sample attested by `device`. */
  async enroll(
    id: string,
    device: TestDevice,
    samples: [Sample & { template: string }, ...(Sample & { template: string })[]],
    extra: { confirmation_code?: string } = {},
  ): Promise<Record<string, unknown>> {
    const begun = await this.call(`${id}:begin`, 'enroll.begin', {});
    const b = begun.result as { enrolment_id: string; nonce: string } | undefined;
    if (!b) return begun;
    const signed = samples.map((s) => {
      const sample = { hand: 'right' as const, quality: 0.9, liveness: 0.9, ...s };
      return { ...sample, attestation: device.attest('enroll', b.enrolment_id, b.nonce, sample) };
    });
    const [first, ...rest] = signed;
    return this.call(id, 'enroll', { ...first, ...(rest.length > 0 ? { samples: rest } : {}), ...extra });
  }

  close(): void {
    this.ws.close();
  }
}
