import type { RequestHandler } from 'express';
import { HttpError } from '../errors.js';
import { writeJsonLd, type NodeDocument } from '../rdf/jsonld-writer.js';
import { writeRdf } from '../rdf/rdf-writer.js';
import { namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { api, rdf, xsd } from '../rdf/vocab.js';
import type { ResponseFormat } from './negotiation.js';

/** A document of triples around one root node, in the negotiated format. */
export async function serialise(doc: NodeDocument, format: ResponseFormat): Promise<Buffer> {
  return Buffer.from(format === 'jsonld' ? writeJsonLd(doc) : await writeRdf(doc.triples, format));
}

/** The triples of an api:Collection at `url`: its type, `hasTotalItems` and one `hasItem` per item. */
export function collectionTriples(url: string, total: number, items: readonly string[]): Quad[] {
  const s = namedNode(url);
  return [
    quad(s, namedNode(rdf.type), namedNode(api.Collection)),
    quad(s, namedNode(api.hasTotalItems), xsdLiteral(total, xsd.integer)),
    ...items.map((item) => quad(s, namedNode(api.hasItem), namedNode(item))),
  ];
}

/** 405 with `Allow` for a path that exists but not for this method. */
export function methodNotAllowed(allow: string): RequestHandler {
  return (req, res) => {
    res.setHeader('Allow', allow);
    throw new HttpError(405, 'method_not_allowed', {
      message: `${req.method} is not allowed here (allowed: ${allow})`,
    });
  };
}
