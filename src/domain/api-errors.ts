import type { HttpError } from '../errors.js';
import { defaultGraph, literal, namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { api, rdf, xsd } from '../rdf/vocab.js';
import { newEmbeddedIri } from './objects/new-objects.js';

/**
 * The api:Error node of an error, the one builder for HTTP answers and for errors stored on an
 * action request: `iri` names the error (an `internal:` id in an answer, an IRI under the request
 * when stored), each detail is an api:ErrorDetail with its own `internal:` id and `hasCode` = the
 * HTTP status as text (docs/behaviour.md, "Errors").
 */
export function apiErrorQuads(error: HttpError, iri: string, graph: Quad['graph'] = defaultGraph()): Quad[] {
  const subject = namedNode(iri);
  const out = [
    quad(subject, namedNode(rdf.type), namedNode(api.Error), graph),
    quad(subject, namedNode(api.hasTitle), literal(error.title), graph),
  ];
  for (const d of error.details) {
    const detail = namedNode(newEmbeddedIri());
    out.push(
      quad(subject, namedNode(api.hasErrorDetail), detail, graph),
      quad(detail, namedNode(rdf.type), namedNode(api.ErrorDetail), graph),
      quad(detail, namedNode(api.hasCode), literal(String(error.status)), graph),
      quad(detail, namedNode(api.hasMessage), literal(d.message), graph),
    );
    if (d.property) out.push(quad(detail, namedNode(api.hasProperty), xsdLiteral(d.property, xsd.anyURI), graph));
    if (d.resource) out.push(quad(detail, namedNode(api.hasResource), xsdLiteral(d.resource, xsd.anyURI), graph));
  }
  return out;
}

/**
 * `t` with the pre-2.3 detail class `api:ErrorDetails` read as `api:ErrorDetail`, so errors
 * written in the older form (by an earlier version of this server or by a peer) are served in the 2.3 form.
 */
export function withCurrentErrorDetailClass(t: Quad): Quad {
  return t.predicate.value === rdf.type && t.object.value === api.ErrorDetails
    ? quad(t.subject, t.predicate, namedNode(api.ErrorDetail), t.graph)
    : t;
}
