/**
 * Loading the hand-written WebAssembly SIMD kernels (the matcher's and the 1:N first stage's) from
 * their committed base64 modules (`kernel-build.ts` writes them). A missing WebAssembly or an engine
 * without SIMD (the module does not validate) yields null, and callers fall back to plain JS.
 */

/** The part of the WebAssembly JS API used here (the project's lib settings do not declare it). */
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}

const wasmApi = (): WasmApi | undefined => (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

function decodeBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The compiled kernel, or null when this engine cannot run it. */
export function compileKernelModule(base64: string): object | null {
  const wasm = wasmApi();
  if (!wasm) return null;
  try {
    const bytes = decodeBase64(base64);
    return wasm.validate(bytes) ? new wasm.Module(bytes) : null; // invalid: engine without SIMD
  } catch {
    return null;
  }
}

/** A fresh instance (own memory) of a compiled kernel; its exports typed by the caller. */
export function instantiateKernel<T>(module: object): T {
  return new (wasmApi() as WasmApi).Instance(module, {}).exports as T;
}
