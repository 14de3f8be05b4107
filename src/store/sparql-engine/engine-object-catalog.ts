import { randomUUID } from 'node:crypto';
import { BoundedCache } from '../../bounded-cache.js';
import {
  dateTimeLiteral,
  detachedQuad,
  iriToNt,
  isValidIri,
  literal,
  ownCopy,
  termToNt,
  type Quad,
} from '../../rdf/terms.js';
import { store as meta } from '../../rdf/vocab.js';
import { entryOf } from '../../map-entry.js';
import type { SparqlReader } from '../readers.js';
import type { CatalogObject, ObjectCatalog, ObjectCounts, ObjectListFilter } from '../schema/object-catalog.js';
import { revisionGraph, revisionOfRecord, type RevisionRecord } from '../schema/revisions.js';
import { RequestBatches } from './request-batches.js';
import { fromRevisionSubjects } from '../schema/revision-subjects.js';

const p = iriToNt;
const META = p(meta.metaGraph);

/**
 * The version of the engine's layout this build writes: 2 added each object's mark of its latest revision; 3 names each
 * new revision's embedded nodes as its own (revision-subjects.ts), reading those written before as they are.
 */
export const ENGINE_LAYOUT_VERSION = 3;

/** What the catalog's queries need of the engine: SELECT, CONSTRUCT, and an update for the layout's upgrade. */
export interface CatalogEngine extends SparqlReader {
  construct(query: string): Promise<Quad[]>;
  update(text: string): Promise<unknown>;
}

/** The pattern binding the latest revision `?g` of `object` (a variable or an IRI) and that revision's metadata. */
const latestPattern = (object: string) =>
  `${object} ${p(meta.latestRevision)} ?g . ?g ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ;
  ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type .`;

type Binding = Record<string, { value: string } | undefined>;

function latestOf(object: string, b: Binding): RevisionRecord {
  return {
    object,
    number: Number(b.n!.value),
    graph: b.g!.value,
    createdAt: new Date(b.at!.value),
    createdBy: b.by!.value,
    mostSpecificType: b.type!.value,
  };
}

/** The objects matching `filter`: the revision's time first, so that a bound on it is where the engine starts. */
const matching = (filter: ObjectListFilter) =>
  `GRAPH ${META} { ?g ${p(meta.revisionCreatedAt)} ?at . ${filtersOf(filter)} ?o ${p(meta.latestRevision)} ?g .
  ?g ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type . }`;

/**
 * Cold reads (an object with its latest revision) with the engine at once; those asked meanwhile wait, then go
 * together, at most this many objects in one query (its cost hardly grows with them, its answer's size does).
 */
const LATEST_READS_IN_FLIGHT = 2;
const OBJECTS_PER_LATEST_READ = 32;
/** Tags each subject of a cold read's answer with the graph it was found in: random, so no stored triple has it. */
const FOUND_IN = `${meta.metaGraph}#foundIn-${randomUUID()}`;

/** Agents and types the catalog keeps one string of each: far more than a store has, bounded all the same. */
const SHARED_STRINGS = 10_000;

type LatestAnswer = { object: CatalogObject; triples?: Quad[] };

/** IRIs in one VALUES block: Virtuoso refuses a query with a few thousand ("Too many arguments"). */
const VALUES_PER_QUERY = 500;

/** A page's window back from now: its first guess of the objects' spacing, narrowest, growth, widenings before all. */
const FIRST_MS_PER_OBJECT = 1_000;
const MIN_WINDOW_MS = 10_000;
const WINDOW_GROWTH = 4;
const MAX_WIDENINGS = 8;

/** The filters of a listing as SPARQL FILTERs over latestPattern's variables. */
function filtersOf(filter: ObjectListFilter): string {
  const filters: string[] = [];
  if (filter.type !== undefined) filters.push(`?type = ${isValidIri(filter.type) ? p(filter.type) : '""'}`);
  if (filter.idContains !== undefined)
    filters.push(`CONTAINS(LCASE(STR(?o)), ${termToNt(literal(filter.idContains.toLowerCase()))})`);
  if (filter.changedAfter !== undefined) filters.push(`?at > ${termToNt(dateTimeLiteral(filter.changedAfter))}`);
  return filters.length === 0 ? '' : `FILTER (${filters.join(' && ')})`;
}

