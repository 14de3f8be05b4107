import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import jsonld from 'jsonld';
import type { CargoOntology } from '../../src/rdf/ontology.js';

/** Copies of the official example payloads (see NOTICE.md there). */
export const EXAMPLES_DIR = fileURLToPath(new URL('../../../test/fixtures/onerecord-examples/', import.meta.url));

/** Where the examples put their objects; tests move them to the test server's base. */
const EXAMPLE_BASES = /https?:\/\/1r\.example\.com\/logistics-objects\//g;

export function readExample(name: string): string {
  return readFileSync(`${EXAMPLES_DIR}${name}`, 'utf8');
}

/** The example's text with its object ids (`http(s)://1r.example.com/logistics-objects/…`) under `objectsPrefix`. */
export function rebase(text: string, objectsPrefix: string): string {
  return text.replace(EXAMPLE_BASES, objectsPrefix);
}

/**
 * Upstream defects (also listed in the repository's SOURCES notes) that make an example an
 * invalid Logistics Object, and the smallest correction that makes it valid.
 */
export const KNOWN_DEFECTS: Readonly<Record<string, { reason: string; correct: (text: string) => string }>> = {
  'Piece_with_id.json': {
    reason: 'the "@id" starts with a space, so it is not an IRI',
    correct: (text) => text.replace('"@id": " ', '"@id": "'),
  },
  'Piece_with_id.rev3.json': {
    reason: 'the "@id" starts with a space, and it is a revision view (?at=…), not the id of an object',
    correct: (text) => text.replace(/"@id": " ([^"?]+)\?at=[0-9TZ]+"/, '"@id": "$1"'),
  },
  'Shipment_with_Piece.embedded.json': {
    reason: 'the "@id" of the embedded Piece starts with a space, so it is not an IRI',
    correct: (text) => text.replace('"@id": " ', '"@id": "'),
  },
};

const refuseRemote = (url: string): never => {
  throw new Error(`examples are read without loading ${url}`);
};

/** The example files whose top-level node has a type that is a LogisticsObject subclass. */
export async function logisticsObjectExamples(ontology: CargoOntology): Promise<string[]> {
  const names: string[] = [];
  for (const name of readdirSync(EXAMPLES_DIR)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    const expanded = await jsonld.expand(
      JSON.parse(readExample(name)) as jsonld.JsonLdDocument,
      { documentLoader: refuseRemote } as jsonld.Options.Expand,
    );
    const types = expanded.length === 1 ? ((expanded[0]['@type'] ?? []) as string[]) : [];
    if (types.some((t) => ontology.isLogisticsObjectClass(t))) names.push(name);
  }
  return names;
}
