import { readFileSync, writeFileSync } from 'node:fs';
import { DOC, moduleMap, withMap } from './architecture.ts';

/**
 * Prints the module map of docs/architecture.md, generated from server/scripts/architecture.ts (tables
 * owned, module order, store/service/routes files) and from the real imports of server/src; `--write`
 * puts it into the document between its markers. server/src/architecture.test.ts fails while the
 * document's map differs from this one.
 *
 *   npx tsx server/scripts/architecture-doc.ts [--write]
 */
if (process.argv.includes('--write')) {
  writeFileSync(DOC, withMap(readFileSync(DOC, 'utf8')));
  console.log(`module map written to ${DOC}`);
} else {
  console.log(moduleMap());
}
