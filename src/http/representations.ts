import { BoundedCache } from '../bounded-cache.js';
import type { Caller } from '../domain/access/authorizer.js';
import type { LogisticsObjects, ObjectView } from '../domain/objects/logistics-objects.js';
import { writeJsonLd, type NodeDocument } from '../rdf/jsonld-writer.js';
import { writeRdf } from '../rdf/rdf-writer.js';
import { namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { api, xsd } from '../rdf/vocab.js';
import type { ResponseFormat } from './negotiation.js';

const cacheKey = (view: ObjectView, format: ResponseFormat) => `${view.revision.graph}|${format}|${view.latest.number}`;

export interface RepresentationOptions {
  /** The `at` value as the client wrote it; linked objects carry it too. */
  at?: { raw: string; instant: Date };
  embedded: boolean;
}

/**
 * Serialises Logistics Object revisions. Revision graphs never change, so the plain latest
 * form (no `at`, no embedding) is cached per revision, format and latest revision number.
 */
export class Representations {
  private readonly cache: BoundedCache<string, Buffer>;

  constructor(
    private readonly objects: LogisticsObjects,
    maxEntries: number,
  ) {
    this.cache = new BoundedCache(maxEntries);
  }

  /** The body of a revision: from the cache when it holds it (no promise then), else built and kept. */
  render(
    view: ObjectView,
    format: ResponseFormat,
    caller: Caller,
    options: RepresentationOptions,
  ): Buffer | Promise<Buffer> {
    const cacheable = !options.at && !options.embedded;
    const hit = cacheable ? this.cached(view, format) : undefined;
    if (hit) return hit;
    return this.build(view, format, caller, options).then((text) => {
      const body = Buffer.from(text);
      if (cacheable) this.cache.set(cacheKey(view, format), body);
      return body;
    });
  }

  /** The plain form of a revision (no `at`, no embedding) if the cache holds it; never builds it. */
  cached(view: ObjectView, format: ResponseFormat): Buffer | undefined {
    return this.cache.get(cacheKey(view, format));
  }

  private async document(view: ObjectView): Promise<NodeDocument> {
    return {
      iri: view.entry.iri,
      triples: await this.objects.triples(view.revision),
      revision: { number: view.revision.number, latest: view.latest.number },
    };
  }

  private async build(
    view: ObjectView,
    format: ResponseFormat,
    caller: Caller,
    options: RepresentationOptions,
  ): Promise<string> {
    const root = await this.document(view);
    const linkIri = options.at ? this.atLinker(options.at.raw) : undefined;
    const inlined = options.embedded
      ? await Promise.all(
          (
            await this.objects.linkedViews(root.triples, caller, { at: options.at?.instant }, new Set([view.entry.iri]))
          ).map((v) => this.document(v)),
        )
      : [];
    if (format === 'jsonld') return writeJsonLd(root, { inline: new Map(inlined.map((d) => [d.iri, d])), linkIri });
    const triples = [root, ...inlined].flatMap((doc) => withRevisionNumbers(doc));
    return writeRdf(linkIri ? withLinks(triples, root.iri, linkIri) : triples, format);
  }

  /** Adds `?at=` to IRIs of Logistics Objects of this server. */
  private atLinker(at: string): (iri: string) => string {
    return (iri) => (this.objects.index.get(iri) ? `${iri}?at=${encodeURIComponent(at)}` : iri);
  }
}

function withRevisionNumbers(doc: NodeDocument): Quad[] {
  const subject = namedNode(doc.iri);
  return [
    ...doc.triples,
    quad(subject, namedNode(api.hasRevision), xsdLiteral(doc.revision!.number, xsd.integer)),
    quad(subject, namedNode(api.hasLatestRevision), xsdLiteral(doc.revision!.latest, xsd.integer)),
  ];
}

/**
 * Every link to an object of this server becomes its `?at=` IRI (ONE Record API,
 * "GET /logistics-objects/<logistics_object_id>", rules for `at`), and so does the subject of an
 * embedded object: its data then sits on the IRI that links to it and names that revision, as in
 * JSON-LD. The root keeps its own IRI.
 */
function withLinks(triples: readonly Quad[], root: string, linkIri: (iri: string) => string): Quad[] {
  return triples.map(({ subject, predicate, object }) => {
    const notRoot = subject.termType === 'NamedNode' && subject.value !== root;
    const linkedSubject = notRoot ? namedNode(linkIri(subject.value)) : subject;
    const linkedObject = object.termType === 'NamedNode' ? namedNode(linkIri(object.value)) : object;
    return quad(linkedSubject, predicate, linkedObject);
  });
}
