import { randomBytes, randomInt } from 'node:crypto';
import { Parser } from 'n3';
import {
  blankNode,
  literal,
  namedNode,
  quad,
  termToNt,
  xsdLiteral,
  type Quad,
  type Term,
} from '../../src/rdf/terms.js';
import { API, api, CARGO, CODE_LISTS, INTERNAL_SCHEME, rdf, requestStatus, xsd } from '../../src/rdf/vocab.js';
import type { ConfigOverrides } from '../../src/config.js';
import { startListener, type LoopbackListener } from './loopback.js';
import { ServerProcess } from './server-process.js';

/** The server under test, as the driver talks to it. */
export interface Target {
  request(path: string, init?: RequestInit): Promise<Response>;
}

/** What a check found: whether the write is there, and what is wrong if anything. */
export interface CheckResult {
  present: boolean;
  problem?: string;
}

/** What must hold after a restart for one write that was sent. */
export interface Expectation {
  readonly label: string;
  /**
   * Checks the restarted server. An acknowledged write must be there exactly; one whose answer
   * never came (the server died first) may be missing, but never partly there.
   */
  check(target: Target, acknowledged: boolean): Promise<CheckResult>;
}

/** One write ready to go: the request, the status that acknowledges it, and what must survive. */
export interface PreparedWrite {
  send(target: Target): Promise<Response>;
  acknowledgedBy: number;
  expectation: Expectation;
  onAcknowledged?: () => void;
  /** The notification the subscriber must get for it, as `notificationKey` names it. */
  notification?: string;
}

/** What identifies a notification for the crash test: its event type and object, plus the revision or event it is about. */
export function notificationKey(eventType: string, object: string, about: number | string): string {
  return `${eventType.replace(API, '')} ${object} ${about}`;
}

/** What operations share across rounds. */
export interface WorkloadState {
  /** Distinguishes runs that share a data directory. */
  runId: string;
  objectsPrefix: string;
  /** Acknowledged objects, for operations that change existing ones. */
  objects: string[];
  /** What each acknowledged object holds now, for changes; absent while a change is in flight or after one went unanswered. */
  changeable: Map<string, { triples: Quad[]; revision: number }>;
  /** Acknowledged access delegations; `revoked` is unknown while a revocation is in flight or after one went unanswered. */
  delegations: Delegated[];
}

interface Delegated {
  request: string;
  object: string;
  agent: string;
  revoked: boolean | 'unknown';
}

/**
 * A kind of write the crash driver performs. To add one (a change request via PATCH, a logistics
 * event via POST /logistics-objects/{id}/logistics-events): implement `prepare` (return undefined
 * when it has nothing to act on yet, e.g. no acknowledged object), give it an Expectation that
 * GETs what it wrote, and list it in OPERATIONS.
 */
export interface Operation {
  readonly kind: string;
  prepare(seq: number, state: WorkloadState): PreparedWrite | undefined;
}

const cargo = (local: string) => namedNode(`${CARGO}${local}`);
const NTRIPLES = 'application/n-triples';
const SERVER_ADDED: ReadonlySet<string> = new Set([api.hasRevision, api.hasLatestRevision]);

const isEmbedded = (t: Term) =>
  t.termType === 'BlankNode' || (t.termType === 'NamedNode' && t.value.startsWith(INTERNAL_SCHEME));
const termKey = (t: Term) => `${t.termType}:${t.value}`;

/**
 * Sorted N-Triples lines in which each embedded node (a blank node as sent, an `internal:` IRI as
 * stored) is named by its path of predicates from the root, so what was sent and what is stored
 * compare exactly. Every other term is written as N-Triples, so literals compare byte for byte.
 */
export function canonicalLines(triples: readonly Quad[], root: string): string[] {
  const names = new Map<string, string>([[`NamedNode:${root}`, '<root>']]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const t of triples) {
      const parent = names.get(termKey(t.subject));
      if (parent && isEmbedded(t.object) && !names.has(termKey(t.object))) {
        names.set(termKey(t.object), `[${parent} ${t.predicate.value}]`);
        grew = true;
      }
    }
  }
  const name = (t: Term) => names.get(termKey(t)) ?? (t.termType === 'BlankNode' ? `_:${t.value}` : termToNt(t));
  return triples.map((t) => `${name(t.subject)} ${name(t.predicate)} ${name(t.object)} .`).sort();
}

