import { BoundedCache } from '../bounded-cache.js';
import type { Caller } from '../domain/access/authorizer.js';
import type { LogisticsObjects, ObjectView } from '../domain/objects/logistics-objects.js';
import { writeJsonLd, type NodeDocument } from '../rdf/jsonld-writer.js';
import { writeRdf } from '../rdf/rdf-writer.js';
import { namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { api, xsd } from '../rdf/vocab.js';
import type { ResponseFormat } from './negotiation.js';

/** The forms of one revision, by format. */
type Forms = Readonly<Partial<Record<ResponseFormat, Buffer>>>;

/**
 * The bodies kept of one object, all made while `latest` was its latest revision number, which
 * each of them states: by revision number, then format.
 */
interface KeptBodies {
  latest: number;
  revisions: ReadonlyMap<number, Forms>;
  bytes: number;
}

export interface RepresentationOptions {
  /** The `at` value as the client wrote it; linked objects carry it too. */
  at?: { raw: string; instant: Date };
  embedded: boolean;
}

/**
 * Serialises Logistics Object revisions. Revision graphs never change, so the plain form (no `at`,
 * no embedding) of a revision is cached per object until the object gets a new latest revision,
 * which every form names: then they are all forgotten. The cache holds at most `maxBytes` of bodies.
 */
export class Representations {
  private readonly cache: BoundedCache<string, KeptBodies>;

  constructor(
    private readonly objects: LogisticsObjects,
    maxBytes: number,
  ) {
    this.cache = new BoundedCache(maxBytes, (kept) => kept.bytes);
    objects.onSuperseded((object) => this.cache.delete(object));
  }

  /** What the cache holds: objects, and bytes of their bodies. */
  get held(): { objects: number; bytes: number } {
    return { objects: this.cache.size, bytes: this.cache.weight };
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
      if (!cacheable) return Buffer.from(text);
      // Memory of its own size: a small Buffer is a slice of Node's shared pool, and kept, it keeps the whole slab.
      const body = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
      body.write(text);
      this.keep(view, format, body);
      return body;
    });
  }

  /** The plain form of a revision (no `at`, no embedding) if the cache holds it; never builds it. */
  cached(view: ObjectView, format: ResponseFormat): Buffer | undefined {
    const kept = this.cache.get(view.entry.iri);
    return kept?.latest === view.latest.number ? kept.revisions.get(view.revision.number)?.[format] : undefined;
  }

  /** Keeps a plain form, unless the object got a new latest revision while it was built. */
  private keep(view: ObjectView, format: ResponseFormat, body: Buffer): void {
    const latest = view.latest.number;
    if (this.objects.index.latest(view.entry).number !== latest) return;
    const held = this.cache.get(view.entry.iri);
    const kept = held?.latest === latest ? held : { latest, revisions: new Map(), bytes: 0 };
    const forms = kept.revisions.get(view.revision.number);
    const revisions = new Map(kept.revisions).set(view.revision.number, { ...forms, [format]: body });
    const bytes = kept.bytes - (forms?.[format]?.length ?? 0) + body.length;
    this.cache.set(view.entry.iri, { latest, revisions, bytes });
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
    const inlined = options.embedded
      ? await Promise.all(
          (
            await this.objects.linkedViews(root.triples, caller, { at: options.at?.instant }, new Set([view.entry.iri]))
          ).map((v) => this.document(v)),
        )
      : [];
    const linked = [root, ...inlined].flatMap((doc) => doc.triples);
    const linkIri = options.at ? await this.atLinker(linked, options.at.raw) : undefined;
    if (format === 'jsonld') return writeJsonLd(root, { inline: new Map(inlined.map((d) => [d.iri, d])), linkIri });
    const triples = [root, ...inlined].flatMap((doc) => withRevisionNumbers(doc));
    return writeRdf(linkIri ? withLinks(triples, root.iri, linkIri) : triples, format);
  }

  /** Adds `?at=` to IRIs of Logistics Objects of this server (those `triples` name). */
  private async atLinker(triples: readonly Quad[], at: string): Promise<(iri: string) => string> {
    const exists = await this.objects.existenceIn(triples);
    return (iri) => (exists(iri) ? `${iri}?at=${encodeURIComponent(at)}` : iri);
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
