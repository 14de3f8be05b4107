import { api, requestStatus } from '../../rdf/vocab.js';
import type { GraphReader, SparqlReader } from '../readers.js';
import type { DomainEvent } from '../transaction.js';
import { readActionRequests } from './action-requests.js';
import { readMoves } from './moved-objects.js';
import { readGrants } from './grants.js';
import { readOutboxEntries, readOutboxPositions, readParkedNotifications } from './outbox.js';
import { readRemoteSubscriptions } from './remote-subscriptions.js';
import type { RevisionRecord } from './revisions.js';

/**
 * The domain events that led to what the bookkeeping graphs hold, as commits published them:
 * per kind in commit order (revisions by number, each request's statuses in order; moves as they stand).
 * Consumers fed these at start end in the state the live stream kept them in. Events are not among them: the
 * domain reads them from the store as it needs them (StoredEvents).
 */
/** The outbox's part: where each queue and subscription stands first, then the entries and parked notifications. */
export async function storedOutboxEvents(reader: SparqlReader): Promise<DomainEvent[]> {
  const events: DomainEvent[] = [];
  const [positions, entries, parked] = await Promise.all([
    readOutboxPositions(reader),
    readOutboxEntries(reader),
    readParkedNotifications(reader),
  ]);
  if (positions.compactedThrough > 0) events.push({ kind: 'outbox-compacted', through: positions.compactedThrough });
  for (const { subscription, after } of positions.subscriptions)
    events.push({ kind: 'subscription-started', subscription, after });
  for (const { queue, through } of positions.queues) events.push({ kind: 'outbox-advanced', queue, through });
  for (const { group, through } of positions.groups) events.push({ kind: 'outbox-group-advanced', group, through });
  for (const entry of entries) events.push({ kind: 'notification-queued', entry });
  for (const { notification, dead } of parked) {
    events.push(
      dead
        ? { kind: 'notification-dead-lettered', notification, dead }
        : { kind: 'notification-replayed', notification },
    );
  }
  return events;
}

export async function storedDomainEvents(
  reader: SparqlReader & GraphReader,
  revisions: readonly RevisionRecord[],
): Promise<DomainEvent[]> {
  const events: DomainEvent[] = [];
  for (const revision of revisions)
    events.push(revision.number === 1 ? { kind: 'object-created', revision } : { kind: 'revision-written', revision });
  // Independent reads, sent together: on an engine each is a round trip, and a start waits for all of them.
  const [requests, moves, grants, outbox, remoteSubscriptions] = await Promise.all([
    readActionRequests(reader),
    readMoves(reader),
    readGrants(reader),
    storedOutboxEvents(reader),
    readRemoteSubscriptions(reader),
  ]);
  const bodies = await Promise.all(
    requests.map((r) => (r.type === api.SubscriptionRequest ? reader.graphTriples(r.iri) : undefined)),
  );
  requests.forEach((stored, i) => {
    const request = { ...stored, statuses: [] };
    const body = bodies[i];
    stored.statuses.forEach((status, j) => {
      if (j === 0) events.push({ kind: 'action-request-created', request, status, ...(body && { body }) });
      else
        events.push({
          kind: status.status === requestStatus.REVOKED ? 'action-request-revoked' : 'action-request-decided',
          request,
          status,
        });
    });
  });
  for (const move of moves) events.push({ kind: 'object-moved', move });
  for (const grant of grants) events.push({ kind: 'grant-added', grant });
  events.push(...outbox);
  for (const subscription of remoteSubscriptions) events.push({ kind: 'remote-subscription-recorded', subscription });
  return events;
}
