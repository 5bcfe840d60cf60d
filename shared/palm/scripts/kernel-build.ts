/**
 * Build-time only (wabt is a dev dependency; nothing at run time imports this): compiles a
 * hand-written WebAssembly text kernel and keeps its binary as a base64 TypeScript module, so that
 * nothing at run time needs a compiler. Used by the matcher kernel
 * (`shared/palm/scripts/build-match-kernel.ts`), the 1:N first-stage kernel
 * (`shared/palm/scripts/build-stage1-kernel.ts`) and the capture-path kernel
 * (`shared/palm/scripts/build-capture-kernel.ts`).
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import wabt from 'wabt';

/** The .wat compiled to a wasm binary (SIMD enabled, no names section: deterministic bytes). */
export async function compileWat(
  watPath: string,
  watSource = readFileSync(watPath, 'utf8'),
): Promise<Uint8Array> {
  const w = await wabt();
  const mod = w.parseWat(basename(watPath), watSource, { simd: true });
  try {
    mod.resolveNames();
    mod.validate();
    return mod.toBinary({ log: false, canonicalize_lebs: true, write_debug_names: false }).buffer;
  } finally {
    mod.destroy();
  }
}

/** The binary as base64 string-literal lines of a `const X =` initialiser (100 characters each). */
export function base64Lines(bytes: Uint8Array): string[] {
  const lines =
    Buffer.from(bytes)
      .toString('base64')
      .match(/.{1,100}/g) ?? [];
  return lines.map((l, i) => `  '${l}'${i === lines.length - 1 ? ';' : ' +'}`);
}

/**
 * Source text of a generated kernel module: a header naming the script and the .wat it came from, the
 * binary's length when `lengthConst` is given, and the base64 initialiser of `base64Const`.
 */
export function kernelModuleText(
  bytes: Uint8Array,
  opts: { header: string; base64Const: string; lengthConst?: string },
): string {
  return [
    `// ${opts.header} Do not edit.`,
    ...(opts.lengthConst ? [`export const ${opts.lengthConst} = ${bytes.length};`] : []),
    `export const ${opts.base64Const} =`,
    ...base64Lines(bytes),
    '',
  ].join('\n');
}

/** Writes the module, or with `--check` exits 1 when the committed one differs from `source`. */
export function writeOrCheck(modulePath: string, source: string, rebuild: string): void {
  if (process.argv.includes('--check')) {
    if (readFileSync(modulePath, 'utf8') !== source) {
      console.error(`${modulePath} is stale: run ${rebuild}`);
      process.exit(1);
    }
    console.log(`${basename(modulePath)} is up to date`);
    return;
  }
  writeFileSync(modulePath, source);
  console.log(`wrote ${modulePath}`);
}
