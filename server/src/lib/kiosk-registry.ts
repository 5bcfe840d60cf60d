/**
 * Kiosks connected to this instance, by pvs id. A kiosk bound to a vendor serves that vendor's contexts;
 * an unbound one serves enrolment and any vendor's (docs/websocket.md).
 */
export interface KioskConnection {
  pvsId: string;
  vendorId: string | null;
}

export class KioskRegistry {
  readonly #kiosks = new Map<string, KioskConnection>();
  /** Connected kiosks per bound vendor (key: vendor id) and unbound (key: null), for `countServing`. */
  readonly #counts = new Map<string | null, number>();

  register(k: KioskConnection): () => void {
    const replaced = this.#kiosks.get(k.pvsId);
    if (replaced !== undefined) this.#count(replaced.vendorId, -1);
    this.#kiosks.set(k.pvsId, k);
    this.#count(k.vendorId, 1);
    return () => {
      if (this.#kiosks.get(k.pvsId) !== k) return;
      this.#kiosks.delete(k.pvsId);
      this.#count(k.vendorId, -1);
    };
  }

  /**
   * Connected kiosks bound to the vendor plus unbound ones, kept as counts so that `GET /api/v1/status`
   * (which asks it per request) does not walk the kiosks.
   */
  countServing(vendorId: string): number {
    return (this.#counts.get(vendorId) ?? 0) + (this.#counts.get(null) ?? 0);
  }

  #count(vendorId: string | null, by: number): void {
    const n = (this.#counts.get(vendorId) ?? 0) + by;
    if (n === 0) this.#counts.delete(vendorId);
    else this.#counts.set(vendorId, n);
  }
}