/** Literals that need escaping, characters outside the BMP, and values that differ per write. */
function pieceTriples(iri: string, seq: number): Quad[] {
  const piece = namedNode(iri);
  const weight = blankNode('weight');
  const dimensions = blankNode('dimensions');
  const height = blankNode('height');
  return [
    quad(piece, namedNode(rdf.type), cargo('Piece')),
    quad(
      piece,
      cargo('goodsDescription'),
      literal(`Crate ${seq}: "quoted", back\\slash, tab\t, line\nbreak, é, 日本, 🚚 ${randomBytes(6).toString('hex')}`),
    ),
    quad(piece, cargo('textualHandlingInstructions'), literal(`KEEP DRY ${seq}`)),
    quad(piece, cargo('slac'), xsdLiteral(seq % 1000, xsd.integer)),
    quad(piece, cargo('stackable'), xsdLiteral(seq % 2 === 0, xsd.boolean)),
    quad(piece, cargo('grossWeight'), weight),
    quad(weight, namedNode(rdf.type), cargo('Value')),
    quad(weight, cargo('unit'), namedNode(`${CODE_LISTS}MeasurementUnitCode#KGM`)),
    quad(weight, cargo('numericalValue'), xsdLiteral(`${seq % 500}.5`, xsd.double)),
    quad(piece, cargo('dimensions'), dimensions),
    quad(dimensions, namedNode(rdf.type), cargo('Dimensions')),
    quad(dimensions, cargo('height'), height),
    quad(height, namedNode(rdf.type), cargo('Value')),
    quad(height, cargo('unit'), namedNode(`${CODE_LISTS}MeasurementUnitCode#CMT`)),
    quad(height, cargo('numericalValue'), xsdLiteral(`${seq % 97}.25`, xsd.double)),
  ];
}

const ntLine = (t: Quad) =>
  `${isEmbedded(t.subject) ? `_:${t.subject.value}` : termToNt(t.subject)} ${termToNt(t.predicate)} ${t.object.termType === 'BlankNode' ? `_:${t.object.value}` : termToNt(t.object)} .\n`;

/** Revision `revision` of `iri` must hold exactly `triples`. */
export function revisionExpectation(label: string, iri: string, revision: number, triples: Quad[]): Expectation {
  return resourceExpectation(label, `${iri}?revision=${revision}`, iri, triples);
}

/** The resource at `url` must hold exactly `triples` about `root` (server-added revision numbers aside). */
function resourceExpectation(label: string, url: string, root: string, triples: Quad[]): Expectation {
  const expected = canonicalLines(triples, root);
  return {
    label,
    async check(target, acknowledged) {
      const res = await target.request(url, { headers: { Accept: NTRIPLES } });
      const text = await res.text();
      if (res.status === 404 && !acknowledged) return { present: false };
      if (res.status !== 200)
        return { present: false, problem: `${label}: GET answered ${res.status} ${text.slice(0, 300)}` };
      const stored = new Parser({ format: NTRIPLES }).parse(text).filter((t) => !SERVER_ADDED.has(t.predicate.value));
      const actual = canonicalLines(stored, root);
      if (actual.join('\n') === expected.join('\n')) return { present: true };
      return {
        present: true,
        problem: `${label}: stored triples differ from those sent.\nsent:\n${expected.join('\n')}\nstored:\n${actual.join('\n')}`,
      };
    },
  };
}

const createObject: Operation = {
  kind: 'create object',
  prepare(seq, state) {
    const iri = `${state.objectsPrefix}crash-${state.runId}-${seq}`;
    const triples = pieceTriples(iri, seq);
    return {
      acknowledgedBy: 201,
      send: (target) =>
        target.request('/logistics-objects', {
          method: 'POST',
          headers: { 'Content-Type': 'text/turtle' },
          body: triples.map(ntLine).join(''),
        }),
      expectation: revisionExpectation(`object ${iri}`, iri, 1, triples),
      notification: notificationKey('LOGISTICS_OBJECT_CREATED', iri, 1),
      onAcknowledged: () => {
        state.objects.push(iri);
        state.changeable.set(iri, { triples, revision: 1 });
      },
    };
  },
};

const HANDLING = `${CARGO}textualHandlingInstructions`;

/**
 * A Change through PATCH (auto-accepted for the holder): replaces one value, so revision n+1 must
 * hold exactly the new triples, and the ChangeRequest must say REQUEST_ACCEPTED. One change per
 * object at a time; an object whose change went unanswered is not changed again (its revision is
 * then unknown).
 */
