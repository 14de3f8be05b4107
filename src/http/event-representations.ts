import { BoundedCache } from '../bounded-cache.js';
import type { EventPage, EventRecord } from '../domain/events/event-index.js';
import type { LogisticsEvents } from '../domain/events/logistics-events.js';
import { compactIri, withContext, writeJsonLdNode, type NodeDocument } from '../rdf/jsonld-writer.js';
import { tripleToNt } from '../rdf/terms.js';
import { INTERNAL_SCHEME, api } from '../rdf/vocab.js';
import { collectionTriples, serialise } from './documents.js';
import type { ResponseFormat } from './negotiation.js';

/** Compact JSON-LD nodes of events kept in memory (about 1 kB each). */
const DEFAULT_CACHED_NODES = 20_000;

/**
 * Serialises pages of Logistics Events as api:Collection documents. Events never change, so
 * the compact JSON-LD node of each event is kept once written, and a JSON-LD page is put
 * together from those texts: its cost grows with the page, not with the object's events.
 */
export class EventRepresentations {
  private readonly nodes: BoundedCache<string, string>;

  constructor(
    private readonly events: LogisticsEvents,
    maxNodes = DEFAULT_CACHED_NODES,
  ) {
    this.nodes = new BoundedCache(maxNodes);
  }

  /**
   * The Collection whose @id is `url`: `hasTotalItems` counts every match, `hasItem` holds the
   * page's events, left out for none, an object for one, an array for more.
   */
  async collection(url: string, page: EventPage, format: ResponseFormat): Promise<Buffer> {
    if (format !== 'jsonld') return serialise(await this.collectionDocument(url, page), format);
    const head = withContext({
      '@id': url,
      '@type': compactIri(api.Collection),
      [compactIri(api.hasTotalItems)]: page.total,
    });
    if (page.events.length === 0) return Buffer.from(head);
    const nodes = await Promise.all(page.events.map((record) => this.node(record)));
    const items = nodes.length === 1 ? nodes[0] : `[${nodes.join(',')}]`;
    // Each node is a complete JSON value, so it can go in as text before the head's closing brace.
    return Buffer.from(`${head.slice(0, -1)},${JSON.stringify(compactIri(api.hasItem))}:${items}}`);
  }

  /** The same Collection as triples, for Turtle and N-Triples. */
  private async collectionDocument(url: string, page: EventPage): Promise<NodeDocument> {
    const triples = collectionTriples(
      url,
      page.total,
      page.events.map((record) => record.iri),
    );
    // Only linked nodes (say `<object> a cargo:Shipment`) can occur in several events' graphs.
    const shared = new Set<string>();
    const graphs = await Promise.all(page.events.map((record) => this.events.triples(record)));
    for (const [i, record] of page.events.entries()) {
      for (const t of graphs[i]) {
        if (t.subject.value !== record.iri && !t.subject.value.startsWith(INTERNAL_SCHEME)) {
          const line = tripleToNt(t);
          if (shared.has(line)) continue;
          shared.add(line);
        }
        triples.push(t);
      }
    }
    return { iri: url, triples };
  }

  /** The compact JSON-LD node of one event, without @context, as text. */
  private async node(record: EventRecord): Promise<string> {
    const cached = this.nodes.get(record.iri);
    if (cached) return cached;
    const text = JSON.stringify(writeJsonLdNode({ iri: record.iri, triples: await this.events.triples(record) }));
    this.nodes.set(record.iri, text);
    return text;
  }
}
