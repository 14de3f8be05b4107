import { expect } from 'chai';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { literal, namedNode, quad, quadToNq, type Quad } from '../src/rdf/terms.js';
import { CARGO, rdf, store as bookkeeping } from '../src/rdf/vocab.js';
import { ARCHIVE_DIR } from '../src/store/embedded/archive/archive.js';
import type { DurableStore } from '../src/store/embedded/durable-store.js';
import { exportDataDirectory } from '../src/store/embedded/export/export.js';
import { eventQuads, type EventRecord } from '../src/store/schema/events.js';
import { createObject, eventJson, postEvent } from './support/events.js';
import { TEST_STORE_BACKEND, startTestServer } from './support/server.js';
import { openStore, tempDir } from './support/store-data.js';

const OBJECT = 'https://store.example.com/logistics-objects/o1';
const AGENT = 'https://store.example.com/logistics-objects/holder';

/** Event n of OBJECT: its metadata and its graph's triples. */
function event(n: number): { record: EventRecord; triples: Quad[] } {
  const iri = `${OBJECT}/logistics-events/e${n}`;
  const record: EventRecord = {
    iri,
    object: OBJECT,
    sequence: n,
    recordedAt: new Date(Date.UTC(2026, 0, 1, 0, n)),
    creationDate: Date.UTC(2025, 11, n),
    eventDate: Date.UTC(2025, 10, n),
    createdBy: AGENT,
    codes: n % 2 === 0 ? ['DEP'] : [],
  };
  const s = namedNode(iri);
  const g = namedNode(iri);
  const triples = [
    quad(s, namedNode(rdf.type), namedNode(`${CARGO}LogisticsEvent`), g),
    quad(s, namedNode(`${CARGO}eventName`), literal(`event "${n}" é 🚚`), g),
  ];
  return { record, triples };
}

/** Writes events as LogisticsEvents does (`legacy`: without the domain event, so they stay hot, as older data did). */
async function append(store: DurableStore, ns: number[], legacy = false): Promise<void> {
  for (const n of ns) {
    const { record, triples } = event(n);
    const tx = store.begin({ insert: [...triples, ...eventQuads(record)] });
    if (!legacy) tx.events.push({ kind: 'event-appended', event: record });
    await store.commit(tx);
  }
}

const hotEventGraphs = (store: DurableStore) =>
  store.index.listGraphs().filter((g) => g.includes('/logistics-events/'));
const sortedLines = (quads: readonly Quad[]) => quads.map(quadToNq).sort();

async function expectArchived(store: DurableStore, ns: number[]): Promise<void> {
  expect(hotEventGraphs(store)).to.deep.equal([]);
  expect(store.index.graphNTriples(bookkeeping.eventsGraph)).to.equal('');
  expect(await store.logisticsEvents.ofObject(OBJECT)).to.deep.equal(ns.map((n) => event(n).record));
  expect(await store.logisticsEvents.lastSequence()).to.equal(Math.max(...ns));
  expect(await store.logisticsEvents.postedBy(AGENT)).to.have.length(ns.length);
  const [first] = await store.logisticsEvents.withIris([event(ns[0]).record.iri, `${OBJECT}/logistics-events/none`]);
  expect(first).to.deep.equal(event(ns[0]).record);
  for (const n of ns) {
    const { record, triples } = event(n);
    expect(sortedLines(await store.graphTriples(record.iri))).to.deep.equal(
      sortedLines(triples.map((t) => quad(t.subject, t.predicate, t.object))),
    );
  }
}

describe('Logistics Events in the archive (embedded store)', () => {
  before(function () {
    if (TEST_STORE_BACKEND !== 'embedded') this.skip();
  });

  it('are never in the hot store: the archive answers, after a restart and rebuilt from the journal', async () => {
    const { dir, remove } = await tempDir();
    try {
      let { store } = await openStore(dir);
      await append(store, [1, 2, 3]);
      await expectArchived(store, [1, 2, 3]);
      await store.close();
      ({ store } = await openStore(dir));
      await expectArchived(store, [1, 2, 3]);
      await store.close();
      // The archive is derived from the journal: without it, a start writes it again.
      await rm(join(dir, ARCHIVE_DIR), { recursive: true });
      ({ store } = await openStore(dir));
      await expectArchived(store, [1, 2, 3]);
      await store.close();
    } finally {
      await remove();
    }
  });

  it('an older layout: events the hot store holds move to the archive once, and export writes them', async () => {
    const { dir, remove } = await tempDir();
    try {
      let opened = await openStore(dir);
      await append(opened.store, [1, 2], true);
      expect(hotEventGraphs(opened.store)).to.have.length(2);
      await opened.store.close();
      opened = await openStore(dir);
      expect(opened.log.some((line) => line.includes('2 moved out of the hot store'))).to.equal(true);
      await append(opened.store, [3]);
      await expectArchived(opened.store, [1, 2, 3]);
      await opened.store.close();
      opened = await openStore(dir);
      expect(opened.log.some((line) => line.includes('moved out of the hot store'))).to.equal(false);
      await expectArchived(opened.store, [1, 2, 3]);
      await opened.store.close();
      const out = join(dir, 'export.nq');
      await exportDataDirectory(dir, out);
      const exported = new Set((await readFile(out, 'utf8')).split('\n'));
      for (const n of [1, 2, 3]) {
        const { record, triples } = event(n);
        for (const line of [...triples, ...eventQuads(record)].map(quadToNq))
          expect(exported.has(line.trimEnd()), line).to.equal(true);
      }
    } finally {
      await remove();
    }
  });

  it('the API, cache of one event: single events, 409 on a stored id, arrival order across a restart', async () => {
    const server = await startTestServer({ cache: { events: 1 } });
    try {
      const [a, b] = [await createObject(server), await createObject(server)];
      const body = (id: string, code: string) => ({ ...eventJson({ code }), '@id': id });
      const post = async (object: string, id: string, code = 'DEP') =>
        (await postEvent(server, object, body(`${object}/logistics-events/${id}`, code))).status;
      for (const [object, id] of [
        [a, 'a1'],
        [b, 'b1'],
        [a, 'a2'],
      ])
        expect(await post(object, id)).to.equal(201);
      const store = server.running.store as DurableStore;
      expect(hotEventGraphs(store)).to.deep.equal([]);
      await server.stop();
      await server.restart();
      expect(await post(a, 'a1', 'ARR')).to.equal(409);
      expect(await post(a, 'a3', 'ARR')).to.equal(201);
      const res = await server.request(`${a}/logistics-events/a2`);
      expect(res.status).to.equal(200);
      expect(await res.text()).to.include('a2');
      const list = await server.request(`${a}/logistics-events`, { headers: { Accept: 'application/ld+json' } });
      const items = JSON.stringify(await list.json());
      const order = ['a1', 'a2', 'a3'].map((id) => items.indexOf(`${a}/logistics-events/${id}`));
      expect(
        order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1])),
        items,
      ).to.equal(true);
      expect(items).to.not.include(`${b}/logistics-events/b1`);
    } finally {
      await server.close();
    }
  });
});