const changeObject: Operation = {
  kind: 'change object',
  prepare(seq, state) {
    const candidates = [...state.changeable.keys()];
    if (candidates.length === 0) return undefined;
    const iri = candidates[randomInt(candidates.length)];
    const { triples, revision } = state.changeable.get(iri)!;
    state.changeable.delete(iri);
    const old = triples.find((t) => t.predicate.value === HANDLING)!;
    const replacement = quad(
      old.subject,
      old.predicate,
      literal(`handle "${seq}" with care\n é 🚚 ${randomBytes(4).toString('hex')}`),
    );
    const changed = triples.map((t) => (t === old ? replacement : t));
    const operation = (op: 'ADD' | 'DELETE', value: string) => ({
      '@type': 'api:Operation',
      'api:op': { '@id': `api:${op}` },
      'api:s': iri,
      'api:p': HANDLING,
      'api:o': { '@type': 'api:OperationObject', 'api:hasDatatype': xsd.string, 'api:hasValue': value },
    });
    const body = JSON.stringify({
      '@context': { api: 'https://onerecord.iata.org/ns/api#' },
      '@type': 'api:Change',
      'api:hasLogisticsObject': { '@id': iri },
      'api:hasRevision': revision,
      'api:hasOperation': [operation('DELETE', old.object.value), operation('ADD', replacement.object.value)],
    });
    let changeRequest: string | null = null;
    const revisionCheck = revisionExpectation(`change ${seq} of ${iri}`, iri, revision + 1, changed);
    // Once the change is in, the revision it replaced is history: read from the revision archive.
    const historyCheck = revisionExpectation(
      `revision ${revision} of ${iri}, replaced by change ${seq}`,
      iri,
      revision,
      triples,
    );
    return {
      acknowledgedBy: 201,
      async send(target) {
        const res = await target.request(iri, {
          method: 'PATCH',
          headers: { 'Content-Type': 'application/ld+json' },
          body,
        });
        changeRequest = res.headers.get('location');
        return res;
      },
      expectation: {
        label: revisionCheck.label,
        async check(target, acknowledged) {
          const result = await revisionCheck.check(target, acknowledged);
          if (result.problem || !acknowledged) return result;
          const res = await target.request(changeRequest!, { headers: { Accept: NTRIPLES } });
          const text = await res.text();
          if (res.status !== 200 || !text.includes(`<${api.hasRequestStatus}> <${requestStatus.ACCEPTED}>`)) {
            return {
              present: true,
              problem: `${revisionCheck.label}: ChangeRequest ${changeRequest} answered ${res.status}, not REQUEST_ACCEPTED:\n${text.slice(0, 500)}`,
            };
          }
          const history = await historyCheck.check(target, true);
          return history.problem ? history : result;
        },
      },
      notification: notificationKey('LOGISTICS_OBJECT_UPDATED', iri, revision + 1),
      onAcknowledged: () => state.changeable.set(iri, { triples: changed, revision: revision + 1 }),
    };
  },
};

/** A Logistics Event with an id of the client's, so even an unanswered one can be looked for. */
const postEvent: Operation = {
  kind: 'post event',
  prepare(seq, state) {
    if (state.objects.length === 0) return undefined;
    const object = state.objects[randomInt(state.objects.length)];
    const iri = `${object}/logistics-events/crash-${state.runId}-${seq}`;
    const event = namedNode(iri);
    const triples = [
      quad(event, namedNode(rdf.type), cargo('LogisticsEvent')),
      quad(
        event,
        cargo('eventDate'),
        xsdLiteral(
          new Date(Date.UTC(2026, 0, 1, 0, 0, seq % 86_400)).toISOString().replace('.000Z', 'Z'),
          xsd.dateTime,
        ),
      ),
      quad(event, cargo('creationDate'), xsdLiteral('2026-01-02T03:04:05Z', xsd.dateTime)),
      quad(event, cargo('eventName'), literal(`departed "${seq}"\t🚚 ${randomBytes(4).toString('hex')}`)),
      quad(event, cargo('eventFor'), namedNode(object)),
    ];
    return {
      acknowledgedBy: 201,
      send: (target) =>
        target.request(`${object}/logistics-events`, {
          method: 'POST',
          headers: { 'Content-Type': 'text/turtle' },
          body: triples.map(ntLine).join(''),
        }),
      expectation: resourceExpectation(`event ${iri}`, iri, iri, triples),
      notification: notificationKey('LOGISTICS_EVENT_RECEIVED', object, iri),
    };
  },
};

