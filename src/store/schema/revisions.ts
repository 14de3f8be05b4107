import { dateTimeLiteral, iriToNt, namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { store as meta, xsd } from '../../rdf/vocab.js';
import type { SparqlReader } from '../graph-store.js';

/**
 * Revision metadata: one entry per revision graph in `urn:onerecord:store:meta`. Written in the
 * same commit as the revision's graph; read back once at start to rebuild the revision index.
 */
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

/** Every revision of every object, oldest number first (so revision n - 1 precedes n). */
export function readRevisions(reader: SparqlReader): RevisionRecord[] {
  const p = iriToNt;
  // Data written before the type predicate was renamed carries the old one.
  const rows = reader.select(`SELECT ?g ?o ?n ?at ?by ?type WHERE { GRAPH ${p(meta.metaGraph)} {
    ?g ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ;
       ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)}|${p(meta.revisionTypeBefore)} ?type } }`);
  return rows.results.bindings
    .map((b) => ({
      object: b.o.value,
      graph: b.g.value,
      number: Number(b.n.value),
      createdAt: new Date(b.at.value),
      createdBy: b.by.value,
      mostSpecificType: b.type.value,
    }))
    .sort((a, b) => a.number - b.number);
}
