/**
 * Kiosks connected to this instance, by pvs id. A kiosk bound to a vendor serves that vendor's contexts;
 * an unbound one serves enrolment and any vendor's (docs/websocket.md).
 */
export interface KioskConnection {
  pvsId: string;
  vendorId: string | null;
  send(message: unknown): void;
}

export class KioskRegistry {
  readonly #kiosks = new Map<string, KioskConnection>();

  register(k: KioskConnection): () => void {
    this.#kiosks.set(k.pvsId, k);
    return () => {
      if (this.#kiosks.get(k.pvsId) === k) this.#kiosks.delete(k.pvsId);
    };
  }

  byId(pvsId: string): KioskConnection | undefined {
    return this.#kiosks.get(pvsId);
  }

  servingVendor(vendorId: string): KioskConnection[] {
    return [...this.#kiosks.values()].filter((k) => k.vendorId === vendorId || k.vendorId === null);
  }
}
