import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  createAuthContext,
  kioskAgentEnv,
  lastJson,
  type Proc,
  run,
  type ServerProc,
  type SimProc,
  sqliteServerEnv,
  start,
  startServer,
  startSim,
  tempDir,
  VendorSocket,
} from './harness.ts';

/**
 * The product's real flow across real processes on loopback: server (SQLite file), firmware simulator
 * (TCP device + control port) and agent (enroll, then the `run` daemon).
 */
describe('kiosk end to end', () => {
  const tmp = tempDir('palmid-e2e-');
  const serverEnv = sqliteServerEnv(tmp.dir);
  let server: ServerProc;
  let sim: SimProc;
  let agent: Proc | undefined;
  let vendor: { vendor_id: string; api_key: string };
  let kiosk: { pvs_id: string; device_token: string; provisioning_secret: string };
  let userToken: string;
  let ledgerId: string;
  let agentEnv: Record<string, string>;
  let vws: VendorSocket;

  const admin = async <T>(...args: string[]) =>
    lastJson<T>(
      await run('server/src/cli/admin.ts', ['--json', ...args], {
        DATABASE_URL: serverEnv.DATABASE_URL,
        PALMID_KEY_FILE: serverEnv.PALMID_KEY_FILE,
      }),
    );

  const startAgent = () => {
    agent = start('agent/src/cli/main.ts', ['run'], agentEnv, 'agent');
    return agent.waitFor(/connected to /, 60_000);
  };

  /** The previous person withdraws the hand; the next one walks up when the scanner is armed. */
  const walkUp = async (who: Record<string, unknown>) => {
    await sim.post('/remove');
    await sim.autoPresent(who);
  };

  const createContext = (ctx: Record<string, unknown>) => createAuthContext(server.base, vendor.api_key, ctx);

  beforeAll(async () => {
    server = await startServer(serverEnv);
    vendor = await admin('vendor', 'create', '--name', 'Cafe X', '--url', 'https://cafe-x.example');
    kiosk = await admin('pvs', 'create', '--name', 'front desk');
    sim = await startSim(['--capture-ms', '100']);
    agentEnv = kioskAgentEnv(`${tmp.dir}/agent.json`, sim, server.base, kiosk);
  }, 120_000);

  afterAll(async () => {
    vws?.close();
    await agent?.stop();
    await sim?.stop();
    await server?.stop();
    tmp.remove();
  });

  it('enrols at the kiosk and redeems the claim code for a user token', async () => {
    await walkUp({ identity: 'alice', hand: 'right' });
    const out = await run(
      'agent/src/cli/main.ts',
      ['enroll', '--hands', 'right', '--samples', '2', '--json'],
      agentEnv,
      90_000,
    );
    const { claim_code } = lastJson<{ claim_code: string }>(out);
    expect(claim_code).toMatch(/^[A-Z2-9]{5}-[A-Z2-9]{5}$/);
    const session = await api(server.base, 'POST', '/v1/session', { body: { claim_code } });
    expect(session.status).toBe(200);
    userToken = session.body.data.user_token as string;
    const again = await api(server.base, 'POST', '/v1/session', { body: { claim_code } });
    expect(again.status).toBe(401);
  }, 120_000);

  it('user sets attributes and consents to the vendor', async () => {
    for (const [name, value] of [
      ['email', 'alice@example.com'],
      ['date_of_birth', '1990-04-01'],
      ['phone', '+4915112345678'],
    ]) {
      const res = await api(server.base, 'PUT', `/v1/attributes/${name}`, {
        token: userToken,
        body: { value },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const consent = await api(server.base, 'POST', '/v1/consents', {
      token: userToken,
      body: {
        vendor_id: vendor.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }],
      },
    });
    expect(consent.status).toBe(201);
  });

  it('at a kiosk bound to the vendor, agent enroll --code adds the user’s left palm (attested, with the user’s code)', async () => {
    const till = await admin<{ pvs_id: string; device_token: string; provisioning_secret: string }>(
      'pvs',
      'create',
      '--name',
      'till',
      '--vendor',
      vendor.vendor_id,
    );
    const confirm = await api(server.base, 'POST', '/v1/palms/confirm', { token: userToken });
    expect(confirm.status).toBe(201);
    await walkUp({ identity: 'alice', hand: 'left' });
    const out = await run(
      'agent/src/cli/main.ts',
      [
        'enroll',
        '--hands',
        'left',
        '--samples',
        '1',
        '--code',
        confirm.body.data.confirmation_code as string,
        '--json',
      ],
      kioskAgentEnv(`${tmp.dir}/till.json`, sim, server.base, till),
      90_000,
    );
    expect(lastJson(out)).toEqual({ added: true, hands: ['left'] });
  }, 120_000);

  it('vendor payment: the palm is presented and the vendor receives exactly the consented attributes', async () => {
    await startAgent();
    vws = await VendorSocket.open(server.base, vendor.api_key);
    await walkUp({ identity: 'alice', hand: 'right' });
    const authId = await createContext({
      type: 'payment',
      amount: 1250,
      attributes_optional: ['email', 'phone'],
    });
    const done = await vws.until(authId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.auth_result).toMatchObject({ success: true, attributes: { email: 'alice@example.com' } });
    expect(done.auth_result!.attributes).not.toHaveProperty('phone');
    ledgerId = done.auth_result!.ledger_id as string;
    const from = Math.floor(Date.now() / 1000) - 600;
    const ledger = await api<{ transactions: string[] }>(
      server.base,
      'GET',
      `/api/v1/ledger/transactions/${ledgerId}?from=${from}`,
      { key: vendor.api_key },
    );
    expect(ledger.status).toBe(200);
    const txs = ledger.body.transactions.map((h) => JSON.parse(Buffer.from(h, 'hex').toString('utf8')));
    expect(
      txs.some(
        (t: { 'context-id': string; result: { code: string } }) =>
          t['context-id'] === authId && t.result.code === 'ok',
      ),
    ).toBe(true);
  }, 60_000);

  it('an unknown palm ends in no_match', async () => {
    await walkUp({ identity: 'stranger', hand: 'right' });
    const authId = await createContext({ type: 'login' });
    const done = await vws.until(authId, ['completed', 'failed']);
    expect(done.auth_result).toMatchObject({ success: false, reason: 'no_match' });
  }, 60_000);

  it('a printed photo of an enrolled palm ends in liveness_failed', async () => {
    await walkUp({ identity: 'alice', hand: 'right', attack: 'print' });
    const authId = await createContext({ type: 'login' });
    const done = await vws.until(authId, ['completed', 'failed']);
    expect(done.auth_result).toMatchObject({ success: false, reason: 'liveness_failed' });
  }, 60_000);

  it('a required attribute without consent ends in consent_missing', async () => {
    await walkUp({ identity: 'alice', hand: 'right' });
    const authId = await createContext({
      type: 'payment',
      amount: 100,
      attributes_required: ['email', 'phone'],
    });
    const done = await vws.until(authId, ['completed', 'failed']);
    expect(done.auth_result).toMatchObject({ success: false, reason: 'consent_missing', missing: ['phone'] });
  }, 60_000);

  it('cancel while the kiosk waits for a palm, and expiry', async () => {
    await walkUp({ off: true });
    const a = await createContext({ type: 'login' });
    await vws.until(a, ['scanning']);
    const cancel = await api(server.base, 'POST', `/api/v1/auth/${a}/cancel`, { key: vendor.api_key });
    expect(cancel.body.data).toEqual({ auth_id: a, status: 'cancelled' });
    expect((await vws.until(a, ['cancelled'])).auth_result).toMatchObject({ reason: 'cancelled' });
    const b = await createContext({ type: 'login', expires_in_s: 2 });
    expect((await vws.until(b, ['expired'], 15_000)).auth_result).toMatchObject({ reason: 'expired' });
  }, 60_000);

  it('server restart mid-flow: the agent reconnects and a context created while it was away completes', async () => {
    await walkUp({ off: true });
    const dueDuringOutage = await createContext({ type: 'login', expires_in_s: 3 });
    await server.stop('SIGKILL');
    await new Promise((r) => setTimeout(r, 3500));
    server = await startServer({ ...serverEnv, PORT: String(server.port) });
    // the deadline is stored: a context that fell due while the server was down is expired after restart
    const expired = await api(server.base, 'GET', `/api/v1/auth/${dueDuringOutage}/status`, {
      key: vendor.api_key,
    });
    expect(expired.body.data).toMatchObject({ status: 'expired', auth_result: { reason: 'expired' } });
    const reconnects = () => agent!.output.filter((l) => /connected to /.test(l)).length;
    const before = reconnects();
    const deadline = Date.now() + 45_000;
    while (reconnects() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(reconnects()).toBeGreaterThan(before);
    vws.close();
    vws = await VendorSocket.open(server.base, vendor.api_key);
    await walkUp({ identity: 'alice', hand: 'right' });
    const authId = await createContext({ type: 'login' });
    const done = await vws.until(authId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
  }, 90_000);

  it('the GDPR export holds the attributes and the ledger, and erasure ends identification', async () => {
    const exp = await api(server.base, 'GET', '/v1/gdpr/export?format=json', { token: userToken });
    expect(exp.status).toBe(200);
    expect(JSON.stringify(exp.body)).toContain('alice@example.com');
    const del = await api(server.base, 'DELETE', '/v1/gdpr/delete-me', { token: userToken });
    expect(del.status).toBe(200);
    expect((await api(server.base, 'GET', '/v1/attributes', { token: userToken })).status).toBe(401);
    await walkUp({ identity: 'alice', hand: 'right' });
    const authId = await createContext({ type: 'login' });
    const done = await vws.until(authId, ['completed', 'failed']);
    expect(done.auth_result).toMatchObject({ reason: 'no_match' });
  }, 60_000);
});
