/**
 * Fills a data directory with objects that have a deep history, through the store's commit path
 * (DurableStore.commit with the revisions the domain writes for a Change of 2 DELETEs + 2 ADDs:
 * the same hot store and archive, without the ChangeRequests, which only add to the archive on
 * disk), fsync off: a directory of millions of revisions in minutes, for the history benchmarks
 * (history-cold-start.ts, history-capacity.ts) to start a real server on.
 */
import { DEFAULTS } from '../../src/config.js';
import { literal, namedNode, quad, type Quad } from '../../src/rdf/terms.js';
import { CARGO } from '../../src/rdf/vocab.js';
import { DurableStore, type DurableStoreOptions } from '../../src/store/embedded/durable-store.js';
import { revisionGraph, type RevisionRecord } from '../../src/store/schema/revisions.js';
import { StoreFullError } from '../../src/store/errors.js';

const IN_FLIGHT = 50;

export interface FillOptions {
  /** The server's base URL the objects' IRIs start with (the server started on the directory must use it). */
  base: string;
  /** The object as parsed from its JSON-LD (blank nodes for its embedded objects). */
  parsed: readonly Quad[];
  objects: number;
  revisions: number;
  /** Objects whose next revision one commit writes: 1 writes one record per revision, as the server does; more is faster. */
  perCommit: number;
  /** Stop when this much time has passed (ms, from performance.now()). */
  deadline?: number;
  /** Store options other than the defaults (its log lines, when to compact). */
  store?: Partial<DurableStoreOptions>;
  /** Called after each group of objects is written (objects added so far): for progress reports. */
  progress?: (added: number, store: DurableStore) => void;
  /** Called once the store is open, before anything is written (to snapshot it first). */
  beforeWrites?: (store: DurableStore) => Promise<void>;
  /** Called once the objects are written, before the store is closed (to measure it). */
  beforeClose?: (store: DurableStore) => Promise<void>;
}

export interface Filled {
  objects: number;
  seconds: number;
  quadsBefore: number;
  quadsAfter: number;
  wasmBytes: number;
  /** Set when the store refused a write (it is full): the objects of that commit were not added. */
  refused?: StoreFullError;
  closeSeconds: number;
}

/** The object's triples of revision `n`: the template's, with `goodsDescription` and `upid` of that revision. */
function revisionTriples(template: readonly Quad[], iri: string, n: number): Quad[] {
  return template.map((t) => {
    if (t.subject.value !== iri) return t;
    if (t.predicate.value === `${CARGO}goodsDescription`)
      return quad(t.subject, t.predicate, literal(`goods of revision ${n}`));
    if (t.predicate.value === `${CARGO}upid`) return quad(t.subject, t.predicate, literal(`UPID-${n}`));
    return t;
  });
}

/** The parsed object as object `iri`: its root node named `iri`, its embedded nodes `internal:` IRIs, as the domain names them. */
function asObject(parsed: readonly Quad[], iri: string, base: string): Quad[] {
  const objects = new Set(parsed.map((t) => t.object.value));
  const root = parsed.find((t) => !objects.has(t.subject.value))!.subject.value;
  const names = new Map<string, string>([[root, iri]]);
  const rename = (term: Quad['subject'] | Quad['object']) => {
    if (
      term.termType === 'Literal' ||
      (term.termType === 'NamedNode' &&
        !names.has(term.value) &&
        term.value !== root &&
        !parsed.some((t) => t.subject.value === term.value))
    )
      return term;
    let name = names.get(term.value);
    if (!name) {
      name = `internal:${iri.slice(base.length)}-${names.size}`;
      names.set(term.value, name);
    }
    return namedNode(name);
  };
  return parsed.map((t) => quad(rename(t.subject) as Quad['subject'], t.predicate, rename(t.object) as Quad['object']));
}

/** Adds `objects` objects of `revisions` revisions each to the data directory `dir` (created if missing), then closes it (a snapshot is written). */
export async function fillThroughStore(dir: string, options: FillOptions): Promise<Filled> {
  const store = await DurableStore.open({
    dataDir: dir,
    fsync: false,
    snapshotAfterBytes: Number.MAX_SAFE_INTEGER,
    maxReplayBytes: Number.MAX_SAFE_INTEGER,
    ...DEFAULTS.store,
    log: () => undefined,
    ...options.store,
  });
  await options.beforeWrites?.(store);
  const holder = `${options.base}/logistics-objects/holder`;
  const first = Date.now();
  const started = performance.now();
  const quadsBefore = store.capacity().quads;
  const runId = Date.now().toString(36);
  let next = 0;
  let added = 0;
  let refused: StoreFullError | undefined;
  const more = () =>
    !refused && next < options.objects && (options.deadline === undefined || performance.now() < options.deadline);
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (more()) {
        const group = Array.from({ length: Math.min(options.perCommit, options.objects - next) }, () => next++).map(
          (k) => {
            const iri = `${options.base}/logistics-objects/${runId}-${k}`;
            return {
              k,
              iri,
              template: asObject(options.parsed, iri, options.base),
              previous: undefined as { revision: RevisionRecord; triples: Quad[] } | undefined,
            };
          },
        );
        try {
          for (let n = 1; n <= options.revisions; n++) {
            const tx = store.begin();
            for (const o of group) {
              const triples = revisionTriples(o.template, o.iri, n);
              const revision: RevisionRecord = {
                object: o.iri,
                number: n,
                graph: revisionGraph(o.iri, n),
                createdAt: new Date(first + o.k * 100 + n),
                createdBy: holder,
                mostSpecificType: `${CARGO}Piece`,
              };
              if (o.previous) {
                const changed = (t: Quad) =>
                  t.subject.value === o.iri &&
                  (t.predicate.value === `${CARGO}goodsDescription` || t.predicate.value === `${CARGO}upid`);
                tx.revisions.push({
                  revision,
                  triples,
                  replaces: {
                    ...o.previous,
                    added: triples.filter(changed),
                    removed: o.previous.triples.filter(changed),
                  },
                });
              } else {
                tx.revisions.push({ revision, triples });
              }
              o.previous = { revision, triples };
            }
            await store.commit(tx);
          }
          added += group.length;
          options.progress?.(added, store);
        } catch (err) {
          // A full store refuses a write that grows it (revisions 1 and 2: the hot store keeps the metadata
          // of revision 1 and of the latest): the objects of that group keep fewer revisions and are not counted.
          if (!(err instanceof StoreFullError)) throw err;
          refused ??= err;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const { quads: quadsAfter, wasmMemoryBytes } = store.capacity();
  await options.beforeClose?.(store);
  const closing = performance.now();
  await store.close();
  return {
    objects: added,
    seconds,
    quadsBefore,
    quadsAfter,
    wasmBytes: wasmMemoryBytes,
    refused,
    closeSeconds: (performance.now() - closing) / 1000,
  };
}