/**
 * The Logistics Objects in the engine, read by queries on the metadata graph, where each object's mark of its latest
 * revision (`store:latestRevision`, written with each revision: one quad replaced per change) spares a scan of every
 * revision's metadata.
 */
export class EngineObjectCatalog implements ObjectCatalog {
  /** How far apart in time the last page found the objects, about: what sizes the next page's window. */
  private msPerObject = FIRST_MS_PER_OBJECT;

  /** Agents and types, each one string however many cached objects name it (the few there are; at most this many). */
  private readonly sharedStrings = new BoundedCache<string, string>(SHARED_STRINGS);

  private readonly latestReads = new RequestBatches<string, LatestAnswer | undefined>(
    (iris) => this.readWithLatest(iris),
    LATEST_READS_IN_FLIGHT,
    OBJECTS_PER_LATEST_READ,
  );

  constructor(private readonly engine: CatalogEngine) {}

  /** Two patterns on known subjects: the engine's cost of a query grows with its patterns more than with its rows. */
  async object(iri: string): Promise<CatalogObject | undefined> {
    if (!isValidIri(iri)) return undefined;
    const rows = await this.engine.select(
      `SELECT ?record ?creator WHERE { GRAPH ${META} { ${p(iri)} ${p(meta.objectRecord)} ?record .
        ${p(revisionGraph(iri, 1))} ${p(meta.revisionCreatedBy)} ?creator } }`,
    );
    // One record, but for one an upgrade wrote in the engine's own forms and a revision then replaced: the highest.
    let found: CatalogObject | undefined;
    for (const b of rows.results.bindings) {
      const object = this.catalogObject(iri, b.record.value, b.creator.value);
      if (object && object.latest.number > (found?.latest.number ?? 0)) found = object;
    }
    return found;
  }

  /**
   * The object a record and a creator read from an answer describe, kept for long by the object cache: its agents and
   * type as strings shared by every object naming them, not slices of the answer, which would keep it all alive.
   */
  private catalogObject(iri: string, record: string, creator: string): CatalogObject | undefined {
    const latest = revisionOfRecord(iri, record);
    if (!latest) return undefined;
    latest.createdBy = this.shared(latest.createdBy);
    latest.mostSpecificType = this.shared(latest.mostSpecificType);
    return { iri, creator: this.shared(creator), latest };
  }

  private shared(text: string): string {
    const held = this.sharedStrings.get(text);
    if (held !== undefined) return held;
    const own = ownCopy(text);
    this.sharedStrings.set(own, own);
    return own;
  }

  /** One CONSTRUCT, shared by the cold reads that wait while others are with the engine (readWithLatest). */
  async objectWithLatest(iri: string): Promise<LatestAnswer | undefined> {
    return isValidIri(iri) ? this.latestReads.get(iri) : undefined;
  }

