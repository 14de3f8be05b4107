import { expect } from 'chai';
import { Parser } from 'n3';
import { literal, namedNode, quad, quadToNq, type Quad } from '../src/rdf/terms.js';
import { API, CARGO, api, requestStatus, store as meta } from '../src/rdf/vocab.js';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import type { GraphReader, SparqlReader } from '../src/store/readers.js';
import {
  readActionRequests,
  requestQuads,
  statusEntryQuads,
  type ActionRequestRecord,
} from '../src/store/schema/action-requests.js';
import { eventQuads, SparqlStoredEvents, eventRecordsFromQuads, type EventRecord } from '../src/store/schema/events.js';
import {
  readRevisions,
  RevisionMetadata,
  revisionGraph,
  revisionOfGraph,
  revisionQuads,
  type RevisionRecord,
} from '../src/store/schema/revisions.js';
import { storedDomainEvents } from '../src/store/schema/stored-events.js';
import { EngineNotifications } from '../src/store/sparql-engine/engine-notifications.js';
import {
  compactedThroughQuad,
  deadLetterQuads,
  movedQueuePosition,
  notifiedAfterQuad,
  outboxEntryGraph,
  outboxEntryQuads,
  parkedGraph,
  parkedNotificationQuads,
  queuePositionQuads,
  readOutboxEntries,
  readOutboxEntry,
  readOutboxPositions,
  readParkedNotifications,
  type OutboxEntry,
  type ParkedNotification,
} from '../src/store/schema/outbox.js';
import { payloadTriples } from '../src/store/schema/annotated-graph.js';
import {
  receivedNotificationFromNTriples,
  receivedNotificationGraph,
  receivedNotificationQuads,
  type ReceivedNotificationRecord,
} from '../src/store/schema/received-notifications.js';

const BASE = 'http://localhost:8080';
const object = (n: number) => `${BASE}/logistics-objects/o${n}`;
const AGENT = `${BASE}/logistics-objects/holder`;

function storeWith(quads: Quad[]): OxigraphIndex {
  const index = new OxigraphIndex();
  index.loadTrusted(quads.map(quadToNq).join(''));
  return index;
}

/** The index as the schema readers read a store: asynchronously. */
function readerOf(index: OxigraphIndex): SparqlReader & GraphReader {
  return {
    select: async (sparql) => index.select(sparql),
    graphTriples: async (graph) => new Parser({ format: 'application/n-triples' }).parse(index.graphNTriples(graph)),
  };
}

const revision = (n: number, number: number, ms: number): RevisionRecord => ({
  object: object(n),
  number,
  graph: revisionGraph(object(n), number),
  createdAt: new Date(ms),
  createdBy: AGENT,
  mostSpecificType: `${CARGO}Shipment`,
});

