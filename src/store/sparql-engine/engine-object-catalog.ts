import { dateTimeLiteral, iriToNt, isValidIri, literal, termToNt } from '../../rdf/terms.js';
import { store as meta } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';
import type { CatalogObject, ObjectCatalog, ObjectList, ObjectListFilter } from '../schema/object-catalog.js';
import { revisionGraph, revisionOfRecord, type RevisionRecord } from '../schema/revisions.js';

const p = iriToNt;
const META = p(meta.metaGraph);

/** The version of the engine's layout this build writes: 2 added each object's mark of its latest revision. */
export const ENGINE_LAYOUT_VERSION = 2;

/** What the catalog's queries need of the engine: SELECT, and an update for the layout's upgrade. */
export interface CatalogEngine extends SparqlReader {
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
      const latest = revisionOfRecord(iri, b.record.value);
      if (latest && latest.number > (found?.latest.number ?? 0)) found = { iri, creator: b.creator.value, latest };
    }
    return found;
  }

  async createdBy(agent: string): Promise<string[]> {
    if (!isValidIri(agent)) return [];
    const rows = await this.engine.select(
      `SELECT ?o WHERE { GRAPH ${META} { ?g ${p(meta.revisionCreatedBy)} ${p(agent)} ; ${p(meta.revisionNumber)} 1 ;
        ${p(meta.revisionOf)} ?o } }`,
    );
    return rows.results.bindings.map((b) => b.o.value);
  }

  async list(filter: ObjectListFilter, skip: number, limit: number): Promise<ObjectList> {
    const where = `GRAPH ${META} { ${latestPattern('?o')} ${filtersOf(filter)} }`;
    const [total, page, types] = await Promise.all([
      this.engine.select(`SELECT (COUNT(*) AS ?total) WHERE { ${where} }`),
      this.engine.select(
        `SELECT ?o ?g ?n ?at ?by ?type WHERE { ${where} } ORDER BY DESC(?at) STR(?o) OFFSET ${skip} LIMIT ${limit}`,
      ),
      this.engine.select(
        `SELECT ?type (COUNT(*) AS ?objects) WHERE { GRAPH ${META} { ?o ${p(meta.latestRevision)} ?g . ` +
          `?g ${p(meta.revisionType)} ?type } } GROUP BY ?type`,
      ),
    ]);
    const latest = page.results.bindings.map((b) => latestOf(b.o.value, b));
    const creators = await this.creatorsOf(latest.map((r) => r.object));
    return {
      total: Number(total.results.bindings[0]?.total?.value ?? 0),
      page: latest.map((r) => ({ iri: r.object, creator: creators.get(r.object) ?? '', latest: r })),
      types: Object.fromEntries(types.results.bindings.map((b) => [b.type.value, Number(b.objects.value)])),
    };
  }

  private async creatorsOf(objects: readonly string[]): Promise<Map<string, string>> {
    if (objects.length === 0) return new Map();
    const firsts = objects.map((o) => p(revisionGraph(o, 1))).join(' ');
    const rows = await this.engine.select(
      `SELECT ?o ?creator WHERE { VALUES ?first { ${firsts} } GRAPH ${META} { ?first ${p(meta.revisionOf)} ?o ;
        ${p(meta.revisionCreatedBy)} ?creator } }`,
    );
    return new Map(rows.results.bindings.map((b) => [b.o.value, b.creator.value]));
  }

  /**
   * Brings a layout of an earlier version up to this one, once (the metadata graph records the version): each object
   * gets its mark and its record of its latest revision. Run by the first process to start on the engine after an
   * upgrade, before it serves; the version is written after them, so a process stopped in between runs it again.
   */
  async upgradeLayout(): Promise<void> {
    const version = await this.engine.select(
      `SELECT ?v WHERE { GRAPH ${META} { ${META} ${p(meta.layoutVersion)} ?v } }`,
    );
    if (version.results.bindings.some((b) => Number(b.v.value) >= ENGINE_LAYOUT_VERSION)) return;
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
    await this.engine.update(
      `DELETE { GRAPH ${META} { ${META} ${p(meta.layoutVersion)} ?v } } INSERT { GRAPH ${META} { ${META} ` +
        `${p(meta.layoutVersion)} ${ENGINE_LAYOUT_VERSION} } } WHERE { OPTIONAL { GRAPH ${META} { ${META} ` +
        `${p(meta.layoutVersion)} ?v } } }`,
    );
  }
}