/**
 * What the restarted server says about a delegation: whether its delegate holds
 * GET_LOGISTICS_OBJECT (GET /internal/access) and the request's status. Both must agree, and
 * match what the answers acknowledged (accepted, or revoked).
 */
async function delegationState(
  target: Target,
  object: string,
  agent: string,
  request?: string,
): Promise<{ held: boolean; status?: string; problem?: string }> {
  const res = await target.request(
    `/internal/access?object=${encodeURIComponent(object)}&agent=${encodeURIComponent(agent)}`,
  );
  if (res.status !== 200)
    return { held: false, problem: `GET /internal/access answered ${res.status} ${(await res.text()).slice(0, 300)}` };
  const held = ((await res.json()) as { permissions: Record<string, { held: boolean }> }).permissions
    .GET_LOGISTICS_OBJECT.held;
  if (!request) return { held };
  const text = await (await target.request(request, { headers: { Accept: NTRIPLES } })).text();
  const status = [requestStatus.ACCEPTED, requestStatus.REVOKED].find((s) =>
    text.includes(`<${request}> <${api.hasRequestStatus}> <${s}>`),
  );
  return { held, status };
}

function delegationExpectation(
  label: string,
  delegated: () => Delegated | undefined,
  object: string,
  agent: string,
): Expectation {
  return {
    label,
    async check(target, acknowledged) {
      const d = delegated();
      const found = await delegationState(target, object, agent, d?.request);
      if (found.problem) return { present: false, problem: `${label}: ${found.problem}` };
      if (!acknowledged || !d) return { present: found.held };
      const wanted = d.revoked === 'unknown' ? found.status !== requestStatus.REVOKED : !d.revoked;
      const status = wanted ? requestStatus.ACCEPTED : requestStatus.REVOKED;
      if (found.held !== wanted || found.status !== status) {
        return {
          present: true,
          problem: `${label}: the delegate ${found.held ? 'holds' : 'does not hold'} GET_LOGISTICS_OBJECT and the request is ${found.status}; expected ${wanted ? 'held' : 'withdrawn'} and ${status}`,
        };
      }
      return { present: true };
    },
  };
}

/** The holder delegates read access to a new partner (accepted at once): the grant must survive. */
const delegateAccess: Operation = {
  kind: 'delegate access',
  prepare(seq, state) {
    if (state.objects.length === 0) return undefined;
    const object = state.objects[randomInt(state.objects.length)];
    const agent = `https://partner-${state.runId}-${seq}.example.com/org`;
    let delegated: Delegated | undefined;
    let location: string | null = null;
    return {
      acknowledgedBy: 201,
      async send(target) {
        const res = await target.request('/access-delegations', {
          method: 'POST',
          headers: { 'Content-Type': 'application/ld+json' },
          body: JSON.stringify({
            '@context': { api: 'https://onerecord.iata.org/ns/api#' },
            '@type': 'api:AccessDelegation',
            'api:hasPermission': { '@id': 'api:GET_LOGISTICS_OBJECT' },
            'api:isRequestedFor': { '@id': agent },
            'api:hasLogisticsObject': { '@id': object },
          }),
        });
        location = res.headers.get('location');
        return res;
      },
      expectation: delegationExpectation(`delegation ${seq} of ${object}`, () => delegated, object, agent),
      onAcknowledged: () => {
        delegated = { request: location!, object, agent, revoked: false };
        state.delegations.push(delegated);
      },
    };
  },
};

/** The holder revokes an accepted delegation: the withdrawal must survive (never undone by a restart). */
const revokeDelegation: Operation = {
  kind: 'revoke delegation',
  prepare(seq, state) {
    const candidates = state.delegations.filter((d) => d.revoked === false);
    if (candidates.length === 0) return undefined;
    const d = candidates[randomInt(candidates.length)];
    d.revoked = 'unknown';
    return {
      acknowledgedBy: 204,
      send: (target) => target.request(d.request, { method: 'DELETE' }),
      expectation: delegationExpectation(`revocation ${seq} of ${d.request}`, () => d, d.object, d.agent),
      onAcknowledged: () => {
        d.revoked = true;
      },
    };
  },
};

