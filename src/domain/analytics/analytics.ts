import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError } from '../../errors.js';
import { QueryError } from '../../store/query-errors.js';
import type { Dataset, QueryResult, QueryService, View } from '../../store/query-service.js';
import type { ParsedQuery, ResultFormat } from '../../store/sparql-query.js';

// What the HTTP layer needs to speak the protocol, without reaching into the store.
export { VIEWS, type View } from '../../store/query-service.js';
export { FORMATS_OF, RESULT_MEDIA_TYPES, type QueryForm, type ResultFormat } from '../../store/sparql-query.js';
import type { ActionRequests } from '../requests/action-requests.js';
import type { EventIndex } from '../events/event-index.js';
import type { LogisticsObjectEntry, RevisionIndex } from '../objects/revision-index.js';
import { QueryQueue } from './query-queue.js';

export interface AnalyticsQuery {
  query: ParsedQuery;
  view: View;
  format: ResultFormat;
  /** The protocol's default-graph-uri and named-graph-uri; when given they replace the query's FROM and FROM NAMED. */
  defaultGraphs: string[];
  namedGraphs: string[];
}

export interface AnalyticsOptions {
  /** Whether callers other than internal actors may query (over what they may read). */
  openToPartners: boolean;
  /** Queries that may wait for their turn, all callers together, and one caller (query-queue.ts). */
  maxWaiting: number;
  maxWaitingPerCaller: number;
}

/** How a query run ended: a full answer, an answer cut at the row cap, or the error kinds an operator tells apart. */
export type QueryOutcome = 'answered' | 'truncated' | 'timed_out' | 'unavailable' | 'failed';

/** One query run, as an observer (the metrics) sees it: from handing it to the replica until its answer or error. */
export interface FinishedQuery {
  view: View;
  outcome: QueryOutcome;
  seconds: number;
}

const OUTCOME_OF_ERROR: Readonly<Record<string, QueryOutcome>> = {
  sparql_timeout: 'timed_out',
  sparql_unavailable: 'unavailable',
  sparql_caller_busy: 'unavailable',
};

/**
 * SPARQL analytics: who may query, and which graphs a query may see. Internal actors see each
 * view whole; other callers (only when the operator opens the endpoint to them) see the graphs
 * of what the Authorizer lets them read, so a query never returns a triple that GET would refuse.
 * Queries wait for the query service in turns, caller by caller (QueryQueue).
 */
export class Analytics {
  private readonly queue: QueryQueue;
  private readonly openToPartners: boolean;

  constructor(
    private readonly queries: QueryService,
    private readonly access: Authorizer,
    private readonly objects: RevisionIndex,
    private readonly events: EventIndex,
    private readonly requests: ActionRequests,
    options: AnalyticsOptions,
    private readonly observeQuery?: (finished: FinishedQuery) => void,
  ) {
    this.openToPartners = options.openToPartners;
    this.queue = new QueryQueue({
      parallel: queries.parallel,
      maxWaiting: options.maxWaiting,
      maxWaitingPerCaller: options.maxWaitingPerCaller,
    });
  }

  get maxRows(): number {
    return this.queries.maxRows;
  }

  /** Checks that `caller` may query `view` and that `text` is a read-only query (400 otherwise). */
  prepare(caller: Caller, text: string, view: View): ParsedQuery {
    if (!caller.internal && (!this.openToPartners || view === 'revisions')) {
      this.access.check(caller, {
        kind: 'operate',
        what: view === 'revisions' && this.openToPartners ? 'querying all revisions' : 'the SPARQL endpoint',
      });
    }
    return this.queries.parse(text);
  }

  async run(caller: Caller, request: AnalyticsQuery): Promise<QueryResult> {
    const started = performance.now();
    const finished = (outcome: QueryOutcome) =>
      this.observeQuery?.({ view: request.view, outcome, seconds: (performance.now() - started) / 1000 });
    try {
      const visible = caller.internal ? undefined : await this.visibleGraphs(caller, request.view);
      const dataset = datasetFor(request, visible);
      const result = await this.queue.run(caller.agent, () =>
        this.queries.run({ query: request.query, view: request.view, format: request.format, dataset }),
      );
      finished(result.truncated ? 'truncated' : 'answered');
      return result;
    } catch (error) {
      finished(
        ((error instanceof HttpError || error instanceof QueryError) && OUTCOME_OF_ERROR[error.code]) || 'failed',
      );
      throw error;
    }
  }

  /**
   * The graphs of `view` that `caller` may read: latest graphs of readable objects (and their readable events), own
   * action requests.
   */
  private async visibleGraphs(caller: Caller, view: View): Promise<Set<string>> {
    const graphs = new Set<string>();
    if (view === 'latest' || view === 'events') {
      // The replica names an object's latest graph after the object, as the hot store does.
      for (const object of await this.candidates(caller))
        if (this.access.allows(caller, { kind: 'read-object', object })) graphs.add(object.iri);
    }
    if (view === 'events') for (const event of await this.visibleEvents(caller)) graphs.add(event);
    if (view === 'audit') {
      for (const request of await this.requests.readableBy(caller)) graphs.add(request.iri);
    }
    // 'revisions' never gets here: prepare refuses it to callers who are not internal actors.
    return graphs;
  }

  /**
   * The objects `caller` may hold a permission on: every object when the index holds them all, else those it created
   * and those its grants (and public ones) name, which the Authorizer then decides on.
   */
  private async candidates(caller: Caller): Promise<Iterable<LogisticsObjectEntry>> {
    const all = this.objects.all();
    if (all) return all;
    const granted = await this.objects.findAll(this.access.grants.objectsGrantedTo(caller.agent));
    for (const own of await this.objects.createdBy(caller.agent)) granted.set(own.iri, own);
    return granted.values();
  }

  /** The events `caller` may read: those of objects it may read events of, and those it posted. */
  private async visibleEvents(caller: Caller): Promise<string[]> {
    const events: string[] = [];
    for (const object of await this.candidates(caller)) {
      if (!this.access.allows(caller, { kind: 'read-events', object })) continue;
      for (const event of await this.events.ofObject(object.iri)) events.push(event.iri);
    }
    for (const event of await this.events.postedBy(caller.agent)) {
      const object = await this.objects.find(event.object);
      if (object && this.access.allows(caller, { kind: 'read-event', object, iri: event.iri, event }))
        events.push(event.iri);
    }
    return events;
  }
}

/**
 * The dataset of a query: the protocol's graphs, else the query's FROM / FROM NAMED, else (none)
 * the whole view; limited to a partner's `visible` graphs: a graph outside them is an empty graph,
 * whether it exists or not.
 */
function datasetFor(request: AnalyticsQuery, visible: ReadonlySet<string> | undefined): Dataset | undefined {
  const fromProtocol = request.defaultGraphs.length > 0 || request.namedGraphs.length > 0;
  const fromQuery = request.query.from.default.length > 0 || request.query.from.named.length > 0;
  const explicit = fromProtocol
    ? { default: request.defaultGraphs, named: request.namedGraphs }
    : fromQuery
      ? request.query.from
      : undefined;
  if (!visible) return explicit;
  if (!explicit) return { default: [...visible], named: [...visible] };
  const isVisible = (g: string) => visible.has(g);
  return { default: explicit.default.filter(isVisible), named: explicit.named.filter(isVisible) };
}
