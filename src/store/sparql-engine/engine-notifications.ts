import { dateTimeLiteral, iriToNt, isValidIri, literal, termToNt, tripleToNt, type Quad } from '../../rdf/terms.js';
import { api, store as meta } from '../../rdf/vocab.js';
import type { NotificationFilter, ReceivedNotificationStore } from '../graph-store.js';
import type { GraphReader, SparqlReader } from '../readers.js';
import { payloadTriples } from '../schema/annotated-graph.js';
import { receivedNotificationFromNTriples, type ReceivedNotificationRecord } from '../schema/received-notifications.js';

const p = iriToNt;

/**
 * Received notifications on a SPARQL engine: ordinary graphs (src/store/schema/received-notifications.ts),
 * found by the receipt on each graph's IRI. The embedded store keeps them in its archive instead.
 */
export class EngineNotifications implements ReceivedNotificationStore {
  constructor(
    private readonly engine: SparqlReader & GraphReader,
    /** Removes graphs whole, in one update. */
    private readonly removeGraphs: (graphs: readonly string[]) => Promise<void>,
  ) {}

  async withId(iri: string): Promise<ReceivedNotificationRecord | undefined> {
    if (!isValidIri(iri)) return undefined;
    return this.first(`GRAPH ?g { ?g ${p(meta.receivedNotification)} ${p(iri)} }`);
  }

  async withKey(sender: string, key: string): Promise<ReceivedNotificationRecord | undefined> {
    return this.first(
      `GRAPH ?g { ?g ${p(meta.receivedFrom)} ${p(sender)} ; ${p(meta.idempotencyKey)} ${termToNt(literal(key))} }`,
    );
  }

  /**
   * The clock in microseconds, as for Logistics Events (SparqlStoredEvents.lastSequence): a MAX over the receipts grows
   * with them (Virtuoso reads every one). Numbers are claimed one at a time from there, far fewer than one a
   * microsecond, so a later start begins above all an earlier one claimed; other processes' numbers come with the
   * feed (ReceivedNotifications takes the highest it sees).
   */
  lastSequence(): Promise<number> {
    return Promise.resolve(Date.now() * 1000);
  }

  async list(
    filter: NotificationFilter,
    skip: number,
    limit: number,
  ): Promise<{ total: number; page: ReceivedNotificationRecord[] }> {
    // An IRI no notification can carry (from a query parameter) matches none.
    if ([filter.sender, filter.eventType, filter.object].some((iri) => iri !== undefined && !isValidIri(iri)))
      return { total: 0, page: [] };
    const where = matching(filter);
    const [count, rows] = await Promise.all([
      this.engine.select(`SELECT (COUNT(?g) AS ?total) WHERE { ${where} }`),
      this.engine.select(`SELECT ?g ?n WHERE { ${where} } ORDER BY ?n OFFSET ${skip} LIMIT ${limit}`),
    ]);
    const page = await Promise.all(rows.results.bindings.map((b) => this.record(b.g.value)));
    return {
      total: Number(count.results.bindings[0]?.total?.value ?? 0),
      page: page.filter((r): r is ReceivedNotificationRecord => r !== undefined),
    };
  }

  async triples(record: ReceivedNotificationRecord): Promise<Quad[]> {
    return payloadTriples(record.graph, await this.engine.graphTriples(record.graph));
  }

  async removeReceivedBefore(cutoff: Date, max: number): Promise<number> {
    const rows = await this.engine.select(
      `SELECT ?g WHERE { GRAPH ?g { ?g ${p(meta.receivedAt)} ?at } FILTER (?at < ` +
        `${termToNt(dateTimeLiteral(cutoff))}) } LIMIT ${max}`,
    );
    const graphs = rows.results.bindings.map((b) => b.g.value);
    if (graphs.length > 0) await this.removeGraphs(graphs);
    return graphs.length;
  }

  private async first(pattern: string): Promise<ReceivedNotificationRecord | undefined> {
    const rows = await this.engine.select(`SELECT ?g WHERE { ${pattern} } LIMIT 1`);
    const graph = rows.results.bindings[0]?.g?.value;
    return graph === undefined ? undefined : this.record(graph);
  }

  private async record(graph: string): Promise<ReceivedNotificationRecord | undefined> {
    const triples = await this.engine.graphTriples(graph);
    return receivedNotificationFromNTriples(graph, triples.map(tripleToNt).join('\n'));
  }
}

/** The graph pattern of the received notifications `filter` selects, binding ?g and ?n (arrival number). */
function matching(filter: NotificationFilter): string {
  const parts = [`?g ${p(meta.receivedSequence)} ?n ; ${p(meta.receivedNotification)} ?iri`];
  if (filter.sender !== undefined) parts.push(`?g ${p(meta.receivedFrom)} ${p(filter.sender)}`);
  if (filter.eventType !== undefined) parts.push(`?iri ${p(api.hasEventType)} ${p(filter.eventType)}`);
  if (filter.object !== undefined) parts.push(`?iri ${p(api.hasLogisticsObject)} ${p(filter.object)}`);
  const times: string[] = [];
  if (filter.receivedAfter || filter.receivedBefore) parts.push(`?g ${p(meta.receivedAt)} ?at`);
  if (filter.receivedAfter) times.push(`?at >= ${termToNt(dateTimeLiteral(filter.receivedAfter))}`);
  if (filter.receivedBefore) times.push(`?at <= ${termToNt(dateTimeLiteral(filter.receivedBefore))}`);
  return `GRAPH ?g { ${parts.join(' . ')} }${times.length > 0 ? ` FILTER (${times.join(' && ')})` : ''}`;
}
