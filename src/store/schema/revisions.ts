import { dateTimeLiteral, iriToNt, literal, namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { store as meta, xsd } from '../../rdf/vocab.js';
import { partBytes, partLines, startsComment, type CommitRecord, type CommitBytes } from '../commit-record.js';
import { entryOf } from '../../map-entry.js';

/*
 * Revisions. The hot store holds the latest revision of each object in the graph named after
 * the object (`latestGraph`), changed in place by each new revision; every revision, the latest
 * included, is in the revision archive (src/store/embedded/archive/revision-archive.ts), which reads it back under
 * its own name, `revisionGraph(object, n)`. Revision metadata: one entry per revision in
 * `urn:onerecord:store:meta`, written in the same commit as the revision; the hot store keeps
 * it for revision 1 (the object's creation) and the latest revision only, and reads it back
 * once at start to rebuild the revision index.
 */

/** Revision metadata. */
export interface RevisionRecord {
  /** The Logistics Object. */
  object: string;
  number: number;
  /** Named graph that holds this revision's triples; it never changes once written. */
  graph: string;
  createdAt: Date;
  createdBy: string;
  /** Most specific type of the object at this revision. */
  mostSpecificType: string;
}

export const revisionGraph = (objectIri: string, revision: number) => `${objectIri}?revision=${revision}`;

/** The object and number of a revision graph's name (the inverse of `revisionGraph`); undefined for other graphs. */
export function revisionOfGraph(graph: string): { object: string; number: number } | undefined {
  const match = /^(.+)\?revision=([1-9][0-9]*)$/.exec(graph);
  return match ? { object: match[1], number: Number(match[2]) } : undefined;
}

/** The hot store's graph of an object: its latest revision, changed in place. */
export const latestGraph = (objectIri: string) => objectIri;

/** The metadata quads of one revision. */
export function revisionQuads(r: RevisionRecord): Quad[] {
  const g = namedNode(meta.metaGraph);
  const subject = namedNode(r.graph);
  return [
    quad(subject, namedNode(meta.revisionOf), namedNode(r.object), g),
    quad(subject, namedNode(meta.revisionNumber), xsdLiteral(r.number, xsd.integer), g),
    quad(subject, namedNode(meta.revisionCreatedAt), dateTimeLiteral(r.createdAt), g),
    quad(subject, namedNode(meta.revisionCreatedBy), namedNode(r.createdBy), g),
    quad(subject, namedNode(meta.revisionType), namedNode(r.mostSpecificType), g),
  ];
}

/**
 * An object's mark of its latest revision, which a SPARQL engine keeps (replaced by each new revision) so that the
 * object list and an object's latest revision are read without a scan of every revision's metadata.
 */
export function latestRevisionQuad(r: RevisionRecord): Quad {
  return quad(namedNode(r.object), namedNode(meta.latestRevision), namedNode(r.graph), namedNode(meta.metaGraph));
}

/**
 * An object's latest revision as one plain literal (number, time, author, type, space-separated: IRIs hold no space),
 * which a SPARQL engine keeps beside the mark: one quad to read where the revision's metadata is five.
 */
export function objectRecordQuad(r: RevisionRecord): Quad {
  const record = `${r.number} ${r.createdAt.toISOString()} ${r.createdBy} ${r.mostSpecificType}`;
  return quad(namedNode(r.object), namedNode(meta.objectRecord), literal(record), namedNode(meta.metaGraph));
}

/** What a SPARQL engine keeps of an object's latest revision beside its metadata: its mark and its record. */
export const engineLatestQuads = (r: RevisionRecord): Quad[] => [latestRevisionQuad(r), objectRecordQuad(r)];

/** The revision an object record (`objectRecordQuad`) names; undefined if it does not parse. */
export function revisionOfRecord(object: string, record: string): RevisionRecord | undefined {
  const [number, createdAt, createdBy, mostSpecificType, ...rest] = record.split(' ');
  const n = Number(number);
  if (rest.length > 0 || !Number.isInteger(n) || n < 1 || !mostSpecificType || Number.isNaN(Date.parse(createdAt)))
    return undefined;
  return {
    object,
    number: n,
    graph: revisionGraph(object, n),
    createdAt: new Date(createdAt),
    createdBy,
    mostSpecificType,
  };
}

/** What `readRevisions` reads: one graph of the store as N-Triples (OxigraphIndex). */
export interface GraphTextReader {
  graphNTriples(graph: string): string;
}

const REVISION_FIELDS = new Map<string, keyof RevisionFields>([
  [meta.revisionOf, 'object'],
  [meta.revisionNumber, 'number'],
  [meta.revisionCreatedAt, 'createdAt'],
  [meta.revisionCreatedBy, 'createdBy'],
  [meta.revisionType, 'type'],
  // Data written before the type predicate was renamed carries the old one.
  [meta.revisionTypeBefore, 'type'],
]);
type RevisionFields = Record<'object' | 'number' | 'createdAt' | 'createdBy' | 'type', string>;

/**
 * The subject, predicate and value (an IRI, or a literal's lexical form) of one line of the
 * metadata graph whose object ends at `objectEnd`: split as text, which is exact for these lines
 * (IRIs are never escaped, see iriToNt, and numbers and dates need no escapes).
 */
function splitMetaLine(
  line: string,
  objectEnd: number,
): { subject: string; predicate: string; value: string } | undefined {
  const subjectEnd = line.indexOf('> <');
  if (!line.startsWith('<') || subjectEnd < 0) return undefined;
  const predicateEnd = line.indexOf('> ', subjectEnd + 3);
  const object = line.slice(predicateEnd + 2, objectEnd);
  const value = object.startsWith('<') ? object.slice(1, -1) : object.slice(1, object.lastIndexOf('"'));
  return { subject: line.slice(1, subjectEnd), predicate: line.slice(subjectEnd + 3, predicateEnd), value };
}

/**
 * The revisions whose metadata the hot store keeps (revision 1 and the latest of each object), oldest
 * number first. Read at start from the metadata graph's text lines (as Oxigraph writes them), far
 * faster than a SPARQL join over every object.
 */
export function readRevisions(reader: GraphTextReader): RevisionRecord[] {
  const metadata = new RevisionMetadata();
  for (const line of reader.graphNTriples(meta.metaGraph).split('\n')) metadata.add(line, line.length - 2);
  return metadata.records();
}

/**
 * The revision metadata of the metadata graph, taken line by line: from the hot store's graph
 * (readRevisions), from a snapshot's N-Quads as it is written (the memory image a snapshot writes
 * carries it), or from the revisions a memory image carries, brought up to date with the journal
 * records replayed over it.
 */
export class RevisionMetadata {
  private readonly found = new Map<string, Partial<RevisionFields>>();

  constructor(revisions: readonly RevisionRecord[] = []) {
    for (const r of revisions) {
      this.found.set(r.graph, {
        object: r.object,
        number: String(r.number),
        createdAt: r.createdAt.toISOString(),
        createdBy: r.createdBy,
        type: r.mostSpecificType,
      });
    }
  }

  /** One line of the metadata graph, its object ending at `objectEnd`; other lines are passed over. */
  add(line: string, objectEnd: number): void {
    const split = splitMetaLine(line, objectEnd);
    const field = split && REVISION_FIELDS.get(split.predicate);
    if (!field) return;
    entryOf(this.found, split.subject, () => ({}) as Partial<Record<string, string>>)[field] = split.value;
  }

  /** N-Quads in whole lines, any graph (a snapshot being written): the metadata graph's lines are taken. */
  addNQuads(data: Buffer): void {
    for (const line of metaLinesInBytes(data)) this.add(line, line.length - META_SUFFIX.length);
  }

  /**
   * A journal record replayed over this metadata, as applying it to the store changes the graph:
   * the fields whose lines it deletes go, then those it inserts are set. (The store inserts first,
   * but a record never inserts and deletes the same line: recordFor keeps them apart.)
   */
  apply(record: CommitRecord | CommitBytes): void {
    for (const line of metaLinesOf(record.delete)) {
      const split = splitMetaLine(line, line.length - META_SUFFIX.length);
      const field = split && REVISION_FIELDS.get(split.predicate);
      if (field) delete this.found.get(split.subject)?.[field];
    }
    for (const line of metaLinesOf(record.insert)) this.add(line, line.length - META_SUFFIX.length);
  }

  /** The revisions whose metadata is whole, oldest number first. */
  records(): RevisionRecord[] {
    const out: RevisionRecord[] = [];
    for (const [graph, f] of this.found) {
      if (
        f.object === undefined ||
        f.number === undefined ||
        f.createdAt === undefined ||
        f.createdBy === undefined ||
        f.type === undefined
      )
        continue;
      out.push({
        object: f.object,
        graph,
        number: Number(f.number),
        createdAt: new Date(f.createdAt),
        createdBy: f.createdBy,
        mostSpecificType: f.type,
      });
    }
    return out.sort((a, b) => a.number - b.number);
  }
}

/** Revision metadata as JSON text, for a memory image to carry (index-image.ts): read back by revisionsFromJson. */
export function revisionsToJson(revisions: readonly RevisionRecord[]): string {
  return JSON.stringify(
    revisions.map((r) => [r.object, r.number, r.graph, r.createdAt.getTime(), r.createdBy, r.mostSpecificType]),
  );
}

export function revisionsFromJson(text: string): RevisionRecord[] {
  // Built as readRevisions builds them (the same keys in the same order).
  return (JSON.parse(text) as [string, number, string, number, string, string][]).map(
    ([object, number, graph, at, createdBy, mostSpecificType]) => ({
      object,
      graph,
      number,
      createdAt: new Date(at),
      createdBy,
      mostSpecificType,
    }),
  );
}

/** A revision as a journal record writes it: its metadata and its change to the object's graph, as N-Triples lines. */
export interface WrittenRevision {
  record: RevisionRecord;
  /**
   * True when the record holds the whole revision in the revision's own graph, as records written
   * before the revision archive did (`ins` then holds every line of it).
   */
  whole: boolean;
  /** Lines the revision removes from the one before (none for revision 1); taken from the record when first read. */
  readonly del: string;
  /** Lines it adds (all of them for revision 1); taken from the record when first read. */
  readonly ins: string;
}

const META_SUFFIX = ` ${iriToNt(meta.metaGraph)} .`;
const META_SUFFIX_BYTES = Buffer.from(META_SUFFIX);
const NEWLINE = 0x0a;

/** Whether one part of a record holds `text`, without decoding it. */
const holds = (part: string | Uint8Array, text: string) =>
  typeof part === 'string' ? part.includes(text) : partBytes(part).includes(text);
const hasMeta = (part: string | Uint8Array) => holds(part, META_SUFFIX);

/**
 * The lines of one part of a record (its insertions or deletions) in the metadata graph. A stored
 * part is searched as bytes and only those lines decoded: a replayed record's other lines are most
 * of it, and read by no one here.
 */
function metaLinesOf(part: string | Uint8Array): string[] {
  return typeof part === 'string'
    ? part.split('\n').filter((line) => line.endsWith(META_SUFFIX))
    : metaLinesInBytes(partBytes(part));
}

/** The lines of N-Quads bytes in the metadata graph, decoded: only they are. */
function metaLinesInBytes(data: Buffer): string[] {
  const lines: string[] = [];
  for (let at = data.indexOf(META_SUFFIX_BYTES); at >= 0; at = data.indexOf(META_SUFFIX_BYTES, at + 1)) {
    const end = at + META_SUFFIX_BYTES.length;
    if (end === data.length || data[end] === NEWLINE)
      lines.push(data.toString('utf8', data.lastIndexOf(NEWLINE, at) + 1, end));
  }
  return lines;
}

/**
 * The revisions a journal record writes, read back from its N-Quads (our own serialisation:
 * one quad per line, its graph last): the revision metadata it inserts and its lines in each
 * object's graph, as N-Triples. Records of other writes are told apart without decoding them.
 */
export function revisionWritesIn(record: CommitRecord | CommitBytes): WrittenRevision[] {
  if (!hasMeta(record.insert)) return [];
  const found = new Map<string, Partial<Record<string, string>>>();
  for (const line of metaLinesOf(record.insert)) {
    const split = splitMetaLine(line, line.length - META_SUFFIX.length);
    if (!split) continue;
    entryOf(found, split.subject, () => ({}) as Partial<Record<string, string>>)[split.predicate] = split.value;
  }
  if (found.size === 0) return [];
  // Grouped when first needed: a replayed record's revisions are mostly in the archive already, which then reads only
  // their metadata.
  const inserted = once(() => linesByGraph(record.insert));
  const deleted = once(() => linesByGraph(record.delete));
  const inGraph = (groups: Map<string, string[]>, name: string) => (groups.get(iriToNt(name)) ?? []).join('');
  const out: WrittenRevision[] = [];
  for (const [graph, f] of found) {
    const object = f[meta.revisionOf];
    if (object === undefined) continue;
    // Records written before the archive: the revision in a graph of its own (not grouped unless the record has its
    // lines).
    const whole = holds(record.insert, ` ${iriToNt(graph)} .`) ? inGraph(inserted(), graph) : '';
    if (whole !== '') {
      out.push({ record: revisionRecord(object, graph, f), whole: true, del: '', ins: whole });
      continue;
    }
    const latest = latestGraph(object);
    const del = once(() => inGraph(deleted(), latest));
    const ins = once(() => inGraph(inserted(), latest));
    out.push({
      record: revisionRecord(object, graph, f),
      whole: false,
      get del() {
        return del();
      },
      get ins() {
        return ins();
      },
    });
  }
  return out;
}

/**
 * Each line of a record's part as N-Triples under its graph, grouped once (a record may write many
 * revisions). Archive lines (comments, of finished graphs: never a revision's) are not read.
 */
function linesByGraph(part: string | Uint8Array): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const line of partLines(part, (first) => !startsComment(first))) {
    if (!line.endsWith('> .')) continue;
    const at = line.lastIndexOf(' <');
    entryOf(groups, line.slice(at + 1, -2), () => []).push(`${line.slice(0, at)} .\n`);
  }
  return groups;
}

/** `make()`, computed when first asked and kept. */
function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}

function revisionRecord(object: string, graph: string, f: Partial<Record<string, string>>): RevisionRecord {
  return {
    object,
    number: Number(f[meta.revisionNumber]),
    graph,
    createdAt: new Date(f[meta.revisionCreatedAt]!),
    createdBy: f[meta.revisionCreatedBy]!,
    mostSpecificType: (f[meta.revisionType] ?? f[meta.revisionTypeBefore])!,
  };
}
