import { describe, expect, it } from 'vitest';
import { type KioskConnection, KioskRegistry } from './kiosk-registry.ts';

const kiosk = (pvsId: string, vendorId: string | null): KioskConnection => ({ pvsId, vendorId });

/**
 * `countServing` (kept per vendor on register and unregister) always equals the kiosks a plain model says
 * are connected (the latest registration per pvs id, until its own unregister) and serve the vendor.
 */
describe('KioskRegistry.countServing', () => {
  it('counts bound and unbound kiosks through connects, replacements and disconnects', () => {
    const r = new KioskRegistry();
    const connected = new Map<string, KioskConnection>();
    const register = (k: KioskConnection) => {
      const off = r.register(k);
      connected.set(k.pvsId, k);
      return () => {
        off();
        if (connected.get(k.pvsId) === k) connected.delete(k.pvsId);
      };
    };
    const check = () => {
      for (const v of ['a', 'b', 'c']) {
        const serving = [...connected.values()].filter((k) => k.vendorId === v || k.vendorId === null);
        expect(r.countServing(v), v).toBe(serving.length);
      }
    };
    check();
    const offA1 = register(kiosk('p1', 'a'));
    const offFree = register(kiosk('p2', null));
    register(kiosk('p3', 'b'));
    check();
    expect(r.countServing('a')).toBe(2);
    // the same kiosk reconnects (now bound to b) before its old socket is gone: counted once, for b
    const offB1 = register(kiosk('p1', 'b'));
    check();
    expect(r.countServing('a')).toBe(1);
    expect(r.countServing('b')).toBe(3);
    offA1(); // the old socket's unregister must not remove the new connection
    check();
    expect(r.countServing('b')).toBe(3);
    offB1();
    offFree();
    offFree();
    check();
    expect(r.countServing('b')).toBe(1);
    expect(r.countServing('a')).toBe(0);
  });
});
