import type { Quad } from '../rdf/terms.js';
import type { Claims } from './claims.js';
import type { ActionRequestRecord, StatusEntry } from './schema/action-requests.js';
import type { EventRecord } from './schema/events.js';
import type { MoveRecord } from './schema/moved-objects.js';
import type { GrantRecord } from './schema/grants.js';
import type { ReceivedNotificationRecord } from './schema/received-notifications.js';
import type { DeadLetter, OutboxEntry, ParkedNotification, Recipient } from './schema/outbox.js';
import type { RemoteSubscriptionRecord } from './schema/remote-subscriptions.js';
import type { RevisionRecord } from './schema/revisions.js';

/**
 * What a committed write did, in terms of the domain. Published on the after-commit stream in
 * commit order, once the write is durable and applied; replay at start publishes the same
 * events for what the store holds, so consumers rebuild their state with the code that keeps it.
 */
export type DomainEvent =
  /**
   * `triples` (both kinds): the new revision as the store keeps it, when the writer has it parsed so (not on replay).
   */
  | { kind: 'object-created'; revision: RevisionRecord; triples?: readonly Quad[] }
  | { kind: 'revision-written'; revision: RevisionRecord; triples?: readonly Quad[] }
  | { kind: 'event-appended'; event: EventRecord }
  /**
   * `status`: the first entry (REQUEST_PENDING). `body`: the request's own content, as created
   * (at start: for SubscriptionRequests only, whose index holds their terms).
   */
  | { kind: 'action-request-created'; request: ActionRequestRecord; status: StatusEntry; body?: readonly Quad[] }
  /**
   * `finished`: the request's graph is complete (WriteTransaction.finished): it is read from the store from now on, not
   * kept in memory.
   */
  | { kind: 'action-request-decided'; request: ActionRequestRecord; status: StatusEntry; finished?: boolean }
  | { kind: 'action-request-revoked'; request: ActionRequestRecord; status: StatusEntry; finished?: boolean }
  /** A request whose final status an earlier commit wrote is finished now (its creation was in flight then). */
  | { kind: 'action-request-finished'; request: ActionRequestRecord }
  /** An operator marked an object as moved (replacing an earlier move of it). */
  | { kind: 'object-moved'; move: MoveRecord }
  | { kind: 'object-move-undone'; object: string }
  | { kind: 'grant-added'; grant: GrantRecord }
  /** `objects`: those the grant no longer covers; all of its objects when the grant is gone. */
  | { kind: 'grant-withdrawn'; grant: GrantRecord; objects: readonly string[] }
  | { kind: 'notification-received'; notification: ReceivedNotificationRecord }
  /** A write's notification put in the outbox (one entry, whatever its recipients), in the commit of what caused it. */
  /** `recipients`: as found when it was written (not from the store: found again then). */
  | { kind: 'notification-queued'; entry: OutboxEntry; recipients?: readonly Recipient[] }
  /**
   * Outbox entry numbers a commit took and will not write (it failed, or numbered its notifications
   * anew): announced to the other processes on the same engine, which need not wait for them.
   */
  | { kind: 'outbox-numbers-released'; numbers: readonly number[] }
  /** A delivery queue settled every notification of the entries up to `through`. */
  | { kind: 'outbox-advanced'; queue: string; through: number }
  /**
   * A group of queues (several processes delivering) settled the entries up to `through`: its queues without a
   * position of their own stand there.
   */
  | { kind: 'outbox-group-advanced'; group: string; through: number }
  /** The outbox entries up to `through` are gone: every queue was past them. */
  | { kind: 'outbox-compacted'; through: number }
  /** A subscription started: it receives the outbox entries numbered after `after`. */
  | { kind: 'subscription-started'; subscription: string; after: number }
  | { kind: 'notification-dead-lettered'; notification: ParkedNotification; dead: DeadLetter }
  /** A dead letter back in its queue. */
  | { kind: 'notification-replayed'; notification: ParkedNotification }
  /** A replayed dead letter delivered (or dropped); its graph is gone. */
  | { kind: 'notification-settled'; notification: ParkedNotification }
  /** A publisher accepted this server's Subscription. */
  | { kind: 'remote-subscription-recorded'; subscription: RemoteSubscriptionRecord };

export type DomainEventKind = DomainEvent['kind'];

/** A named graph written whole, with its triples (default graph): how the SPARQL replica gets each new revision. */
export interface GraphInsert {
  graph: string;
  triples: readonly Quad[];
}

/**
 * A new revision of a Logistics Object: its metadata and its triples (default graph). Where
 * revisions are kept is the store's business: it writes only what changed since `replaces`.
 */
export interface RevisionWrite {
  revision: RevisionRecord;
  /** In the store's canonical form (read from it, or canonicalised) unless this is revision 1. */
  triples: readonly Quad[];
  /**
   * The revision this one follows (the latest until the commit) with its triples; absent for
   * revision 1. `added` and `removed`, when the writer knows them (a Change), are how `triples`
   * differ from them: the store then writes them without comparing the two revisions.
   */
  replaces?: { revision: RevisionRecord; triples: readonly Quad[]; added?: readonly Quad[]; removed?: readonly Quad[] };
}

/**
 * One write, built by the domain for one request and committed once with `StoreWriter.commit`:
 * the quads to delete and insert (applied as one atomic step), the claims it holds (see
 * Claims) and the domain events it causes. Nothing in it runs code: the store commits the data,
 * releases the claims and publishes the events.
 */
export class WriteTransaction {
  readonly insert: Quad[] = [];
  /** New revisions of Logistics Objects. */
  readonly revisions: RevisionWrite[] = [];
  /**
   * Named graphs this commit completes: nothing writes to them again (a decided ChangeRequest), so the store may keep
   * them out of its hot part.
   */
  readonly finished: string[] = [];
  /** Named graphs this commit creates (a new action request): the store holds nothing of them before it. */
  readonly created = new Set<string>();
  /**
   * Named graphs this commit removes whole, whatever they hold (a settled outbox entry or parked notification): nothing
   * is read to write it.
   */
  readonly removedGraphs: string[] = [];
  /**
   * Named graphs whose every quad this commit deletes through `delete` (an outbox entry the writer has read): like
   * `removedGraphs`, nothing of them stays, their names included.
   */
  readonly emptiedGraphs: string[] = [];
  readonly delete: Quad[] = [];
  readonly events: DomainEvent[] = [];
  /**
   * Numbers this write's outbox entries again, after `taken` and every number planned so far: called
   * by a store that finds one of them taken by another server process, before it tries again.
   */
  renumberOutbox?: (taken: number) => void;
  private readonly held: { key: string; holder: unknown }[] = [];

  constructor(
    private readonly claims: Claims,
    quads: { insert?: readonly Quad[]; delete?: readonly Quad[] } = {},
  ) {
    for (const q of quads.insert ?? []) this.insert.push(q);
    for (const q of quads.delete ?? []) this.delete.push(q);
  }

  /** Claims `key` for this write alone (see Claims.take); false if another write holds it. */
  claim(key: string): boolean {
    if (!this.claims.take(key, this)) return false;
    this.held.push({ key, holder: this });
    return true;
  }

  /** Claims `key` alongside other writes; `holder` is what they see in `Claims.holders`. */
  share(key: string, holder: unknown = this): void {
    this.claims.share(key, holder);
    this.held.push({ key, holder });
  }

  /**
   * Releases every claim: done by the store when the commit settles, or by a writer that gives up before committing.
   */
  release(): void {
    for (const { key, holder } of this.held.splice(0)) this.claims.release(key, holder);
  }
}