describe('store schema: each bookkeeping graph reads back what was written', () => {
  it('revision metadata: every field, revisions in number order, millisecond times', () => {
    const written = [
      revision(2, 2, 1_700_000_000_123),
      revision(1, 1, 1_700_000_000_000),
      revision(2, 1, 1_700_000_000_100),
      revision(1, 2, 1_700_000_000_900),
    ];
    const read = readRevisions(storeWith(written.flatMap(revisionQuads)));
    expect(read.map((r) => r.number)).to.deep.equal([1, 1, 2, 2]);
    expect([...read].sort((a, b) => a.graph.localeCompare(b.graph))).to.deep.equal(
      [...written].sort((a, b) => a.graph.localeCompare(b.graph)),
    );
  });

  it('revision metadata brought up to date with journal records, or taken from N-Quads lines, reads as the store that holds them does', () => {
    const nq = (revisions: RevisionRecord[]) => revisions.flatMap(revisionQuads).map(quadToNq).join('');
    // In number order; among equal numbers the order is the reader's.
    const read = (revisions: RevisionRecord[]) =>
      [...revisions].sort((a, b) => a.number - b.number || a.graph.localeCompare(b.graph));
    const before = [
      revision(1, 1, 1_700_000_000_000),
      revision(1, 2, 1_700_000_000_100),
      revision(2, 1, 1_700_000_000_200),
    ];
    const store = storeWith(before.flatMap(revisionQuads));
    const metadata = new RevisionMetadata(readRevisions(store));
    // Revision 3 replaces 2 (whose metadata goes), object 3 is created; other graphs' lines are passed over.
    const records = [
      {
        insert:
          nq([revision(1, 3, 1_700_000_000_300)]) +
          quadToNq(quad(namedNode(object(1)), namedNode(`${CARGO}name`), literal('x'), namedNode(object(1)))),
        delete: nq([revision(1, 2, 1_700_000_000_100)]),
      },
      { insert: nq([revision(3, 1, 1_700_000_000_400)]), delete: '' },
    ];
    for (const record of records) {
      store.apply(record);
      metadata.apply(record);
    }
    expect(read(metadata.records())).to.deep.equal(read(readRevisions(store)));
    expect(metadata.records().map((r) => r.graph)).to.have.members([
      revisionGraph(object(1), 1),
      revisionGraph(object(1), 3),
      revisionGraph(object(2), 1),
      revisionGraph(object(3), 1),
    ]);
    const lines = new RevisionMetadata();
    lines.addNQuads(Buffer.from(store.nQuads()));
    expect(read(lines.records())).to.deep.equal(read(readRevisions(store)));
  });

  it('revision graph names read back as their object and number; other graphs are not revisions', () => {
    expect(revisionOfGraph(revisionGraph(object(1), 12))).to.deep.equal({ object: object(1), number: 12 });
    for (const other of [
      object(1),
      `${object(1)}/logistics-events/e`,
      `${object(1)}?revision=0`,
      `${object(1)}?revision=`,
      meta.metaGraph,
    ])
      expect(revisionOfGraph(other), other).to.equal(undefined);
  });

  it('revision metadata written before the type predicate was renamed still reads', () => {
    const old = revision(1, 1, 1_700_000_000_000);
    const quads = revisionQuads(old).map((q) =>
      q.predicate.value === meta.revisionType
        ? quad(q.subject, namedNode(meta.revisionTypeBefore), q.object, q.graph)
        : q,
    );
    expect(readRevisions(storeWith(quads))).to.deep.equal([old]);
  });

  it('event metadata: every field, several codes or none, in arrival order', async () => {
    const written: EventRecord[] = [
      {
        iri: `${object(1)}/logistics-events/b`,
        object: object(1),
        sequence: 7,
        recordedAt: new Date(1_700_000_000_001),
        creationDate: Date.UTC(2024, 0, 1),
        eventDate: Date.UTC(2024, 0, 2, 10, 0, 0, 500),
        createdBy: AGENT,
        codes: ['DEP', 'https://onerecord.iata.org/ns/code-lists/StatusCode#DEP'],
      },
      {
        iri: `${object(2)}/logistics-events/a`,
        object: object(2),
        sequence: 3,
        recordedAt: new Date(1_700_000_000_000),
        creationDate: Date.UTC(2023, 5, 1),
        eventDate: Date.UTC(2023, 5, 1),
        createdBy: AGENT,
        codes: [],
      },
    ];
    const stored = new SparqlStoredEvents(readerOf(storeWith(written.flatMap(eventQuads))));
    // As the engine reads them (SPARQL) and as the embedded archive does (the quads as written).
    for (const read of [
      await stored.withIris(written.map((e) => e.iri)),
      eventRecordsFromQuads(written.flatMap(eventQuads)),
    ]) {
      expect(read.map((e) => e.sequence)).to.deep.equal([3, 7]);
      expect(read[0]).to.deep.equal(written[1]);
      expect({ ...read[1], codes: [...read[1].codes].sort() }).to.deep.equal({
        ...written[0],
        codes: [...written[0].codes].sort(),
      });
    }
    expect((await stored.ofObject(object(1))).map((e) => e.iri)).to.deep.equal([written[0].iri]);
    expect((await stored.postedBy(AGENT)).map((e) => e.sequence)).to.deep.equal([3, 7]);
    // From the clock, not a MAX over the stored numbers: above them all, and above what a start before claimed.
    const before = Date.now();
    expect(await stored.lastSequence()).to.be.at.least(before * 1000);
  });

  it('received notifications on the engine: arrival numbers go on from the clock, without reading the stored ones', async () => {
    const unread = () => Promise.reject(new Error('the stored notifications were read'));
    const engine = { select: unread, graphTriples: unread, graphs: unread } as unknown as SparqlReader & GraphReader;
    const before = Date.now();
    expect(await new EngineNotifications(engine, unread).lastSequence()).to.be.at.least(before * 1000);
  });

  it('action requests: request, objects, whether it notifies its requester, its own content, status history in order; revocation stored with its entry', async () => {
    const iri = `${BASE}/action-requests/r1`;
    const record: ActionRequestRecord = {
      iri,
      type: api.ChangeRequest,
      requestedBy: AGENT,
      requestedAt: new Date(1_700_000_000_000),
      objects: [object(1)],
      statuses: [],
      notifiesRequester: true,
    };
    const statuses = [
      {
        iri: 'internal:s1',
        number: 1,
        status: requestStatus.PENDING,
        since: new Date(1_700_000_000_000),
        changedBy: AGENT,
      },
      {
        iri: 'internal:s2',
        number: 2,
        status: requestStatus.REJECTED,
        since: new Date(1_700_000_000_050),
        changedBy: `${BASE}/holder`,
      },
    ];
    const body = [quad(namedNode(iri), namedNode(api.hasLogisticsObject), namedNode(object(1)))];
    const quads = [
      ...requestQuads(record, body),
      ...statusEntryQuads(iri, statuses[1]),
      ...statusEntryQuads(iri, statuses[0]),
    ];
    const index = storeWith(quads);
    expect(await readActionRequests(readerOf(index))).to.deep.equal([{ ...record, statuses }]);
    const graph = index.graphNTriples(iri);
    expect(graph).to.include(`<${api.hasLogisticsObject}> <${object(1)}>`);

    const revoked = {
      iri: 'internal:s3',
      number: 2,
      status: requestStatus.REVOKED,
      since: new Date(1_700_000_000_070),
      changedBy: AGENT,
    };
    const { notifiesRequester: _flag, ...quiet } = record;
    const other = { ...quiet, iri: `${BASE}/action-requests/r0`, requestedAt: new Date(1_699_999_999_999) };
    const withRevoked = storeWith([
      ...quads,
      ...requestQuads(other, []),
      ...statusEntryQuads(other.iri, { ...statuses[0], iri: 'internal:s0' }),
      ...statusEntryQuads(other.iri, revoked, { revoked: true }),
    ]);
    const read = await readActionRequests(readerOf(withRevoked));
    expect(read.map((r) => r.iri)).to.deep.equal([other.iri, iri]);
    expect(read[0].statuses.map((s) => s.status)).to.deep.equal([requestStatus.PENDING, requestStatus.REVOKED]);
    expect(read.map((r) => r.notifiesRequester)).to.deep.equal([undefined, true]);
    expect(withRevoked.graphNTriples(other.iri)).to.include(`<${api.isRevokedBy}> <${AGENT}>`);
  });

  it('action requests: status entries of a request whose creation never reached the store are left out, and so is a request without statuses', async () => {
    const orphan = statusEntryQuads(`${BASE}/action-requests/gone`, {
      iri: 'internal:x',
      number: 1,
      status: requestStatus.PENDING,
      since: new Date(0),
      changedBy: AGENT,
    });
    const bare = requestQuads(
      {
        iri: `${BASE}/action-requests/bare`,
        type: api.ChangeRequest,
        requestedBy: AGENT,
        requestedAt: new Date(0),
        objects: [],
        statuses: [],
      },
      [],
    );
    expect(await readActionRequests(readerOf(storeWith([...orphan, ...bare])))).to.deep.equal([]);
  });

  it('replay: the stored data gives the domain events that wrote it, per kind in commit order', async () => {
    const iri = `${BASE}/action-requests/r1`;
    const request: ActionRequestRecord = {
      iri,
      type: api.ChangeRequest,
      requestedBy: AGENT,
      requestedAt: new Date(5),
      objects: [object(1)],
      statuses: [],
    };
    const pending = {
      iri: 'internal:p',
      number: 1,
      status: requestStatus.PENDING,
      since: new Date(5),
      changedBy: AGENT,
    };
    const revokedEntry = {
      iri: 'internal:r',
      number: 2,
      status: requestStatus.REVOKED,
      since: new Date(6),
      changedBy: AGENT,
    };
    const event: EventRecord = {
      iri: `${object(1)}/logistics-events/e`,
      object: object(1),
      sequence: 1,
      recordedAt: new Date(4),
      creationDate: 0,
      eventDate: 0,
      createdBy: AGENT,
      codes: [],
    };
    const quads = [
      ...revisionQuads(revision(1, 2, 3)),
      ...revisionQuads(revision(1, 1, 1)),
      ...eventQuads(event),
      ...requestQuads(request, []),
      ...statusEntryQuads(iri, pending),
      ...statusEntryQuads(iri, revokedEntry, { revoked: true }),
      quad(
        namedNode(object(1)),
        namedNode(`${CARGO}name`),
        literal('not bookkeeping'),
        namedNode(revisionGraph(object(1), 1)),
      ),
    ];
    const index = storeWith(quads);
    expect(await storedDomainEvents(readerOf(index), readRevisions(index))).to.deep.equal([
      { kind: 'object-created', revision: revision(1, 1, 1) },
      { kind: 'revision-written', revision: revision(1, 2, 3) },
      // Not the event: the domain reads events from the store as it needs them (StoredEvents), none at start.
      { kind: 'action-request-created', request, status: pending },
      { kind: 'action-request-revoked', request, status: revokedEntry },
    ]);
  });

  it('received notifications: every field (optional ones absent or present), the notification apart from the receipt', () => {
    const notification = (n: number, key?: string, lo?: string): [ReceivedNotificationRecord, Quad[]] => {
      const iri = `https://publisher.example.com/notifications/${n}`;
      const triples = [
        quad(namedNode(iri), namedNode(`${API}hasEventType`), namedNode(`${API}LOGISTICS_OBJECT_UPDATED`)),
        quad(
          namedNode(iri),
          namedNode(`${API}hasChangedProperty`),
          literal(`${CARGO}goodsDescription`, namedNode('http://www.w3.org/2001/XMLSchema#anyURI')),
        ),
        ...(lo ? [quad(namedNode(iri), namedNode(api.hasLogisticsObject), namedNode(lo))] : []),
      ];
      const record: ReceivedNotificationRecord = {
        iri,
        graph: receivedNotificationGraph(`g${n}`),
        sender: AGENT,
        receivedAt: new Date(1_700_000_000_000 + n),
        sequence: n,
        ...(key ? { idempotencyKey: key } : {}),
        eventType: `${API}LOGISTICS_OBJECT_UPDATED`,
        ...(lo ? { object: lo } : {}),
      };
      return [record, triples];
    };
    const written = [notification(2, 'k2', object(1)), notification(1)];
    const index = storeWith(written.flatMap(([r, t]) => receivedNotificationQuads(r, t)));
    // Read back from the graph's N-Triples, as the archive reads it from the journal record.
    for (const [record] of written)
      expect(receivedNotificationFromNTriples(record.graph, index.graphNTriples(record.graph))).to.deep.equal(record);
    expect(
      receivedNotificationFromNTriples(written[0][0].graph, ''),
      'no receipt: not a received notification',
    ).to.equal(undefined);
    const graph = written[0][0].graph;
    const stored = index.graphNTriples(graph);
    const back = payloadTriples(
      graph,
      receivedNotificationQuads(written[0][0], written[0][1]).filter((q) => stored.includes(q.subject.value)),
    );
    expect(back.map((q) => q.predicate.value)).to.have.members(written[0][1].map((q) => q.predicate.value));
  });

  it('outbox entries: every field (optional ones absent or present), one quad each whatever the recipients, read in order and by number', async () => {
    const entry = (sequence: number, extra: Partial<OutboxEntry> = {}): OutboxEntry => ({
      sequence,
      iri: `${BASE}/notifications/n${sequence}`,
      queuedAt: new Date(1_700_000_000_000 + sequence),
      content: { eventType: `${API}LOGISTICS_OBJECT_UPDATED` },
      topics: [],
      addressed: [],
      recipients: 1000,
      ...extra,
    });
    const written = [
      entry(7, {
        content: {
          eventType: `${API}LOGISTICS_OBJECT_UPDATED`,
          object: object(1),
          objectType: `${CARGO}Piece`,
          revision: 3,
          changed: [`${CARGO}goodsDescription`],
          triggeredBy: `${BASE}/action-requests/c`,
          event: `${BASE}/e`,
        },
        topics: [{ object: object(1), type: `${CARGO}Piece` }],
        addressed: [
          {
            queue: 'q "a"\n',
            subscription: `${BASE}/action-requests/s`,
            callback: 'https://subscriber.example.com/notifications',
          },
        ],
      }),
      entry(2),
    ];
    for (const e of written) expect(outboxEntryQuads(e)).to.have.length(1);
    const index = storeWith(written.flatMap(outboxEntryQuads));
    const reader = readerOf(index);
    expect(await readOutboxEntries(reader)).to.deep.equal([written[1], written[0]]);
    expect(await readOutboxEntry(reader, 7)).to.deep.equal(written[0]);
    // An entry read back is written as the same quad: delivery deletes it by that quad without reading it again.
    expect(outboxEntryQuads((await readOutboxEntry(reader, 7))!).map((q) => q.object.value)).to.deep.equal(
      outboxEntryQuads(written[0]).map((q) => q.object.value),
    );
    expect(await readOutboxEntry(reader, 3)).to.equal(undefined);
    // A row answered without its literal (Virtuoso, a commit under way) is not an entry yet.
    const partial: SparqlReader = {
      select: async () => ({
        head: { vars: ['g', 'entry'] },
        results: { bindings: [{ g: { type: 'uri', value: outboxEntryGraph(9) } }] },
      }),
    };
    expect(await readOutboxEntries(partial)).to.deep.equal([]);
  });

  it('outbox positions: queues, subscription starts and compaction read back; a moved position replaces the one stored', async () => {
    const [a, b] = ['https://s.example.com/org api:LOGISTICS_OBJECT_IDENTIFIER https://p.example.com/o/1', 'B'];
    const moved = movedQueuePosition(a, 4, 9);
    const first = movedQueuePosition(b, 0, 2);
    expect(first.delete).to.deep.equal([]);
    const stored = [
      ...queuePositionQuads(a, 4),
      ...first.insert,
      notifiedAfterQuad(`${BASE}/action-requests/s`, 5),
      compactedThroughQuad(3),
    ];
    const deleted = new Set(moved.delete.map(quadToNq));
    const positions = await readOutboxPositions(
      readerOf(storeWith([...stored.filter((q) => !deleted.has(quadToNq(q))), ...moved.insert])),
    );
    expect(positions.queues.sort((x, y) => x.through - y.through)).to.deep.equal([
      { queue: b, through: 2 },
      { queue: a, through: 9 },
    ]);
    expect(positions.subscriptions).to.deep.equal([{ subscription: `${BASE}/action-requests/s`, after: 5 }]);
    expect(positions.compactedThrough).to.equal(3);
  });

  it('parked notifications: every field, dead letters apart from replayed ones, the notification apart from its queue entry', async () => {
    const parked = (sequence: number, extra: Partial<ParkedNotification> = {}): ParkedNotification => ({
      iri: `${BASE}/notifications/n${sequence}`,
      graph: parkedGraph(`n${sequence}`),
      queue: 'A',
      sequence,
      queuedAt: new Date(1_700_000_000_000 + sequence),
      subscription: `${BASE}/action-requests/s`,
      callback: 'https://subscriber.example.com/notifications',
      eventType: `${API}LOGISTICS_OBJECT_UPDATED`,
      ...extra,
    });
    const notification = (p: ParkedNotification) => [
      quad(namedNode(p.iri), namedNode(api.hasEventType), namedNode(p.eventType)),
      ...(p.object ? [quad(namedNode(p.iri), namedNode(api.hasLogisticsObject), namedNode(p.object))] : []),
      ...(p.triggeredBy ? [quad(namedNode(p.iri), namedNode(api.isTriggeredBy), namedNode(p.triggeredBy))] : []),
    ];
    const written = [
      parked(9, { object: object(1), revision: 3, triggeredBy: `${BASE}/action-requests/c` }),
      parked(2),
      parked(5, { queue: 'B' }),
    ];
    const dead = { at: new Date(1_700_000_001_000), reason: 'answered 500' };
    const index = storeWith([
      ...written.flatMap((p) => parkedNotificationQuads(p, notification(p))),
      ...deadLetterQuads(written[2], dead),
    ]);
    const reader = readerOf(index);
    expect(await readParkedNotifications(reader)).to.deep.equal([
      { notification: written[1] },
      { notification: written[2], dead },
      { notification: written[0] },
    ]);
    expect((await readParkedNotifications(reader, { dead: false })).map((s) => s.notification.sequence)).to.deep.equal([
      2, 9,
    ]);
    expect((await readParkedNotifications(reader, { dead: true })).map((s) => s.notification.sequence)).to.deep.equal([
      5,
    ]);
    const sent = payloadTriples(written[0].graph, parkedNotificationQuads(written[0], notification(written[0])));
    expect(sent.map((q) => q.predicate.value)).to.have.members([
      api.hasEventType,
      api.hasLogisticsObject,
      api.isTriggeredBy,
    ]);
  });
});