  /**
   * The latest revision's triples of each object with its record, its mark of that revision and its creator
   * (metadata the revision's own triples never hold), each subject tagged with the graph it was found in, so that the
   * answer divides among the objects. Anything but one record and one mark (a layout being upgraded), an empty
   * revision and a subject found in two of the graphs are left to `object` and a read of the graph of their own.
   */
  private async readWithLatest(iris: string[]): Promise<(LatestAnswer | undefined)[]> {
    const [record, mark, createdBy] = [p(meta.objectRecord), p(meta.latestRevision), p(meta.revisionCreatedBy)];
    const objectOfFirst = new Map(iris.map((iri) => [revisionGraph(iri, 1), iri]));
    const rows = [...objectOfFirst].map(([first, iri]) => `(${p(iri)} ${p(first)})`).join(' ');
    const answer = await this.engine.construct(
      `CONSTRUCT { ?s ?p ?o . ?s ${p(FOUND_IN)} ?g . ?x ${record} ?record ; ${mark} ?g . ` +
        `?first ${createdBy} ?creator } WHERE { VALUES (?x ?first) { ${rows} } ` +
        `GRAPH ${META} { ?x ${record} ?record ; ${mark} ?g . ?first ${createdBy} ?creator } GRAPH ?g { ?s ?p ?o } }`,
    );
    const asked = new Set(iris);
    const found = new Map<string, { records: string[]; marks: string[]; creators: string[] }>();
    const foundOf = (iri: string) => entryOf(found, iri, () => ({ records: [], marks: [], creators: [] }));
    const graphsOf = new Map<string, Set<string>>();
    const data: Quad[] = [];
    for (const t of answer) {
      const [s, predicate] = [t.subject.value, t.predicate.value];
      if (predicate === FOUND_IN) entryOf(graphsOf, s, () => new Set()).add(t.object.value);
      else if (predicate === meta.objectRecord && asked.has(s)) foundOf(s).records.push(t.object.value);
      else if (predicate === meta.latestRevision && asked.has(s)) foundOf(s).marks.push(t.object.value);
      else if (predicate === meta.revisionCreatedBy && objectOfFirst.has(s))
        foundOf(objectOfFirst.get(s)!).creators.push(t.object.value);
      else data.push(t);
    }
    const triplesOf = new Map<string, Quad[]>();
    const mixed = new Set<string>();
    // Each object's triples are kept (parsed-revision cache): of a shared answer, they get strings of their own.
    const own = iris.length > 1 ? detachedQuad : (t: Quad) => t;
    for (const t of data) {
      const graphs = [...(graphsOf.get(t.subject.value) ?? [])];
      if (graphs.length === 1) entryOf(triplesOf, graphs[0], () => []).push(own(t));
      else for (const g of graphs) mixed.add(g);
    }
    return Promise.all(
      iris.map(async (iri) => {
        const { records, marks, creators } = foundOf(iri);
        const read = records.length === 1 && creators.length === 1 && this.catalogObject(iri, records[0], creators[0]);
        const stored = read && !mixed.has(read.latest.graph) ? triplesOf.get(read.latest.graph) : undefined;
        const triples = read && stored && fromRevisionSubjects(stored, read.latest.graph);
        if (!read || marks.length !== 1 || marks[0] !== read.latest.graph || !triples) {
          const object = await this.object(iri);
          return object && { object };
        }
        return { object: read, triples };
      }),
    );
  }

  async createdBy(agent: string): Promise<string[]> {
    if (!isValidIri(agent)) return [];
    const rows = await this.engine.select(
      `SELECT ?o WHERE { GRAPH ${META} { ?g ${p(meta.revisionCreatedBy)} ${p(agent)} ; ${p(meta.revisionNumber)} 1 ;
        ${p(meta.revisionOf)} ?o } }`,
    );
    return rows.results.bindings.map((b) => b.o.value);
  }

  /**
   * Sorting every match is what a page of the newest costs the engine unless the query is bounded: so a page is first
   * asked of the objects changed in a recent window (a range of the revisions' times, which the engine reads in
   * order), sized from the density the last page found and widened until it holds the page. Exact: every object
   * outside the window changed before all inside it. A page that reaches past the last match (`matches`, when known)
   * is asked of all at once.
   */
  async page(filter: ObjectListFilter, skip: number, limit: number, matches?: number): Promise<CatalogObject[]> {
    if (limit <= 0) return [];
    const wanted = skip + limit;
    let width = Math.max(MIN_WINDOW_MS, this.msPerObject * wanted);
    for (let widenings = 0; ; widenings++, width *= WINDOW_GROWTH) {
      const since = new Date(Date.now() - width);
      const bounded =
        widenings <= MAX_WIDENINGS &&
        (matches === undefined || matches > wanted) &&
        (filter.changedAfter === undefined || since > filter.changedAfter);
      const latest = await this.pageOf(bounded ? { ...filter, changedAfter: since } : filter, skip, limit);
      if (!bounded) return this.withCreators(latest);
      if (latest.length === limit) {
        // Held at first: the objects may have come closer together since, so the next window is a little narrower.
        this.msPerObject = (width / wanted) * (widenings === 0 ? 0.75 : 1);
        return this.withCreators(latest);
      }
    }
  }

  private async pageOf(filter: ObjectListFilter, skip: number, limit: number): Promise<RevisionRecord[]> {
    const page = await this.engine.select(
      `SELECT ?o ?g ?n ?at ?by ?type WHERE { ${matching(filter)} } ORDER BY DESC(?at) STR(?o) ` +
        `OFFSET ${skip} LIMIT ${limit}`,
    );
    return page.results.bindings.map((b) => latestOf(b.o.value, b));
  }

