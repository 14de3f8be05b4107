import { dateTimeLiteral, iriToNt, literal, termToNt, tripleToNt } from '../../rdf/terms.js';
import { readStoreNTriples } from '../../rdf/ntriples.js';
import { STORE } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';
import { outboxEntryGraph, readOutboxPositions } from '../schema/outbox.js';
import { ownerGate } from './commit-intents.js';
import type { DomainEvent } from '../transaction.js';

/*
 * The commit feed: how every server process on one engine learns of the commits of the others, in
 * one order. With `store.sparql.sharedWriters`, the operation that applies a commit also writes, in
 * the same transaction, an entry: the commit's domain events (JSON) and a position from an engine
 * sequence (Virtuoso's `sequence_next`, which every SPARQL 1.1 engine lacks: several processes need
 * Virtuoso). An entry is visible exactly when its commit is. Each process follows the feed and
 * publishes the others' events on its own after-commit stream, in position order.
 *
 * A position is taken when the operation runs, not when it commits: a later position may become
 * visible first (the follower waits for the missing one), and the position of an operation the
 * engine rolled back (a deadlock, then sent again) is never filled (the follower skips it after
 * `gapWaitMs`, and still publishes it should it show up later). An operation sent again after a
 * lost answer writes a second entry for the same commit: entries are told apart by their commit's
 * intent, and one seen before is not published again.
 */

const FEED_GRAPH = `${STORE}commit-feed`;
const FEED_POSITION = `${STORE}feedPosition`;
const FEED_EVENTS = `${STORE}feedEvents`;
const FEED_TIME = `${STORE}feedTime`;
/** Virtuoso's sequence of feed positions. */
export const FEED_SEQUENCE = 'onerecord_commit_feed';

/**
 * The parts of a commit's apply operation that write its feed entry: template triples and the WHERE
 * branch binding them; and the pattern the whole operation needs to match: its intent is stored
 * and its own process may send it (`ownerGate`: a process that completes the intent of one taken for dead takes
 * it over first; sent late by its process, it then changes nothing).
 */
export interface FeedEntryParts {
  template: string;
  branch: string;
  gate: string;
}

/** The pattern that matches once the commit of `intent` wrote its feed entry (it may be cut off: `appliedIntents`). */
export const feedEntryPattern = (intent: string) =>
  `GRAPH ${iriToNt(FEED_GRAPH)} { ${iriToNt(intent)} ${iriToNt(FEED_POSITION)} ?writtenAt }`;

/**
 * `at`: when the commit was made, by this process's clock (Virtuoso's NOW() has no time zone, and
 * it compares such a value with one in UTC as if hours apart).
 */
export function feedEntryParts(intent: string, events: readonly DomainEvent[], at = new Date()): FeedEntryParts {
  const subject = iriToNt(intent);
  return {
    template:
      `GRAPH ${iriToNt(FEED_GRAPH)} { ${subject} ${iriToNt(FEED_POSITION)} ?feedPosition ; ` +
      `${iriToNt(FEED_TIME)} ${termToNt(dateTimeLiteral(at))} ; ${iriToNt(FEED_EVENTS)} ` +
      `${termToNt(literal(serialiseEvents(events)))} }`,
    branch: `{ BIND (bif:sequence_next ("${FEED_SEQUENCE}") AS ?feedPosition) }`,
    // A join, not FILTER EXISTS: Virtuoso 7.2 ignored that filter beside the BIND of the position (measured).
    gate: ownerGate(intent),
  };
}

/**
 * Dates as `{ "$date": ms }`, an action request's body as N-Triples; a new object's or revision's parsed triples
 * are left out (readers read the revision: quads do not survive JSON).
 */
export function serialiseEvents(events: readonly DomainEvent[]): string {
  const sent = events.map((e) => {
    if ((e.kind === 'revision-written' || e.kind === 'object-created') && e.triples)
      return { ...e, triples: undefined };
    if (e.kind === 'action-request-created' && e.body) return { ...e, body: e.body.map(tripleToNt).join('\n') };
    return e;
  });
  return JSON.stringify(sent, function (this: Record<string, unknown>, key, value: unknown) {
    const original = this[key];
    return original instanceof Date ? { $date: original.getTime() } : value;
  });
}

export function parseEvents(text: string): DomainEvent[] {
  const events = JSON.parse(text, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && '$date' in value && typeof value.$date === 'number'
      ? new Date(value.$date)
      : value,
  ) as (DomainEvent | (Omit<Extract<DomainEvent, { kind: 'action-request-created' }>, 'body'> & { body?: string }))[];
  return events.map((e) =>
    e.kind === 'action-request-created' && typeof e.body === 'string'
      ? { ...e, body: readStoreNTriples(e.body) }
      : (e as DomainEvent),
  );
}

/** The position the next commit of any process will take: every commit acknowledged so far has one below it. */
async function nextFeedPosition(reader: SparqlReader): Promise<number> {
  const rows = await reader.select(`SELECT (bif:sequence_set ("${FEED_SEQUENCE}", 0, 2) AS ?next) WHERE {}`);
  return Number(rows.results.bindings[0]?.next?.value ?? 0);
}

/**
 * The position the next commit will take, once the sequence is past every position the feed holds
 * (after an engine crash a sequence may go back; Virtuoso's `sequence_set` mode 1 only raises it).
 */
export async function feedStartPosition(reader: SparqlReader): Promise<number> {
  const rows = await reader.select(
    `SELECT (MAX(?position) AS ?last) WHERE { GRAPH ${iriToNt(FEED_GRAPH)} { ?entry ${iriToNt(FEED_POSITION)} ` +
      `?position } }`,
  );
  const last = rows.results.bindings[0]?.last?.value;
  if (last !== undefined)
    await reader.select(`SELECT (bif:sequence_set ("${FEED_SEQUENCE}", ${Number(last) + 1}, 1) AS ?next) WHERE {}`);
  return nextFeedPosition(reader);
}

