import { Parser } from 'n3';
import type { AccessControl, Caller } from '../auth/access-control.js';
import { HttpError, badQuery, notFound } from '../errors.js';
import type { CargoOntology } from '../rdf/ontology.js';
import { literal, namedNode, quad, type Quad } from '../rdf/terms.js';
import { cargo, rdf, xsd } from '../rdf/vocab.js';
import { isWellTyped } from '../rdf/xsd-lexical.js';
import type { GraphStore, QuadChange } from '../store/graph-store.js';
import { shapeError, type ShapeValidator, type Violation } from '../shapes/validator.js';
import { splitIntoObjects, type NewObject } from './new-objects.js';
import { revisionGraph, revisionMetadataQuads, type LogisticsObjectEntry, type RevisionIndex, type RevisionInfo } from './revision-index.js';

/** Which revision a read asks for: the latest by default. */
export interface RevisionSelector {
  at?: Date;
  revision?: number;
}

/** A revision of a Logistics Object as a reader sees it. */
export interface ObjectView {
  entry: LogisticsObjectEntry;
  revision: RevisionInfo;
  latest: RevisionInfo;
}

export interface Created {
  iri: string;
  typeHeader: string;
}

/** Parses `at` in `YYYYMMDDThhmmssZ` or RFC 3339 form. */
export function parseInstant(value: string, parameter: string): Date {
  const compact = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  const iso = compact ? `${compact[1]}-${compact[2]}-${compact[3]}T${compact[4]}:${compact[5]}:${compact[6]}Z` : value;
  const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  const date = new Date(iso);
  // Date rolls impossible days over (2024-02-30 is 1 March): the calendar is checked on the text.
  if (!rfc3339.test(iso) || Number.isNaN(date.getTime()) || !isWellTyped(iso.replace(/[t ]/, 'T').replace(/z$/, 'Z'), xsd.dateTime)) {
    throw badQuery(parameter, `${parameter} must be YYYYMMDDThhmmssZ or an RFC 3339 date-time`);
  }
  return date;
}

/** How many parsed revisions `triples()` keeps (about 10 KB each for a 40-triple object). */
const PARSED_REVISIONS_KEPT = 2_000;

export class LogisticsObjects {
  readonly objectsPrefix: string;
  private readonly parsedRevisions = new Map<string, readonly Quad[]>();

  constructor(
    private readonly store: GraphStore,
    readonly index: RevisionIndex,
    private readonly ontology: CargoOntology,
    private readonly access: AccessControl,
    baseUrl: string,
    /** Data-model validation of every revision written; none when switched off. */
    private readonly shapes?: ShapeValidator,
  ) {
    this.objectsPrefix = `${baseUrl}/logistics-objects/`;
  }

  typeHeaderOf(types: string[]): string {
    return this.ontology.mostSpecific(types)[0] ?? cargo.LogisticsObject;
  }

  /**
   * Creates the object(s) a body describes in one durable commit. The ids are claimed
   * synchronously first, so a concurrent create of the same id gets 409.
   */
  async create(body: Quad[], caller: Caller): Promise<Created> {
    const objects = splitIntoObjects(body, {
      ontology: this.ontology,
      objectsPrefix: this.objectsPrefix,
      exists: (iri) => this.index.isTaken(iri),
    });
    const violations = objects.flatMap((o) => this.shapeViolations(o.triples));
    if (violations.length > 0) throw shapeError(violations, 400);
    return this.createObjects(objects, caller.agent);
  }

  /** How `triples` (a revision, an event, a received API object) break the data model's shapes. */
  shapeViolations(triples: readonly Quad[]): Violation[] {
    return this.shapes?.validate(triples) ?? [];
  }

  private async createObjects(objects: NewObject[], agent: string): Promise<Created> {
    for (const o of objects) this.index.reserve(o.iri);
    const createdAt = new Date();
    const revisions = objects.map((o) => ({
      iri: o.iri,
      info: { number: 1, graph: revisionGraph(o.iri, 1), createdAt, createdBy: agent, typeHeader: this.typeHeaderOf(o.types) },
      triples: o.triples,
    }));
    const insert = revisions.flatMap((r) => revisionMetadataQuads(r.iri, r.info));
    const graphs = revisions.map((r) => ({ graph: r.info.graph, triples: r.triples }));
    try {
      await this.store.commit({ insert, graphs }, () => {
        for (const r of revisions) this.index.addRevision(r.iri, r.info);
      });
    } finally {
      for (const o of objects) this.index.release(o.iri);
    }
    return { iri: revisions[0].iri, typeHeader: revisions[0].info.typeHeader };
  }

  /**
   * Claims the next revision number of `entry` synchronously; undefined when another write
   * already claimed it (a concurrent change on the same revision). Pair with `writeRevision`.
   */
  claimNextRevision(entry: LogisticsObjectEntry): number | undefined {
    const next = this.index.latest(entry).number + 1;
    return this.index.reserve(`${entry.iri}#${next}`) ? next : undefined;
  }

