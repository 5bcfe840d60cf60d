import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { anchorPath } from '@palmid/server/modules/audit/anchor';
import { describe, expect, it } from 'vitest';

/**
 * docs/deployment.md against the README and the code: the operator reads both, and a unit file copied
 * from the docs must be able to write what the server writes.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const deployment = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const unit =
  /`\/etc\/systemd\/system\/palmid\.service`:\n\n```ini\n([\s\S]*?)```/.exec(deployment)?.[1] ?? '';
const envOf = (name: string) => new RegExp(`^Environment=${name}=(.+)$`, 'm').exec(unit)?.[1];

describe('docs/deployment.md', () => {
  it('has the systemd unit', () => {
    expect(unit).toMatch(/ExecStart=/);
  });

  it("the unit's audit anchor is in a path the unit may write (ProtectSystem=strict)", () => {
    expect(unit).toMatch(/^ProtectSystem=strict$/m);
    const writable = /^ReadWritePaths=(.+)$/m.exec(unit)![1]!.split(/\s+/);
    const anchor = envOf('PALMID_AUDIT_ANCHOR');
    expect(anchor).toBeDefined();
    // what the server would use with that setting and a PostgreSQL URL
    const used = anchorPath({
      PALMID_AUDIT_ANCHOR: anchor,
      PALMID_KEY_FILE: './data/master.key',
      DATABASE_URL: 'postgres://palmid@db.internal:5432/palmid',
    });
    expect(writable.some((w) => dirname(used) === w || dirname(used).startsWith(`${w}/`))).toBe(true);
    // without it the default is beside the key file, under the (read-only) working directory
    const fallback = anchorPath({
      PALMID_AUDIT_ANCHOR: undefined,
      PALMID_KEY_FILE: './data/master.key',
      DATABASE_URL: 'postgres://palmid@db.internal:5432/palmid',
    });
    expect(fallback).toMatch(/^data\/audit-anchor\.db\.internal-5432-palmid-[0-9a-f]{8}\.json$/);
    expect(deployment).toContain('audit-anchor.<host>-<port>-<db>-<hash>.json');
  });

  it('agrees with the README on PALMID_TRUST_PROXY', () => {
    expect(readme).toMatch(/`PALMID_TRUST_PROXY`/);
    expect(deployment).toMatch(/`PALMID_TRUST_PROXY`/);
    expect(envOf('PALMID_TRUST_PROXY')).toMatch(/^[0-9a-fA-F.:/,]+$/);
    expect(deployment).not.toMatch(/does not trust `X-Forwarded-For`/);
  });

  it('gives the PostgreSQL steps: role, database, supported version, sslmode', () => {
    expect(deployment).toMatch(/CREATE ROLE palmid LOGIN/);
    expect(deployment).toMatch(/CREATE DATABASE palmid OWNER palmid/);
    expect(deployment).toMatch(/Supported: PostgreSQL \d+ or newer/);
    expect(deployment).toMatch(/sslmode=verify-full/);
  });
});
