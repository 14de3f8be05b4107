import { dateTimeLiteral, iriToNt, namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { store as meta, xsd } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

/** A Logistics Object that answers with a redirect to `location` (301 when permanent, else 302). */
export interface MoveRecord {
  object: string;
  location: string;
  permanent: boolean;
  movedAt: Date;
  movedBy: string;
}

/** The quads of a move in the moves graph; the same quads delete it again. */
export function moveQuads(move: MoveRecord): Quad[] {
  const g = namedNode(meta.movesGraph);
  const s = namedNode(move.object);
  return [
    quad(s, namedNode(meta.movedTo), namedNode(move.location), g),
    quad(s, namedNode(meta.movedPermanently), xsdLiteral(move.permanent, xsd.boolean), g),
    quad(s, namedNode(meta.movedAt), dateTimeLiteral(move.movedAt), g),
    quad(s, namedNode(meta.movedBy), namedNode(move.movedBy), g),
  ];
}

/** Every move in the moves graph, read once at start. */
export async function readMoves(reader: SparqlReader): Promise<MoveRecord[]> {
  const rows = await reader.select(`SELECT ?o ?to ?permanent ?at ?by WHERE { GRAPH ${iriToNt(meta.movesGraph)} {
    ?o ${iriToNt(meta.movedTo)} ?to ; ${iriToNt(meta.movedPermanently)} ?permanent ;
       ${iriToNt(meta.movedAt)} ?at ; ${iriToNt(meta.movedBy)} ?by } }`);
  return rows.results.bindings.map((b) => ({
    object: b.o.value,
    location: b.to.value,
    permanent: b.permanent.value === 'true',
    movedAt: new Date(b.at.value),
    movedBy: b.by.value,
  }));
}
