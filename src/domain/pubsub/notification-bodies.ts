import { BoundedCache } from '../../bounded-cache.js';
import { writeJsonLd } from '../../rdf/jsonld-writer.js';
import type { Quad } from '../../rdf/terms.js';
import type { StoreReader } from '../../store/graph-store.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';
import { payloadTriples } from '../../store/schema/annotated-graph.js';
import { notificationQuads } from './outbox.js';
import { objectOf, revisionOf, type Item } from './delivery-queues.js';
import type { Subscription, SubscriptionIndex } from './subscriptions.js';

/** Characters of the notification bodies kept for the other recipients of their entries. */
const BODY_CHARACTERS_KEPT = 8_000_000;

/**
 * The bodies of notifications as sent. Every recipient of an outbox entry gets the same body but
 * for its @id: it is serialised once per entry (with and without the object's body) and the @id
 * put in for each.
 */
export class NotificationBodies {
  /**
   * Per entry, its notifications' body around the @id: without the object's body at twice its number,
   * with it at twice its number + 1 (no key string made per send).
   */
  private readonly bodies = new BoundedCache<number, { before: string; after: string }>(
    BODY_CHARACTERS_KEPT,
    (b) => b.before.length + b.after.length,
  );

  constructor(
    private readonly store: StoreReader,
    private readonly index: SubscriptionIndex,
    private readonly readRevision: (revision: RevisionRecord) => Promise<readonly Quad[]>,
  ) {}

  /** The notification as sent (see `triples`), as JSON-LD. */
  async body(item: Item, s: Subscription | undefined): Promise<string> {
    if (item.parked) return writeJsonLd({ iri: item.iri, triples: await this.triples(item, s) });
    const key = 2 * item.sequence + (s?.sendLogisticsObjectBody ? 1 : 0);
    const shared = this.bodies.get(key);
    if (shared) return `${shared.before}${JSON.stringify(item.iri)}${shared.after}`;
    const body = writeJsonLd({ iri: item.iri, triples: await this.triples(item, s) });
    const id = JSON.stringify(item.iri);
    const at = body.indexOf(id);
    // The @id once only (as the root's): the rest of the body is the same for every recipient.
    if (at >= 0 && body.indexOf(id, at + id.length) < 0)
      this.bodies.set(key, { before: body.slice(0, at), after: body.slice(at + id.length) });
    return body;
  }

  /**
   * The notification as sent: as queued, plus the object's revision when `s` (whose subscriber may read it) asks for
   * the body.
   */
  private async triples(item: Item, s: Subscription | undefined): Promise<Quad[]> {
    const triples = item.parked
      ? payloadTriples(item.parked.graph, await this.store.graphTriples(item.parked.graph))
      : notificationQuads(item.iri, item.content!);
    const [object, number] = [objectOf(item), revisionOf(item)];
    if (!s?.sendLogisticsObjectBody || object === undefined || number === undefined) return triples;
    const entry = await this.index.revisions.find(object);
    const revision = entry && (await this.index.revisions.revision(entry, number));
    return revision ? [...triples, ...(await this.readRevision(revision))] : triples;
  }
}