/**
 * A notification from another server (sent with the driver's token: any caller may), with an @id
 * and an object of its own, so that it is listed alone: an acknowledged one must be listed exactly
 * once after the restart, and sent again (as by a publisher whose answer never came) it is 204
 * and still stored once. An unacknowledged one is there once or not at all.
 */
const receiveNotification: Operation = {
  kind: 'receive notification',
  prepare(seq, state) {
    const id = `https://publisher.example.com/notifications/crash-${state.runId}-${seq}`;
    const object = `https://publisher.example.com/logistics-objects/crash-${state.runId}-${seq}`;
    const label = `received notification ${id}`;
    const body = JSON.stringify({
      '@context': { api: API },
      '@id': id,
      '@type': 'api:Notification',
      'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
      'api:hasLogisticsObject': { '@id': object },
      'api:hasChangedProperty': { '@type': xsd.anyURI, '@value': `${CARGO}goodsDescription` },
    });
    const send = (target: Target) =>
      target.request('/notifications', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json', 'Idempotency-Key': `key-${seq}` },
        body,
      });
    const listed = async (target: Target): Promise<string[] | string> => {
      const res = await target.request(`/internal/notifications?logistics-object=${encodeURIComponent(object)}`);
      if (res.status !== 200)
        return `GET /internal/notifications answered ${res.status} ${(await res.text()).slice(0, 300)}`;
      const items = ((await res.json()) as { 'api:hasItem'?: { '@id': string } | { '@id': string }[] })['api:hasItem'];
      return (items === undefined ? [] : Array.isArray(items) ? items : [items]).map((item) => item['@id']);
    };
    return {
      acknowledgedBy: 204,
      send,
      expectation: {
        label,
        async check(target, acknowledged) {
          const ids = await listed(target);
          if (typeof ids === 'string') return { present: false, problem: `${label}: ${ids}` };
          if (ids.length > 1 || ids.some((listedId) => listedId !== id))
            return { present: true, problem: `${label}: listed as ${JSON.stringify(ids)}` };
          if (!acknowledged) return { present: ids.length === 1 };
          if (ids.length === 0) return { present: false, problem: `${label}: acknowledged but not listed` };
          const again = await send(target);
          const after = await listed(target);
          if (again.status !== 204 || typeof after === 'string' || after.length !== 1) {
            return {
              present: true,
              problem: `${label}: sent again, answered ${again.status} and is listed as ${JSON.stringify(after)}`,
            };
          }
          return { present: true };
        },
      },
    };
  },
};

/** The kinds of write the crash driver mixes, each with its weight. */
export const OPERATIONS: readonly { operation: Operation; weight: number }[] = [
  { operation: createObject, weight: 2 },
  { operation: changeObject, weight: 2 },
  { operation: postEvent, weight: 1 },
  // Small records: light weights keep the journal growing fast enough for snapshots during the run.
  { operation: delegateAccess, weight: 0.5 },
  { operation: revokeDelegation, weight: 0.5 },
  { operation: receiveNotification, weight: 0.5 },
];

function pickOperation(): Operation {
  const total = OPERATIONS.reduce((sum, o) => sum + o.weight, 0);
  let r = Math.random() * total;
  for (const o of OPERATIONS) {
    r -= o.weight;
    if (r < 0) return o.operation;
  }
  return OPERATIONS[0].operation;
}

export interface CrashRunOptions {
  rounds: number;
  dataDir: string;
  port: number;
  /** Writes run for a random time up to this before the kill. */
  maxWriteMs: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Small values make snapshots happen (and get killed) often. */
  snapshotAfterBytes: number;
  /** Share of rounds in which the server is killed while starting (replaying, loading a snapshot). */
  killWhileStartingShare: number;
  /** Older acknowledged writes re-checked each round, besides those of the round before. */
  sampleOlder: number;
  /**
   * Every this many rounds, the kill waits until the server has written a snapshot (or
   * SNAPSHOT_WAIT_MS has passed): on a slow machine a random kill would otherwise hit every
   * snapshot before it is complete, and no round would start from one.
   */
  snapshotRoundEvery: number;
  /**
   * Every this many rounds, the round's server starts after a clean stop (SIGTERM), so from the
   * memory image that stop wrote (store.memoryImage), and is then killed as usual: the next start
   * must recover from the snapshot (or the image of a snapshot taken since), never from that image.
   */
  imageRoundEvery?: number;
  /** A subscriber to every Logistics Object: every acknowledged write's notification must reach it, in order. */
  subscriber?: NotificationRecorder;
  progress?: (line: string) => void;
}