  /**
   * Durably writes revision `number` (claimed with `claimNextRevision`) holding `triples`,
   * together with `extra` quads in the same atomic commit. `onApplied` runs in the same tick
   * as the index update. The claim is released whatever happens. `triples` must be in the
   * store's canonical form (read from it, or canonicalised): they are kept as the parsed form of
   * the new revision, which the next change reads.
   */
  async writeRevision(
    entry: LogisticsObjectEntry,
    number: number,
    triples: Quad[],
    agent: string,
    extra: QuadChange = { insert: [] },
    onApplied?: () => void,
  ): Promise<RevisionInfo> {
    const info: RevisionInfo = {
      number,
      graph: revisionGraph(entry.iri, number),
      createdAt: new Date(Math.max(Date.now(), this.index.latest(entry).createdAt.getTime() + 1)),
      createdBy: agent,
      typeHeader: this.typeHeaderOf(triples.filter((t) => t.subject.value === entry.iri && t.predicate.value === rdf.type).map((t) => t.object.value)),
    };
    const insert = [...revisionMetadataQuads(entry.iri, info), ...extra.insert];
    try {
      await this.store.commit({ insert, graphs: [{ graph: info.graph, triples }], delete: extra.delete }, () => {
        // The next change reads the new revision; the one it replaces is rarely read again.
        this.parsedRevisions.delete(this.index.latest(entry).graph);
        this.index.addRevision(entry.iri, info);
        this.keepParsed(info.graph, triples);
        onApplied?.();
      });
    } finally {
      this.index.release(`${entry.iri}#${number}`);
    }
    return info;
  }

  /** Creates the data holder's Organization at first start. */
  async ensureDataHolder(iri: string, name: string): Promise<void> {
    if (this.index.isTaken(iri)) return;
    const subject = namedNode(iri);
    await this.createObjects(
      [{ iri, types: [cargo.Organization], triples: [quad(subject, namedNode(rdf.type), namedNode(cargo.Organization)), quad(subject, namedNode(cargo.name), literal(name))] }],
      iri,
    );
  }

  /** The entry of an object the caller may read: 404 if unknown, 403 (or 404) if not allowed. */
  readableEntry(iri: string, caller: Caller): LogisticsObjectEntry {
    const entry = this.index.get(iri);
    if (!entry) throw notFound(iri, 'Logistics Object not found');
    if (!this.access.canReadObject(caller, entry)) throw this.access.denied(iri);
    return entry;
  }

  read(iri: string, caller: Caller, selector: RevisionSelector): ObjectView {
    const entry = this.readableEntry(iri, caller);
    return { entry, revision: this.selectRevision(entry, selector), latest: this.index.latest(entry) };
  }

  selectRevision(entry: LogisticsObjectEntry, selector: RevisionSelector): RevisionInfo {
    if (selector.revision !== undefined) {
      const found = entry.revisions[selector.revision - 1];
      if (!found) throw notFound(entry.iri, `revision ${selector.revision} of this Logistics Object does not exist`);
      return found;
    }
    if (selector.at !== undefined) {
      if (selector.at.getTime() > Date.now()) throw badQuery('at', 'at must not be in the future');
      const found = this.index.revisionAt(entry, selector.at);
      if (!found) throw notFound(entry.iri, 'the Logistics Object did not exist at that time');
      return found;
    }
    return this.index.latest(entry);
  }

  /**
   * The triples of one revision (default graph), as the store keeps them. Revision graphs never
   * change, so recently read ones are kept parsed: a change reads the latest revision each time.
   * Callers must not modify the returned array.
   */
  triples(revision: RevisionInfo): readonly Quad[] {
    const cached = this.parsedRevisions.get(revision.graph);
    if (cached) return cached;
    const text = this.store.graphNTriples(revision.graph);
    if (!text) throw new HttpError(500, 'revision_missing', { message: 'a revision listed in the index has no data' });
    const triples: readonly Quad[] = new Parser({ format: 'application/n-triples' }).parse(text);
    this.keepParsed(revision.graph, triples);
    return triples;
  }

  private keepParsed(graph: string, triples: readonly Quad[]): void {
    if (this.parsedRevisions.size >= PARSED_REVISIONS_KEPT) this.parsedRevisions.delete(this.parsedRevisions.keys().next().value as string);
    this.parsedRevisions.set(graph, triples);
  }

  /** Linked Logistics Objects of this server that the caller may read, for `embedded=true`. */
  linkedViews(triples: readonly Quad[], caller: Caller, selector: RevisionSelector, skip: ReadonlySet<string>): ObjectView[] {
    const views: ObjectView[] = [];
    const seen = new Set(skip);
    for (const t of triples) {
      if (t.object.termType !== 'NamedNode' || t.predicate.value === rdf.type || seen.has(t.object.value)) continue;
      seen.add(t.object.value);
      const entry = this.index.get(t.object.value);
      if (!entry || !this.access.canReadObject(caller, entry)) continue;
      const revision = selector.at ? this.index.revisionAt(entry, selector.at) : this.index.latest(entry);
      if (revision) views.push({ entry, revision, latest: this.index.latest(entry) });
    }
    return views;
  }
}
