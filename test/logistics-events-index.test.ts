import { expect } from 'chai';
import { parseXsdDateTime } from '../src/domain/events/event-body.js';
import { EventIndex, codeKeys, type EventRecord } from '../src/domain/events/event-index.js';
import { CODE_LISTS } from '../src/rdf/vocab.js';
import { Claims } from '../src/store/claims.js';
import { eventRecordsFromRows, type EventRow } from '../src/store/schema/events.js';
import { WriteTransaction } from '../src/store/transaction.js';

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

  it('keeps arrival order even when commits land out of order, and sorts ties by arrival', () => {
    const index = new EventIndex();
    index.add(record(2, { creationDate: 5 }));
    index.add(record(1, { creationDate: 5 }));
    index.add(record(3, { creationDate: 1 }));
    const order = (sort?: 'ASC-creationDate' | 'DESC-creationDate') =>
      index.select('urn:o:1', { sort, skip: 0, limit: 10 }).events.map((r) => r.sequence);
    expect(order()).to.deep.equal([1, 2, 3]);
    expect(order('ASC-creationDate')).to.deep.equal([3, 1, 2]);
    expect(order('DESC-creationDate')).to.deep.equal([2, 1, 3]);
    expect(index.claimSequence()).to.equal(4);
  });

  it('rebuilds from metadata rows: one record per event with all its codes, sequence continues after the highest', () => {
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
    const index = new EventIndex();
    index.onCommitted(
      eventRecordsFromRows([row('urn:e:b', 7, DEP), row('urn:e:a', 3), row('urn:e:b', 7, 'XYZ')]).map((event) => ({
        kind: 'event-appended',
        event,
      })),
    );
    expect(index.size).to.equal(2);
    expect(index.get('urn:e:b')!.codes).to.have.members([DEP, 'XYZ']);
    expect(index.select('urn:o:1', { codes: ['XYZ'], skip: 0, limit: 10 }).events.map((r) => r.iri)).to.deep.equal([
      'urn:e:b',
    ]);
    expect(index.select('urn:o:1', { codes: [`${CODE_LISTS}StatusCode/DEP`], skip: 0, limit: 10 }).total).to.equal(1);
    expect(index.select('urn:o:1', { skip: 0, limit: 10 }).events.map((r) => r.iri)).to.deep.equal([
      'urn:e:a',
      'urn:e:b',
    ]);
    expect(index.claimSequence()).to.equal(8);
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
