import { expect } from 'chai';
import { namedNode, quad, literal, type Quad } from '../src/rdf/terms.js';
import { backoffMs, retryAfterMs } from '../src/domain/pubsub/retry-timing.js';
import { changedProperties, statusEventType } from '../src/domain/pubsub/outbox.js';
import type { ActionRequestRecord } from '../src/store/schema/action-requests.js';

const API = 'https://onerecord.iata.org/ns/api#';
const CARGO = 'https://onerecord.iata.org/ns/cargo#';
const O = 'http://localhost/logistics-objects/o1';
const t = (s: string, p: string, o: string, isLiteral = false): Quad =>
  quad(namedNode(s), namedNode(`${CARGO}${p}`), isLiteral ? literal(o) : namedNode(o));

describe('notification rules', () => {
  it('hasChangedProperty: top-level properties whose values changed, a change in an embedded (or deeper) node counted for the property that holds it', () => {
    const before = [
      t(O, 'goodsDescription', 'Books', true),
      t(O, 'grossWeight', 'internal:w'),
      t('internal:w', 'numericalValue', '20', true),
      t(O, 'dimensions', 'internal:d'),
      t('internal:d', 'length', 'internal:l'),
      t('internal:l', 'numericalValue', '1', true),
    ];
    const after = [
      t(O, 'goodsDescription', 'Books', true),
      t(O, 'grossWeight', 'internal:w'),
      t('internal:w', 'numericalValue', '25', true),
      t(O, 'dimensions', 'internal:d'),
      t('internal:d', 'length', 'internal:l'),
      t('internal:l', 'numericalValue', '2', true),
      t(O, 'shippingMarks', 'X', true),
    ];
    expect(changedProperties(O, before, after)).to.deep.equal([
      `${CARGO}dimensions`,
      `${CARGO}grossWeight`,
      `${CARGO}shippingMarks`,
    ]);
    expect(changedProperties(O, before, before)).to.deep.equal([]);
    expect(
      changedProperties(
        O,
        before,
        before.filter((q) => q.predicate.value !== `${CARGO}goodsDescription`),
      ),
    ).to.deep.equal([`${CARGO}goodsDescription`]);
  });

  it('status notification types follow the request type and status', () => {
    const request = (type: string) => ({ type: `${API}${type}` }) as ActionRequestRecord;
    expect(statusEventType(request('ChangeRequest'), `${API}REQUEST_ACCEPTED`)).to.equal(
      `${API}CHANGE_REQUEST_ACCEPTED`,
    );
    expect(statusEventType(request('AccessDelegationRequest'), `${API}REQUEST_REVOKED`)).to.equal(
      `${API}ACCESS_DELEGATION_REQUEST_REVOKED`,
    );
    expect(statusEventType(request('SubscriptionRequest'), `${API}REQUEST_PENDING`)).to.equal(
      `${API}SUBSCRIPTION_REQUEST_PENDING`,
    );
  });

  it('backoff: full jitter below min(cap, initial × 2^(attempt - 1)); Retry-After in seconds or as an HTTP date', () => {
    const options = { initialBackoffMs: 1000, maxBackoffMs: 3_600_000 };
    expect(backoffMs(1, options, () => 0.999999)).to.equal(999);
    expect(backoffMs(4, options, () => 0.5)).to.equal(4000);
    expect(backoffMs(30, options, () => 0.999999)).to.equal(3_599_996);
    expect(backoffMs(3, options, () => 0)).to.equal(0);
    expect(retryAfterMs('7')).to.equal(7000);
    expect(retryAfterMs(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1))).to.equal(10_000);
    expect(retryAfterMs('soon')).to.equal(undefined);
    expect(retryAfterMs(undefined)).to.equal(undefined);
  });
});
