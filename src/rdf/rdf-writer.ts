import { Writer } from 'n3';
import type { Quad } from './terms.js';
import { OUTPUT_CONTEXT } from './vocab.js';

export type RdfFormat = 'turtle' | 'ntriples';

/** Turtle (with the cargo/api/xsd prefixes) or N-Triples text of a set of triples. */
export function writeRdf(triples: readonly Quad[], format: RdfFormat): Promise<string> {
  const writer = new Writer(
    format === 'turtle' ? { format: 'text/turtle', prefixes: { ...OUTPUT_CONTEXT } } : { format: 'N-Triples' },
  );
  writer.addQuads([...triples]);
  return new Promise((resolve, reject) => writer.end((err, result) => (err ? reject(err) : resolve(result))));
}