/**
 * Removes the entries written before `cutoff`: a process that starts reads the engine itself, then the feed from then
 * on.
 */
export function feedTrim(cutoff: Date): string {
  const g = iriToNt(FEED_GRAPH);
  return (
    `DELETE { GRAPH ${g} { ?entry ?p ?o } } WHERE { GRAPH ${g} { ?entry ${iriToNt(FEED_TIME)} ?t ; ?p ?o } ` +
    `FILTER (?t < ${termToNt(dateTimeLiteral(cutoff))}) }`
  );
}

/**
 * Of `intents`, those applied: their feed entry is written and what they create is there. A start
 * sends only the others again, since an applied one sent again could undo a later write of another
 * process; what they create is checked too because Virtuoso may keep a feed entry without some graph
 * blocks when a connection drops (docs/sparql-engine.md), and completing such a write is safe.
 */
export async function appliedIntents(reader: SparqlReader, intents: readonly string[]): Promise<Set<string>> {
  const created = new Map<string, CreatedParts>();
  for (let from = 0; from < intents.length; from += APPLIED_ASKED_TOGETHER) {
    const values = intents
      .slice(from, from + APPLIED_ASKED_TOGETHER)
      .map(iriToNt)
      .join(' ');
    const rows = await reader.select(
      `SELECT ?intent ?events WHERE { VALUES ?intent { ${values} } GRAPH ${iriToNt(FEED_GRAPH)} { ?intent ` +
        `${iriToNt(FEED_POSITION)} ?position OPTIONAL { ?intent ${iriToNt(FEED_EVENTS)} ?events } } }`,
    );
    for (const b of rows.results.bindings) {
      if (!b.intent) continue;
      const parts = created.get(b.intent.value) ?? { graphs: [], outboxEntries: [] };
      // Virtuoso may answer without a long literal (a row being written): what it creates is then not asked for.
      if (b.events) addCreatedParts(parts, parseEvents(b.events.value));
      created.set(b.intent.value, parts);
    }
  }
  const entries = [...created.values()].flatMap((parts) => parts.outboxEntries);
  // Entries up to it are removed once delivered: gone, not lost.
  const removedThrough = entries.length > 0 ? (await readOutboxPositions(reader)).compactedThrough : 0;
  const needed = (parts: CreatedParts) => [
    ...parts.graphs,
    ...parts.outboxEntries.filter((n) => n > removedThrough).map(outboxEntryGraph),
  ];
  const empty = await emptyGraphs(reader, [...new Set([...created.values()].flatMap(needed))]);
  return new Set(
    [...created].filter(([, parts]) => !needed(parts).some((g) => empty.has(g))).map(([intent]) => intent),
  );
}

const APPLIED_ASKED_TOGETHER = 200;

/** What a commit creates that stays (or, for outbox entries, stays until delivered). */
interface CreatedParts {
  graphs: string[];
  outboxEntries: number[];
}

function addCreatedParts(parts: CreatedParts, events: readonly DomainEvent[]): void {
  for (const e of events) {
    if (e.kind === 'object-created' || e.kind === 'revision-written') parts.graphs.push(e.revision.graph);
    else if (e.kind === 'event-appended') parts.graphs.push(e.event.iri);
    else if (e.kind === 'action-request-created') parts.graphs.push(e.request.iri);
    else if (e.kind === 'notification-queued') parts.outboxEntries.push(e.entry.sequence);
  }
}

/** Of `graphs`, those without a triple. */
async function emptyGraphs(reader: SparqlReader, graphs: readonly string[]): Promise<Set<string>> {
  const empty = new Set(graphs);
  for (let from = 0; from < graphs.length; from += APPLIED_ASKED_TOGETHER) {
    const values = graphs
      .slice(from, from + APPLIED_ASKED_TOGETHER)
      .map(iriToNt)
      .join(' ');
    const rows = await reader.select(`SELECT DISTINCT ?g WHERE { VALUES ?g { ${values} } GRAPH ?g { ?s ?p ?o } }`);
    for (const b of rows.results.bindings) if (b.g) empty.delete(b.g.value);
  }
  return empty;
}

export interface FeedEntry {
  position: number;
  intent: string;
  events: string;
  /** When its commit was made, by the clock of the process that made it. */
  committedAt: Date;
}

/** Entries from `after` on (and at the `missing` positions), in position order, `limit` at most. */
export async function readFeed(
  reader: SparqlReader,
  after: number,
  missing: readonly number[],
  limit: number,
): Promise<FeedEntry[]> {
  const late = missing.length > 0 ? ` || ?position IN (${missing.join(', ')})` : '';
  const rows = await reader.select(
    `SELECT ?intent ?position ?events ?time WHERE { GRAPH ${iriToNt(FEED_GRAPH)} { ?intent ${iriToNt(FEED_POSITION)} ` +
      `?position ; ${iriToNt(FEED_EVENTS)} ?events ; ${iriToNt(FEED_TIME)} ?time } FILTER (?position > ` +
      `${after}${late}) } ORDER BY ?position LIMIT ${limit}`,
  );
  // Virtuoso may answer a row of a commit being written without its long literal: not there yet.
  return rows.results.bindings
    .filter((b) => b.intent && b.position && b.events && b.time)
    .map((b) => ({
      position: Number(b.position.value),
      intent: b.intent.value,
      events: b.events.value,
      committedAt: new Date(b.time.value),
    }));
}
