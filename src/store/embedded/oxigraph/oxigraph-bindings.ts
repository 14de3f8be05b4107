import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** The allocator every wasm-bindgen module exports (how the bindings pass strings and bytes in). */
interface WasmAllocator {
  __wbindgen_malloc(size: number, align: number): number;
  __wbindgen_free(pointer: number, size: number, align: number): void;
  memory: WebAssembly.Memory;
  /** The table of JS values the WASM code holds (wasm-bindgen's externref table). */
  __wbindgen_externrefs: WebAssembly.Table;
}

type Oxigraph = typeof import('oxigraph');

/** One instance of the oxigraph bindings: its own WASM instance, linear memory (up to 4 GiB) and allocator. */
export interface OxigraphBindings {
  oxigraph: Oxigraph;
  allocator: WasmAllocator;
}

const require = createRequire(import.meta.url);

/**
 * Loads a new instance of the oxigraph bindings, out of the require cache, so each has a WASM memory of its own
 * (how the index is compacted: docs/storage.md, "Compaction"), and keeps its allocator, reached by wrapping
 * `WebAssembly.Instance` during the load. Fails loudly if a version stops exporting the allocator rather than
 * run into GC storms unnoticed (docs/storage.md, "Stored values, Oxigraph's memory and the in-memory indexes").
 */
export function loadOxigraphBindings(): OxigraphBindings {
  const path = require.resolve('oxigraph');
  const Instance = WebAssembly.Instance;
  let allocator: Partial<WasmAllocator> | undefined;
  // biome-ignore lint/complexity/useArrowFunction: the bindings call it with new, which an arrow function cannot serve
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
    throw new Error(
      'could not reach the WASM allocator of oxigraph: load it through ' +
        'src/store/embedded/oxigraph/oxigraph-bindings.ts only',
    );
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

/** The SHA-256 of oxigraph's WASM code (a memory image of its store is valid for that code only), read once. */
let digest: string | undefined;
export function wasmDigest(): string {
  digest ??= createHash('sha256')
    .update(readFileSync(join(require.resolve('oxigraph'), '..', 'node_bg.wasm')))
    .digest('hex');
  return digest;
}

/**
 * Below this index, wasm-bindgen's externref table is the stack of values lent to one call, empty
 * between calls; from it on, the values the WASM code holds, allocated from a free list that lives
 * in its linear memory.
 */
const HELD_VALUES_FROM = 1024;

/** What an instance holds outside its linear memory between calls, that a copy of that memory refers to. */
export interface HeldValues {
  /** Length of the externref table. */
  tableLength: number;
  /** The values held (by index): interned strings and constants only. */
  values: [number, string | number | boolean][];
}

/**
 * The JS values an instance holds between calls. The WASM code keeps some in its externref table
 * for as long as it lives (the property names it reads off JS terms, interned on first use) and
 * their indexes in its memory; a copy of that memory works in a new instance only with the same
 * values at the same indexes. Primitives can be set there again; an object could not, so then
 * there is no image (undefined, and why).
 */
export function heldValues({ allocator }: OxigraphBindings): HeldValues | string {
  const table = allocator.__wbindgen_externrefs;
  const values: HeldValues['values'] = [];
  for (let i = HELD_VALUES_FROM; i < table.length; i++) {
    const value: unknown = table.get(i);
    if (value === null || value === undefined) continue;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      return `the WASM code holds a JS ${typeof value} (table slot ${i})`;
    values.push([i, value]);
  }
  return { tableLength: table.length, values };
}

/**
 * A new instance of the bindings made ready to take a copy of another's linear memory (see
 * index-image.ts): its memory grown to `memoryBytes` (the caller fills it) and its externref
 * table holding `held` as the other held them. Its two mutable globals, the stack pointers of
 * the WASM code and of the externref table, are at their initial values between calls in both.
 */
export function bindingsForImage(memoryBytes: number, held: HeldValues): OxigraphBindings {
  const bindings = loadOxigraphBindings();
  const { memory, __wbindgen_externrefs: table } = bindings.allocator;
  const pages = (memoryBytes - memory.buffer.byteLength) / WASM_PAGE_BYTES;
  if (!Number.isInteger(pages) || pages < 0)
    throw new Error(`a memory of ${memoryBytes} bytes cannot replace one of ${memory.buffer.byteLength}`);
  if (pages > 0) memory.grow(pages);
  if (table.length < held.tableLength) table.grow(held.tableLength - table.length, null);
  for (let i = HELD_VALUES_FROM; i < table.length; i++) table.set(i, null);
  for (const [i, value] of held.values) table.set(i, value);
  return bindings;
}

const WASM_PAGE_BYTES = 64 * 1024;

type OxigraphStore = InstanceType<Oxigraph['Store']>;

/** The pointer to a store in its instance's memory (wasm-bindgen keeps it in `__wbg_ptr`). */
export function storePointer(store: OxigraphStore): number {
  return (store as unknown as { __wbg_ptr: number }).__wbg_ptr;
}

/**
 * The store at `pointer` in the memory of `bindings`, as a JS object (freed with free(), never by the garbage
 * collector).
 */
export function storeAt({ oxigraph }: OxigraphBindings, pointer: number): OxigraphStore {
  const store = Object.create(oxigraph.Store.prototype) as OxigraphStore;
  (store as unknown as { __wbg_ptr: number }).__wbg_ptr = pointer;
  return store;
}
