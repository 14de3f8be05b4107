import { DEFAULTS, loadConfig } from '../../src/config.js';
import type { LogisticsObjects } from '../../src/domain/objects/logistics-objects.js';
import type { GraphStore } from '../../src/store/graph-store.js';
import { parseBody } from '../../src/rdf/parse.js';
import { literal, namedNode, quad, type Quad } from '../../src/rdf/terms.js';
import { API, CARGO, CODE_LISTS, XSD } from '../../src/rdf/vocab.js';

const value = (unit: string, numericalValue: number) => ({
  '@type': 'cargo:Value',
  'cargo:unit': { '@id': `${CODE_LISTS}MeasurementUnitCode#${unit}` },
  'cargo:numericalValue': { '@value': String(numericalValue), '@type': 'xsd:double' },
});

/** A Piece of 40 triples: scalar properties plus embedded weight, dimensions and handling instructions. */
export const BENCH_PIECE = {
  '@context': { cargo: CARGO, xsd: 'http://www.w3.org/2001/XMLSchema#' },
  '@type': 'cargo:Piece',
  'cargo:goodsDescription': 'Books and printed matter',
  'cargo:coload': false,
  'cargo:slac': 3,
  'cargo:upid': 'UPID-000123',
  'cargo:shippingMarks': 'FRAGILE',
  'cargo:stackable': true,
  'cargo:turnable': true,
  'cargo:loadType': { '@id': 'cargo:BULK' },
  'cargo:grossWeight': value('KGM', 20.5),
  'cargo:dimensions': {
    '@type': 'cargo:Dimensions',
    'cargo:height': value('CMT', 40),
    'cargo:length': value('CMT', 60),
    'cargo:width': value('CMT', 30),
  },
  'cargo:handlingInstructions': [0, 1, 2].map((i) => ({
    '@type': 'cargo:HandlingInstructions',
    'cargo:description': `Handle with care, instruction ${i}`,
    'cargo:handlingInstructionsTypeCode': `SPH${i}`,
  })),
};

/** BENCH_PIECE with `count` handling instructions (a link and 3 triples each) instead of 3. */
export const pieceWithInstructions = (count: number) => ({
  ...BENCH_PIECE,
  'cargo:handlingInstructions': Array.from({ length: count }, (_, i) => ({
    '@type': 'cargo:HandlingInstructions',
    'cargo:description': `Handle with care, instruction ${i}`,
    'cargo:handlingInstructionsTypeCode': `SPH${i}`,
  })),
});

/** The objects of the capacity benchmarks (~50 triples): BENCH_PIECE with 6 handling instructions, 52 triples. */
export const CAPACITY_PIECE = pieceWithInstructions(6);

export const benchObject = (): Promise<Quad[]> =>
  parseBody(Buffer.from(JSON.stringify(BENCH_PIECE)), 'jsonld', {
    base: 'http://bench.invalid/',
    limits: DEFAULTS.limits,
  });

/** Adds `count` revisions to an object through the domain write path, each changing one value. */
export async function addRevisions(
  store: GraphStore,
  objects: LogisticsObjects,
  iri: string,
  agent: string,
  count: number,
): Promise<void> {
  const entry = objects.index.get(iri)!;
  const marks = namedNode(`${CARGO}shippingMarks`);
  for (let i = 0; i < count; i++) {
    const previous = await objects.triples(objects.index.latest(entry));
    const added = [quad(namedNode(iri), marks, literal(`mark ${i}`))];
    const triples = [...previous.filter((t) => !t.predicate.equals(marks)), ...added];
    const tx = store.begin();
    objects.addRevision(tx, entry, objects.claimNextRevision(tx, entry)!, triples, agent, {
      previous,
      added,
      removed: previous.filter((t) => t.predicate.equals(marks)),
    });
    await store.commit(tx);
  }
}

/** A Piece whose shipping mark is `mark 1`, for `replaceMarkChange`. */
export function markedPiece(remarks: string): string {
  return JSON.stringify({
    '@context': { cargo: CARGO },
    '@type': 'cargo:Piece',
    'cargo:remarks': remarks,
    'cargo:shippingMarks': 'mark 1',
  });
}

/**
 * A Change (JSON-LD) of revision `revision` of a `markedPiece` that replaces its shipping mark
 * `mark {revision}` by `mark {revision + 1}`: the object keeps its size however often it changes.
 */
export function replaceMarkChange(object: string, revision: number): string {
  const operation = (op: 'ADD' | 'DELETE', mark: number) => ({
    '@type': 'api:Operation',
    'api:op': { '@id': `api:${op}` },
    'api:s': object,
    'api:p': `${CARGO}shippingMarks`,
    'api:o': { '@type': 'api:OperationObject', 'api:hasDatatype': `${XSD}string`, 'api:hasValue': `mark ${mark}` },
  });
  return JSON.stringify({
    '@context': { api: API, xsd: XSD },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': object },
    'api:hasRevision': { '@type': 'xsd:positiveInteger', '@value': String(revision) },
    'api:hasOperation': [operation('DELETE', revision), operation('ADD', revision + 1)],
  });
}

