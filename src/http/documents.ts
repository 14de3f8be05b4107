import type { RequestHandler } from 'express';
import { HttpError } from '../errors.js';
import { writeJsonLd, type NodeDocument } from '../rdf/jsonld-writer.js';
import { writeRdf } from '../rdf/rdf-writer.js';
import type { ResponseFormat } from './negotiation.js';

/** A document of triples around one root node, in the negotiated format. */
export async function serialise(doc: NodeDocument, format: ResponseFormat): Promise<Buffer> {
  return Buffer.from(format === 'jsonld' ? writeJsonLd(doc) : await writeRdf(doc.triples, format));
}

/** 405 with `Allow` for a path that exists but not for this method. */
export function methodNotAllowed(allow: string): RequestHandler {
  return (req, res) => {
    res.setHeader('Allow', allow);
    throw new HttpError(405, 'method_not_allowed', { message: `${req.method} is not allowed here (allowed: ${allow})` });
  };
}