/**
 * The notification endpoint of a subscriber, on loopback: keeps every notification POSTed to it,
 * duplicates included, in arrival order, and answers 204.
 */
export interface NotificationRecorder {
  /** The subscribing Organization. */
  organization: string;
  listener: LoopbackListener;
  /** `notificationKey` of each notification, in arrival order. */
  keys: string[];
  ids: string[];
}

export async function startNotificationRecorder(): Promise<NotificationRecorder> {
  const recorder = {
    organization: 'https://subscriber.example.com/org',
    keys: [] as string[],
    ids: [] as string[],
  } as NotificationRecorder;
  const id = (value: unknown) => ((value ?? {}) as { '@id'?: string })['@id'] ?? '';
  recorder.listener = await startListener((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const event = id(n['api:hasLogisticsEvent']);
      recorder.keys.push(
        notificationKey(
          id(n['api:hasEventType']),
          id(n['api:hasLogisticsObject']),
          event || (n['api:hasRevision'] as number),
        ),
      );
      recorder.ids.push(n['@id'] as string);
      res.writeHead(204).end();
    });
  });
  return recorder;
}

/** The publisher's configuration for `subscriber`: it may read everything, is called on loopback, retried fast. */
const publisherConfig = (subscriber: NotificationRecorder): ConfigOverrides => ({
  internalAgents: [subscriber.organization],
  outbound: { allowPrivateAddresses: true },
  delivery: {
    initialBackoffMs: 50,
    maxBackoffMs: 500,
    callbacks: [{ organization: subscriber.organization, url: `${subscriber.listener.url}/notifications` }],
  },
});

/** `subscriber` subscribes to every Logistics Object and every event type. */
async function subscribeToEverything(target: Target, subscriber: NotificationRecorder): Promise<void> {
  const res = await target.request('/subscriptions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/ld+json' },
    body: JSON.stringify({
      '@context': { api: API },
      '@type': 'api:Subscription',
      'api:hasSubscriber': { '@id': subscriber.organization },
      'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_TYPE' },
      'api:hasTopic': { '@type': xsd.anyURI, '@value': `${CARGO}LogisticsObject` },
      'api:includeSubscriptionEventType': [
        'LOGISTICS_OBJECT_CREATED',
        'LOGISTICS_OBJECT_UPDATED',
        'LOGISTICS_EVENT_RECEIVED',
      ].map((e) => ({ '@id': `api:${e}` })),
    }),
  });
  if (res.status !== 201) throw new Error(`subscribing answered ${res.status}: ${await res.text()}`);
}

/** Waits until the outbox has nothing left to deliver and no dead letters; false if it does not within `ms`. */
async function outboxDrained(target: Target, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const queues = (await (await target.request('/internal/outbox/queues')).json()) as { queues: unknown[] };
    const dead = (await (await target.request('/internal/outbox/dead-letters')).json()) as { deadLetters: unknown[] };
    if (queues.queues.length === 0 && dead.deadLetters.length === 0) return true;
    await sleep(100);
  }
  return false;
}

/**
 * Every acknowledged write's notification arrived, and for each object they first arrived in
 * order: created, then its revisions upwards (duplicates of earlier ones may follow).
 */
function checkNotifications(
  subscriber: NotificationRecorder,
  expected: readonly string[],
  report: CrashRunReport,
): void {
  const received = new Set(subscriber.keys);
  for (const key of expected) if (!received.has(key)) report.failures.push(`notification never delivered: ${key}`);
  const last = new Map<string, number>();
  const seen = new Set<string>();
  for (const key of subscriber.keys) {
    if (seen.has(key)) continue;
    seen.add(key);
    const [type, object, about] = key.split(' ');
    if (type === 'LOGISTICS_EVENT_RECEIVED') continue;
    const revision = Number(about);
    if ((last.get(object) ?? 0) >= revision)
      report.failures.push(`${key} arrived after revision ${last.get(object)} of the same object`);
    last.set(object, revision);
  }
  report.notificationsExpected = expected.length;
  report.notificationsReceived = seen.size;
  report.notificationDuplicates = subscriber.keys.length - seen.size;
}