  private async withCreators(latest: RevisionRecord[]): Promise<CatalogObject[]> {
    const creators = await this.creatorsOf(latest.map((r) => r.object));
    return latest.map((r) => ({ iri: r.object, creator: creators.get(r.object) ?? '', latest: r }));
  }

  async counts(filter: ObjectListFilter): Promise<ObjectCounts> {
    const [total, types] = await Promise.all([
      this.engine.select(`SELECT (COUNT(*) AS ?total) WHERE { ${matching(filter)} }`),
      this.engine.select(
        `SELECT ?type (COUNT(*) AS ?objects) WHERE { GRAPH ${META} { ?o ${p(meta.latestRevision)} ?g . ` +
          `?g ${p(meta.revisionType)} ?type } } GROUP BY ?type`,
      ),
    ]);
    return {
      total: Number(total.results.bindings[0]?.total?.value ?? 0),
      types: Object.fromEntries(types.results.bindings.map((b) => [b.type.value, Number(b.objects.value)])),
    };
  }

  private async creatorsOf(objects: readonly string[]): Promise<Map<string, string>> {
    const chunks: string[][] = [];
    for (let i = 0; i < objects.length; i += VALUES_PER_QUERY) chunks.push(objects.slice(i, i + VALUES_PER_QUERY));
    const answers = await Promise.all(
      chunks.map((chunk) =>
        this.engine.select(
          `SELECT ?o ?creator WHERE { VALUES ?first { ${chunk.map((o) => p(revisionGraph(o, 1))).join(' ')} }
          GRAPH ${META} { ?first ${p(meta.revisionOf)} ?o ; ${p(meta.revisionCreatedBy)} ?creator } }`,
        ),
      ),
    );
    return new Map(answers.flatMap((rows) => rows.results.bindings.map((b) => [b.o.value, b.creator.value])));
  }

  /**
   * Brings a layout of an earlier version up to this one, once (the metadata graph records the version): before 2,
   * each object gets its mark and its record of its latest revision; 3 needs nothing of what is stored (revisions
   * written before read as they are). Run by the first process to start on the engine after an upgrade, before it
   * serves; the version is written after them, so a process stopped in between runs it again.
   */
  async upgradeLayout(): Promise<void> {
    const version = await this.engine.select(
      `SELECT ?v WHERE { GRAPH ${META} { ${META} ${p(meta.layoutVersion)} ?v } }`,
    );
    const stored = Math.max(0, ...version.results.bindings.map((b) => Number(b.v.value)));
    if (stored >= ENGINE_LAYOUT_VERSION) return;
    if (stored < 2) await this.addLatestMarks();
    // Two operations: Virtuoso finds no solution for a WHERE of only an OPTIONAL that matches nothing.
    await this.engine.update(
      `DELETE WHERE { GRAPH ${META} { ${META} ${p(meta.layoutVersion)} ?v } } ; ` +
        `INSERT DATA { GRAPH ${META} { ${META} ${p(meta.layoutVersion)} ${ENGINE_LAYOUT_VERSION} } }`,
    );
  }

  /** Layout 2: each object's mark and record of its latest revision, from every revision's metadata. */
  private async addLatestMarks(): Promise<void> {
    await this.engine.update(
      `INSERT { GRAPH ${META} { ?o ${p(meta.latestRevision)} ?g } } WHERE { GRAPH ${META} {
        ?g ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n .
        FILTER NOT EXISTS { ?later ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?m . FILTER (?m > ?n) }
        FILTER NOT EXISTS { ?o ${p(meta.latestRevision)} ?marked } } }`,
    );
    await this.engine.update(
      `INSERT { GRAPH ${META} { ?o ${p(meta.objectRecord)} ?record } } WHERE { GRAPH ${META} { ${latestPattern('?o')}
        FILTER NOT EXISTS { ?o ${p(meta.objectRecord)} ?held } }
        BIND (CONCAT(STR(?n), " ", STR(?at), " ", STR(?by), " ", STR(?type)) AS ?record) }`,
    );
  }
}
