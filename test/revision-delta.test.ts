import { expect } from 'chai';
import { literal, namedNode, quad, tripleToNt, type Quad } from '../src/rdf/terms.js';
import { revisionDelta } from '../src/store/revision-delta.js';
import type { RevisionRecord } from '../src/store/schema/revisions.js';

const OBJECT = 'http://delta.test/logistics-objects/a';
const triple = (p: string, o: string) => quad(namedNode(OBJECT), namedNode(`http://delta.test/${p}`), literal(o));
const revision = (number: number) => ({ object: OBJECT, number }) as RevisionRecord;
const asText = (quads: readonly Quad[]) => quads.map(tripleToNt);

describe('revisionDelta: how a new revision changes its object graph, for both backends', () => {
  it('compares the two revisions as N-Triples when the writer gives no account of the change', () => {
    const kept = triple('kept', 'same object');
    const before = [kept, triple('weight', '10'), triple('name', 'equal text')];
    const after = [kept, triple('weight', '12'), triple('name', 'equal text'), triple('extra', 'x')];
    const delta = revisionDelta({ revision: revision(1), triples: before }, after);
    expect(asText(delta.added)).to.deep.equal(asText([triple('weight', '12'), triple('extra', 'x')]));
    expect(asText(delta.removed)).to.deep.equal(asText([triple('weight', '10')]));
  });

  it("takes the writer's own account as it is, without comparing the revisions", () => {
    const added = [triple('weight', '12')];
    const removed = [triple('weight', '10')];
    const delta = revisionDelta({ revision: revision(1), triples: [triple('other', 'o')], added, removed }, []);
    expect(delta.added).to.equal(added);
    expect(delta.removed).to.equal(removed);
  });
});