export interface CrashRunReport {
  rounds: number;
  acknowledged: number;
  /** Acknowledged writes per operation kind. */
  acknowledgedByKind: Record<string, number>;
  /** Writes whose answer never came because the server died. */
  unanswered: number;
  /** Of those, how many turned out to be durable anyway. */
  unansweredPresent: number;
  killsWhileStarting: number;
  /** Server log lines about dropped torn tails and snapshots. */
  storeLog: string[];
  failures: string[];
  /** With a subscriber: notifications of acknowledged writes, distinct ones received, duplicates received. */
  notificationsExpected?: number;
  notificationsReceived?: number;
  notificationDuplicates?: number;
}

interface Sent {
  expectation: Expectation;
  acknowledged: boolean;
  notification?: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** GETs can meet a connection of the previous server process; retry those. */
function retryingTarget(server: ServerProcess): Target {
  return {
    async request(path, init) {
      for (let attempt = 1; ; attempt++) {
        try {
          return await server.request(path, init);
        } catch (err) {
          if (attempt === 3) throw err;
        }
      }
    },
  };
}

async function verify(
  target: Target,
  sent: readonly Sent[],
  concurrency: number,
  report: CrashRunReport,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < sent.length) {
      const { expectation, acknowledged } = sent[next++];
      const result = await expectation.check(target, acknowledged);
      if (result.problem) report.failures.push(result.problem);
      if (!acknowledged && result.present) report.unansweredPresent += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The store's log line for a completed snapshot. */
export const SNAPSHOT_WRITTEN = /^snapshot \d+ written/;
const SNAPSHOT_WAIT_MS = 30_000;

/** Resolves once `server` has logged a completed snapshot, or after SNAPSHOT_WAIT_MS. */
async function snapshotWritten(server: ServerProcess): Promise<void> {
  const until = Date.now() + SNAPSHOT_WAIT_MS;
  while (!server.log.some((line) => SNAPSHOT_WRITTEN.test(line)) && Date.now() < until) await sleep(20);
}

/** Posts writes as fast as `concurrency` allows until the server is SIGKILLed: after a random time, or once `killAfter` resolves. */
async function writeUntilKilled(
  server: ServerProcess,
  state: WorkloadState,
  seq: { next: number },
  options: CrashRunOptions,
  killAfter: Promise<void>,
  report: CrashRunReport,
): Promise<Sent[]> {
  const sent: Sent[] = [];
  let killed = false;
  const kill = killAfter.then(() => {
    killed = true;
    return server.stop('SIGKILL');
  });
  const worker = async () => {
    while (!killed) {
      const operation = pickOperation();
      const write = operation.prepare(seq.next++, state);
      if (!write) {
        await sleep(1); // nothing to act on yet: let the writes that create it go on
        continue;
      }
      let res: Response;
      try {
        res = await write.send(server);
      } catch {
        sent.push({ expectation: write.expectation, acknowledged: false });
        return;
      }
      if (res.status === write.acknowledgedBy) {
        sent.push({ expectation: write.expectation, acknowledged: true, notification: write.notification });
        report.acknowledgedByKind[operation.kind] = (report.acknowledgedByKind[operation.kind] ?? 0) + 1;
        write.onAcknowledged?.();
      } else {
        report.failures.push(
          `${write.expectation.label}: answered ${res.status} ${(await res.text().catch(() => '')).slice(0, 300)}`,
        );
      }
      await res.body?.cancel().catch(() => {});
    }
  };
  await Promise.all([kill, ...Array.from({ length: options.concurrency }, worker)]);
  return sent;
}

const STORE_LOG = /dropped|snapshot .*written|snapshot failed|revision archive|memory image/;
/** The log line of a start from a memory image, and of one from the image a snapshot wrote (no journal in it). */
export const IMAGE_READ = /memory image of snapshot \S+ .*read in/;
export const SNAPSHOT_IMAGE_READ = /memory image of snapshot \d+ \(\d+ MiB\) read in/;

/** The log line of a memory image written on a clean stop. */
const IMAGE_WRITTEN = /memory image of \d+ quads written in/;

/**
 * SIGTERM, after which the process must have exited 0 and written its memory image: a clean stop
 * that ended otherwise is a failure of its own, and would leave the next start without an image.
 */
async function stopCleanly(server: ServerProcess, report: CrashRunReport, which: string): Promise<void> {
  await server.stop('SIGTERM');
  const { code, signal } = server.exit;
  if (code !== 0 || !server.log.some((line) => IMAGE_WRITTEN.test(line))) {
    report.failures.push(
      `${which} ended with ${signal ?? `exit code ${code}`}${code === 0 ? ' but wrote no memory image' : ''}; its last log lines:\n${server.log.slice(-20).join('\n')}`,
    );
  }
}

/**
 * Rounds of: start the server (sometimes killing it while it starts), check the writes of the
 * round before and a sample of older ones, write as fast as possible, SIGKILL at a random moment.
 * At the end every acknowledged write is checked, then again after a clean stop (SIGTERM) and start.
 */
export async function runCrashRounds(options: CrashRunOptions): Promise<CrashRunReport> {
  const report: CrashRunReport = {
    rounds: 0,
    acknowledged: 0,
    acknowledgedByKind: {},
    unanswered: 0,
    unansweredPresent: 0,
    killsWhileStarting: 0,
    storeLog: [],
    failures: [],
  };
  const state: WorkloadState = {
    runId: randomBytes(4).toString('hex'),
    objectsPrefix: `http://127.0.0.1:${options.port}/logistics-objects/`,
    objects: [],
    changeable: new Map(),
    delegations: [],
  };
  const seq = { next: 0 };
  const acknowledged: Sent[] = [];
  let unchecked: Sent[] = [];
  /** Runs `use` with a fresh server process, which is SIGKILLed afterwards unless `use` stopped it. */
  const withServer = async (use: (server: ServerProcess) => Promise<void>) => {
    const server = new ServerProcess({
      dataDir: options.dataDir,
      port: options.port,
      snapshotAfterBytes: options.snapshotAfterBytes,
      // Its stores are small: images at any size, so that rounds start from them (the images are
      // what this checks), with a smaller reserve free, as an image reads and writes the whole memory.
      config: {
        store: { memoryImageMinQuads: 0, memoryReserveBytes: 16 * 2 ** 20 },
        ...(options.subscriber ? publisherConfig(options.subscriber) : {}),
      },
    });
    try {
      await use(server);
    } finally {
      await server.stop('SIGKILL');
      report.storeLog.push(...server.log.filter((line) => STORE_LOG.test(line)));
    }
  };

  const { subscriber } = options;
  if (subscriber) {
    await withServer(async (server) => {
      await server.ready;
      await subscribeToEverything(server, subscriber);
      await stopCleanly(server, report, 'the clean stop after subscribing');
    });
  }

  for (let round = 1; round <= options.rounds && report.failures.length === 0; round++) {
    report.rounds = round;
    if (options.imageRoundEvery && round % options.imageRoundEvery === 0) {
      await withServer(async (server) => {
        await server.ready;
        await stopCleanly(server, report, `the clean stop before round ${round}`);
      });
    }
    await withServer(async (server) => {
      if (Math.random() < options.killWhileStartingShare) {
        await sleep(randomInt(0, 700));
        report.killsWhileStarting += 1;
        return;
      }
      await server.ready;
      const target = retryingTarget(server);
      const older = Array.from(
        { length: Math.min(options.sampleOlder, acknowledged.length) },
        () => acknowledged[randomInt(acknowledged.length)],
      );
      await verify(target, [...unchecked, ...older], options.concurrency, report);
      const killAfter =
        round % options.snapshotRoundEvery === 0 ? snapshotWritten(server) : sleep(randomInt(10, options.maxWriteMs));
      const sent = await writeUntilKilled(server, state, seq, options, killAfter, report);
      unchecked = sent;
      for (const s of sent) {
        if (s.acknowledged) acknowledged.push(s);
        else report.unanswered += 1;
      }
      report.acknowledged = acknowledged.length;
      options.progress?.(
        `round ${round}: ${sent.filter((s) => s.acknowledged).length} acknowledged, ${sent.filter((s) => !s.acknowledged).length} unanswered`,
      );
    });
  }

  for (let run = 0; run < 2; run++) {
    await withServer(async (server) => {
      await server.ready;
      await verify(retryingTarget(server), [...unchecked, ...acknowledged], options.concurrency, report);
      unchecked = [];
      await stopCleanly(server, report, `the clean stop after final check ${run + 1}`);
    });
  }
  if (subscriber) {
    await withServer(async (server) => {
      await server.ready;
      if (!(await outboxDrained(retryingTarget(server), 60_000)))
        report.failures.push('the outbox was not empty a minute after the last restart');
      await stopCleanly(server, report, 'the clean stop after the outbox drained');
    });
    checkNotifications(
      subscriber,
      acknowledged.flatMap((s) => (s.notification ? [s.notification] : [])),
      report,
    );
  }
  return report;
}
