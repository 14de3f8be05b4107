import { iriToNt } from '../../rdf/terms.js';
import { store as meta } from '../../rdf/vocab.js';
import type { WriteSlot } from '../errors.js';
import { outboxEntryGraph } from '../schema/outbox.js';
import type { DomainEvent } from '../transaction.js';

/**
 * A slot a commit fills that another writer on the same engine may fill first (another server
 * process): the commit is applied only if the slot is still empty and no commit in flight claims
 * it (commit-intents.ts). In-process claims (src/store/claims.ts) decide between the writes of one
 * process; these decide between processes, whose in-memory indexes may be behind the engine.
 */
export interface CommitCondition {
  /** The slot's name among the claims of commits in flight. */
  key: string;
  /** A group graph pattern that matches once the slot is filled. */
  filled: string;
  slot: WriteSlot;
  /** The object or action request the slot belongs to. */
  resource: string;
}

const p = iriToNt;

function revisionSlot(graph: string, object: string, slot: WriteSlot = 'revision'): CommitCondition {
  return {
    key: `revision ${graph}`,
    filled: `GRAPH ${p(meta.metaGraph)} { ${p(graph)} ${p(meta.revisionOf)} ?object }`,
    slot,
    resource: object,
  };
}

/**
 * New objects of one commit conditioned at most: a POST creates one object and those it embeds. The
 * objects of a larger commit are not conditioned (docs/sparql-engine.md).
 */
export const CONDITIONED_CREATIONS = 50;

/** What the name of every outbox entry's slot starts with (its number follows). */
export const OUTBOX_KEY_PREFIX = `outbox ${outboxEntryGraph(0).slice(0, -1)}`;

/**
 * An outbox entry's number: each process numbers the notifications it queues from what it has seen.
 * Filled while its entry is stored, and for good once the entries up to it are removed (delivered
 * and compacted): a write numbered before then and sent after (a slow one) must not take it again.
 */
function outboxSlot(sequence: number): CommitCondition {
  const graph = outboxEntryGraph(sequence);
  const positions = p(meta.outboxPositionsGraph);
  const removed =
    `GRAPH ${positions} { ${positions} ${p(meta.compactedThrough)} ?removedThrough FILTER ` +
    `(?removedThrough >= ${sequence}) }`;
  return {
    key: `outbox ${graph}`,
    filled: `{ GRAPH ${p(graph)} { ?entry ?p ?o } } UNION { ${removed} }`,
    slot: 'outbox',
    resource: graph,
  };
}

function statusSlot(request: string, number: number): CommitCondition {
  return {
    key: `status ${number} ${request}`,
    filled:
      `GRAPH ${p(request)} { ${p(request)} ${p(meta.statusEntry)} ?entry . ?entry ${p(meta.statusNumber)} ` +
      `${number} }`,
    slot: 'request',
    resource: request,
  };
}

/**
 * The slots the commit causing `events` fills that another process may fill first: each revision and
 * status entry after the first, the first revision of up to CONDITIONED_CREATIONS new objects (an @id a
 * client chose), and each outbox entry's number. New events and requests are not conditioned: their ids
 * are the server's UUIDs, and so many slots would pass what one guarded operation may hold.
 */
export function commitConditions(events: readonly DomainEvent[]): CommitCondition[] {
  const conditions = [
    ...fewOf(events, 'object-created').map((e) => revisionSlot(e.revision.graph, e.revision.object, 'object')),
    ...fewOf(events, 'notification-queued').map((e) => outboxSlot(e.entry.sequence)),
  ];
  for (const e of events) {
    if (e.kind === 'revision-written') conditions.push(revisionSlot(e.revision.graph, e.revision.object));
    else if ((e.kind === 'action-request-decided' || e.kind === 'action-request-revoked') && e.status.number > 1)
      conditions.push(statusSlot(e.request.iri, e.status.number));
  }
  return conditions;
}

/** The events of `kind`, if there are CONDITIONED_CREATIONS at most; else none (a bulk is not conditioned). */
function fewOf<K extends DomainEvent['kind']>(
  events: readonly DomainEvent[],
  kind: K,
): Extract<DomainEvent, { kind: K }>[] {
  const found = events.filter((e): e is Extract<DomainEvent, { kind: K }> => e.kind === kind);
  return found.length <= CONDITIONED_CREATIONS ? found : [];
}
