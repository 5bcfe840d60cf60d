import type { Db } from './index.ts';

/**
 * Walks a table in key order, one batch per short transaction (the re-seal steps of a master-key
 * rotation, ops/rotate-master.ts): `page` reads the rows after a key, `each` handles one row inside the
 * batch's transaction. A rerun after an interruption starts again from the beginning; `each` must skip
 * rows that are already done.
 */
export async function inBatches<R>(
  db: Db,
  opts: {
    batch: number;
    page: (after: string, limit: number) => Promise<R[]>;
    key: (row: R) => string;
    each: (trx: Db, row: R) => Promise<void>;
    /** after each batch, with how many rows were handled so far */
    progress?: (done: number) => void;
  },
): Promise<void> {
  let done = 0;
  for (let after = ''; ; ) {
    const rows = await opts.page(after, opts.batch);
    if (rows.length === 0) return;
    await db.transaction().execute(async (trx) => {
      for (const r of rows) await opts.each(trx, r);
    });
    done += rows.length;
    after = opts.key(rows.at(-1)!);
    opts.progress?.(done);
  }
}