/** One operation of a Change on a string value of a cargo property, as a client sends it in JSON-LD. */
export const stringOperation = (op: 'ADD' | 'DELETE', s: string, p: string, value: string) => ({
  '@type': 'api:Operation',
  'api:op': { '@id': `api:${op}` },
  'api:s': s,
  'api:p': `${CARGO}${p}`,
  'api:o': {
    '@type': 'api:OperationObject',
    'api:hasDatatype': 'http://www.w3.org/2001/XMLSchema#string',
    'api:hasValue': value,
  },
});

/** A Subscription (JSON-LD) of `subscriber` to every Logistics Object's updates (a type topic: one FIFO queue). */
export const everyObjectUpdatedSubscription = (subscriber: string) =>
  JSON.stringify({
    '@context': { api: API },
    '@type': 'api:Subscription',
    'api:hasSubscriber': { '@id': subscriber },
    'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_TYPE' },
    'api:hasTopic': { '@type': `${XSD}anyURI`, '@value': `${CARGO}LogisticsObject` },
    'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
  });

/**
 * A publisher on loopback `port` whose subscriber `subscriber` (an internal agent, so its
 * subscriptions are accepted) is called at `callback`; a subscriber back after downtime is retried
 * within a second, as a deployment would configure it.
 */
export const publisherConfig = (port: number, dataDir: string, subscriber: string, callback: string) =>
  loadConfig(
    {},
    {
      port,
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir,
      internalAgents: [subscriber],
      outbound: { allowPrivateAddresses: true },
      delivery: { callbacks: [{ organization: subscriber, url: callback }], maxBackoffMs: 1000 },
    },
  );

/** A Piece being changed: the values its next Change deletes. */
export interface ChangedPiece {
  iri: string;
  revision: number;
  goods: string;
  upid: string;
  step: number;
}

/** The Piece at `iri` as CAPACITY_PIECE creates it: revision 1, ready for `nextChange`. */
export const createdPiece = (iri: string): ChangedPiece => ({
  iri,
  revision: 1,
  goods: CAPACITY_PIECE['cargo:goodsDescription'],
  upid: CAPACITY_PIECE['cargo:upid'],
  step: 0,
});

/** The next Change of `piece` (JSON-LD): replaces goodsDescription and upid; `grow` adds a shipping mark as the third ADD. */
export function nextChange(piece: ChangedPiece, grow: boolean): string {
  const goods = `goods ${piece.step + 1}`;
  const upid = `UPID-${piece.step + 1}`;
  const operations = [
    stringOperation('DELETE', piece.iri, 'goodsDescription', piece.goods),
    stringOperation('DELETE', piece.iri, 'upid', piece.upid),
    stringOperation('ADD', piece.iri, 'goodsDescription', goods),
    stringOperation('ADD', piece.iri, 'upid', upid),
  ];
  if (grow) operations.push(stringOperation('ADD', piece.iri, 'shippingMarks', `mark ${piece.step + 1}`));
  piece.goods = goods;
  piece.upid = upid;
  piece.step += 1;
  return JSON.stringify({
    '@context': {
      api: 'https://onerecord.iata.org/ns/api#',
      'api:p': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI' },
    },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': piece.iri },
    'api:hasOperation': operations,
    'api:hasRevision': piece.revision,
  });
}

const EVENT_CODES = ['DEP', 'ARR', 'RCS', 'MAN', 'DLV'];

/** The `n`th of a series of events shaped like the official LogisticsEvent example (without eventFor, which the server sets, and without @context). */
export const benchEvent = (n: number) => ({
  '@type': 'cargo:LogisticsEvent',
  'cargo:eventDate': { '@type': `${XSD}dateTime`, '@value': new Date(Date.UTC(2024, 0, 1) + n * 60_000).toISOString() },
  'cargo:eventCode': { '@id': `${CODE_LISTS}StatusCode#${EVENT_CODES[n % EVENT_CODES.length]}` },
  'cargo:eventName': 'Consignment departed on a specific flight',
  'cargo:eventTimeType': { '@id': `${CARGO}ACTUAL` },
  'cargo:partialEventIndicator': false,
});

/** A body within every count but slow in jsonld.js (the fast reader leaves it to it): a type-scoped context applied to `nodes` nodes. */
export function typeScopedNodes(nodes: number): Record<string, unknown> {
  const context: Record<string, unknown> = { cargo: CARGO, Typed: { '@id': `${CARGO}Value`, '@context': {} } };
  for (let i = 0; i < 100; i++) context[`t${i}`] = `http://x.example/${i}`;
  return {
    '@context': context,
    '@type': 'cargo:Piece',
    'cargo:x': Array.from({ length: nodes }, () => ({ '@type': 'Typed', t1: 'y' })),
  };
}
