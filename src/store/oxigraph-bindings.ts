import { createRequire } from 'node:module';

/** The allocator every wasm-bindgen module exports (how the bindings pass strings and bytes in). */
interface WasmAllocator {
  __wbindgen_malloc(size: number, align: number): number;
  __wbindgen_free(pointer: number, size: number, align: number): void;
  memory: WebAssembly.Memory;
}

type Oxigraph = typeof import('oxigraph');

/** One instance of the oxigraph bindings: its own WASM instance, linear memory (up to 4 GiB) and allocator. */
export interface OxigraphBindings {
  oxigraph: Oxigraph;
  allocator: WasmAllocator;
}

const require = createRequire(import.meta.url);

/**
 * Loads a new instance of the oxigraph bindings and keeps hold of its WASM allocator, which the
 * bindings do not expose: `WebAssembly.Instance` is wrapped while their module is evaluated (it
 * instantiates its WASM then, once). The module is taken out of the require cache around the
 * load, so every call evaluates it again: a new WASM instance with a memory of its own, which is
 * how the index is compacted (a WASM memory never shrinks, and Oxigraph's in-memory store does
 * not reuse the memory of deleted quads). Fails loudly if a future version no longer exports
 * the allocator, rather than run into a GC storm unnoticed.
 */
export function loadOxigraphBindings(): OxigraphBindings {
  const path = require.resolve('oxigraph');
  const Instance = WebAssembly.Instance;
  let allocator: Partial<WasmAllocator> | undefined;
  WebAssembly.Instance = function (module: WebAssembly.Module, imports?: WebAssembly.Imports) {
    const instance = new Instance(module, imports);
    // Other modules may instantiate WASM meanwhile: oxigraph's is the one that exports its Store.
    if ('__wbg_store_free' in instance.exports) allocator = instance.exports as Partial<WasmAllocator>;
    return instance;
  } as unknown as typeof WebAssembly.Instance;
  let oxigraph: Oxigraph;
  try {
    delete require.cache[path];
    oxigraph = require(path) as Oxigraph;
    // The requiring module lists each module it loaded for as long as it lives: left there, no
    // instance (and no WASM memory) could ever be garbage collected.
    const loaded = require.cache[path];
    const siblings = (loaded as { parent?: NodeJS.Module | null } | undefined)?.parent?.children;
    if (loaded && siblings?.includes(loaded)) siblings.splice(siblings.indexOf(loaded), 1);
  } finally {
    WebAssembly.Instance = Instance;
    delete require.cache[path];
  }
  if (typeof allocator?.__wbindgen_malloc !== 'function' || typeof allocator.__wbindgen_free !== 'function') {
    throw new Error('could not reach the WASM allocator of oxigraph: load it through src/store/oxigraph-bindings.ts only');
  }
  return { oxigraph, allocator: allocator as WasmAllocator };
}

/** The end of WASM32 linear memory. */
export const WASM_MEMORY_LIMIT_BYTES = 2 ** 32;
/** The largest block the 32-bit allocator can be asked for. */
const LARGEST_BLOCK = WASM_MEMORY_LIMIT_BYTES - 64 * 1024;

/** Whether the WASM allocator can hand out a block of `bytes` now (taken and freed at once). */
export function canAllocate({ allocator }: OxigraphBindings, bytes: number): boolean {
  if (bytes > LARGEST_BLOCK) return false;
  try {
    allocator.__wbindgen_free(allocator.__wbindgen_malloc(bytes, 1), bytes, 1);
    return true;
  } catch {
    return false;
  }
}
