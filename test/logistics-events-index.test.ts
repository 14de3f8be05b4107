import { expect } from 'chai';
import { parseXsdDateTime } from '../src/domain/events/event-body.js';
import { EventIndex, codeKeys, type EventRecord } from '../src/domain/events/event-index.js';
import { CODE_LISTS } from '../src/rdf/vocab.js';
import { Claims } from '../src/store/claims.js';
import { eventRecordsFromRows, type EventRow } from '../src/store/schema/events.js';
import { WriteTransaction } from '../src/store/transaction.js';
import type { StoredEvents } from '../src/store/graph-store.js';

const DEP = `${CODE_LISTS}StatusCode#DEP`;

function record(sequence: number, fields: Partial<EventRecord> = {}): EventRecord {
  return {
    iri: `urn:e:${sequence}`,
    object: 'urn:o:1',
    sequence,
    recordedAt: new Date(0),
    creationDate: 0,
    eventDate: 0,
    createdBy: 'urn:agent',
    codes: [],
    ...fields,
  };
}

const appended = (event: EventRecord) => ({ kind: 'event-appended' as const, event });

/** StoredEvents over `records`, counting reads of objects; `hold` keeps the next read waiting until it is let go. */
function storeOf(records: EventRecord[]) {
  let gate: Promise<void> | undefined;
  const store = {
    records,
    reads: 0,
    hold(): () => void {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return release;
    },
    async ofObject(object: string) {
      store.reads++;
      const answer = records.filter((r) => r.object === object);
      await gate;
      gate = undefined;
      return answer;
    },
    withIris: async (iris: readonly string[]) => records.filter((r) => iris.includes(r.iri)),
    postedBy: async (agent: string) => records.filter((r) => r.createdBy === agent),
    lastSequence: async () => Math.max(0, ...records.map((r) => r.sequence)),
  } satisfies StoredEvents & Record<string, unknown>;
  return store;
}

describe('Logistics Events: index and date parsing', () => {
  it('xsd:dateTime: zones, fractions, no zone as UTC; impossible dates refused', () => {
    expect(parseXsdDateTime('2024-05-01T10:00:00Z')).to.equal(Date.UTC(2024, 4, 1, 10));
    expect(parseXsdDateTime('2024-05-01T12:00:00+02:00')).to.equal(Date.UTC(2024, 4, 1, 10));
    expect(parseXsdDateTime('2024-05-01T10:00:00.1234-00:30')).to.equal(Date.UTC(2024, 4, 1, 10, 30, 0, 123));
    expect(parseXsdDateTime('2024-05-01T10:00:00')).to.equal(Date.UTC(2024, 4, 1, 10));
    expect(parseXsdDateTime('0050-01-01T00:00:00Z')).to.equal(new Date('0050-01-01T00:00:00Z').getTime());
    for (const bad of [
      '2024-02-30T00:00:00Z',
      '2023-02-29T00:00:00Z',
      '2024-05-01T24:00:00Z',
      '2024-05-01T10:60:00Z',
      '2024-05-01',
      '2024-05-01T10:00:00+15:00',
      '20240501T100000Z',
      '',
    ]) {
      expect(parseXsdDateTime(bad), bad).to.equal(undefined);
    }
    expect(parseXsdDateTime('2024-02-29T00:00:00Z')).to.equal(Date.UTC(2024, 1, 29));
  });

  it('a code-list IRI answers to itself, its short code and the "/" spelling; a short code only to itself', () => {
    expect([...codeKeys(DEP)]).to.have.members([DEP, 'DEP', `${CODE_LISTS}StatusCode/DEP`]);
    expect([...codeKeys('DEP')]).to.deep.equal(['DEP']);
  });

  it('keeps arrival order even when commits land out of order, and sorts ties by arrival', async () => {
    const index = await EventIndex.open(storeOf([record(2, { creationDate: 5 })]), 100);
    const order = async (sort?: 'ASC-creationDate' | 'DESC-creationDate') =>
      (await index.select('urn:o:1', { sort, skip: 0, limit: 10 })).events.map((r) => r.sequence);
    expect(await order()).to.deep.equal([2]);
    index.onCommitted([appended(record(1, { creationDate: 5 })), appended(record(3, { creationDate: 1 }))]);
    expect(await order()).to.deep.equal([1, 2, 3]);
    expect(await order('ASC-creationDate')).to.deep.equal([3, 1, 2]);
    expect(await order('DESC-creationDate')).to.deep.equal([2, 1, 3]);
    expect(index.claimSequence()).to.equal(4);
  });

  it('reads from the store: one record per event with all its codes, numbers continue after the highest', async () => {
    const row = (event: string, sequence: number, code?: string): EventRow => ({
      event,
      object: 'urn:o:1',
      sequence,
      recordedAt: '2024-01-01T00:00:00Z',
      creationDate: '2024-01-01T00:00:00Z',
      eventDate: '2024-01-02T00:00:00Z',
      createdBy: 'urn:agent',
      code,
    });
    const stored = eventRecordsFromRows([row('urn:e:b', 7, DEP), row('urn:e:a', 3), row('urn:e:b', 7, 'XYZ')]);
    const index = await EventIndex.open(storeOf(stored), 100);
    expect(index.claimSequence()).to.equal(8);
    expect((await index.withIris(['urn:e:b']))[0].codes).to.have.members([DEP, 'XYZ']);
    const iris = async (codes?: string[]) =>
      (await index.select('urn:o:1', { codes, skip: 0, limit: 10 })).events.map((r) => r.iri);
    expect(await iris(['XYZ'])).to.deep.equal(['urn:e:b']);
    expect(
      (await index.select('urn:o:1', { codes: [`${CODE_LISTS}StatusCode/DEP`], skip: 0, limit: 10 })).total,
    ).to.equal(1);
    expect(await iris()).to.deep.equal(['urn:e:a', 'urn:e:b']);
    expect(index.cachedEvents).to.equal(2);
  });

  it('holds at most its budget of events, reading the others again; one committed during a read is kept', async () => {
    const store = storeOf([record(1), record(2, { object: 'urn:o:2' })]);
    const index = await EventIndex.open(store, 1);
    const list = async (object: string) =>
      (await index.select(object, { skip: 0, limit: 10 })).events.map((r) => r.sequence);
    expect(await list('urn:o:1')).to.deep.equal([1]);
    expect(await list('urn:o:2')).to.deep.equal([2]);
    expect(index.cachedEvents).to.equal(1);
    expect(await list('urn:o:1')).to.deep.equal([1]);
    expect(store.reads).to.equal(3);
    // An event committed while its object's events are read, missing from the store's answer: still listed, once.
    const gate = store.hold();
    const reading = list('urn:o:2');
    const late = record(3, { object: 'urn:o:2' });
    store.records.push(late);
    index.onCommitted([appended(late), appended(late)]);
    gate();
    expect(await reading).to.deep.equal([2, 3]);
    // The same, in the store's answer too: listed once.
    const both = record(4);
    store.records.push(both);
    const again = store.hold();
    const rereading = list('urn:o:1');
    index.onCommitted([appended(both)]);
    again();
    expect(await rereading).to.deep.equal([1, 4]);
  });

  it('reservations make an id taken until released', () => {
    const claims = new Claims();
    const [first, second] = [new WriteTransaction(claims), new WriteTransaction(claims)];
    expect(first.claim('urn:e:x')).to.equal(true);
    expect(claims.isHeld('urn:e:x')).to.equal(true);
    expect(second.claim('urn:e:x')).to.equal(false);
    first.release();
    expect(claims.isHeld('urn:e:x')).to.equal(false);
  });
});
