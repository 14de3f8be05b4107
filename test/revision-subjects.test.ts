import { expect } from 'chai';
import fc from 'fast-check';
import { literal, namedNode, quad, tripleToNt, type Quad } from '../src/rdf/terms.js';
import { revisionGraph } from '../src/store/schema/revisions.js';
import { fromRevisionSubjects, toRevisionSubjects } from '../src/store/schema/revision-subjects.js';

const OBJECT = 'https://subjects.test/logistics-objects/a';
const GRAPH = revisionGraph(OBJECT, 3);
const asText = (quads: readonly Quad[]) => quads.map(tripleToNt);

/**
 * The IRIs an object's triples use: the object, its embedded nodes, an outside IRI (a node a client named), other
 * objects, and IRIs that look like revisions' embedded nodes (written by hand: the API gives `internal:` ids itself).
 */
const subjects = fc.constantFrom(
  OBJECT,
  'internal:1f0b',
  'internal:2c9d',
  'https://elsewhere.test/node',
  'internal:1f0b?revision=3',
  `${OBJECT}?revision=2`,
);
const values = fc.oneof(
  subjects,
  fc.constantFrom(
    'https://subjects.test/logistics-objects/b',
    'https://subjects.test/logistics-objects/b?revision=3',
    'internal:2c9d?revision=3',
    'internal:2c9d?revision=3?revision=3',
    'https://elsewhere.test/node?revision=3',
  ),
  fc.string({ maxLength: 3 }).map((text) => `"${text}`),
);
const triples = fc.array(
  fc
    .tuple(subjects, fc.constantFrom('p', 'q'), values)
    .map(([s, p, o]) =>
      quad(
        namedNode(s),
        namedNode(`https://subjects.test/${p}`),
        o.startsWith('"') ? literal(o.slice(1)) : namedNode(o),
      ),
    ),
  { maxLength: 12 },
);

describe('revision subjects: how a revision graph names its embedded nodes in an engine', () => {
  it('reads back every revision exactly as the domain wrote it', () => {
    fc.assert(
      fc.property(triples, (written) => {
        const stored = toRevisionSubjects(written, GRAPH);
        expect(asText(fromRevisionSubjects([...stored], GRAPH))).to.deep.equal(asText(written));
      }),
    );
  });

  it("writes each embedded node, subject or linked, as the revision's own; the object and other IRIs as they are", () => {
    const node = 'internal:1f0b';
    const written = [
      quad(namedNode(OBJECT), namedNode('https://subjects.test/part'), namedNode(node)),
      quad(namedNode(OBJECT), namedNode('https://subjects.test/other'), namedNode('https://elsewhere.test/o')),
      quad(namedNode(node), namedNode('https://subjects.test/weight'), literal('12')),
    ];
    expect(asText(toRevisionSubjects(written, GRAPH))).to.deep.equal([
      `<${OBJECT}> <https://subjects.test/part> <${node}?revision=3> .\n`,
      `<${OBJECT}> <https://subjects.test/other> <https://elsewhere.test/o> .\n`,
      `<${node}?revision=3> <https://subjects.test/weight> "12" .\n`,
    ]);
  });

  it('reads a graph of the layout before (its embedded nodes as written) and any other graph as they are', () => {
    const written = [
      quad(namedNode(OBJECT), namedNode('https://subjects.test/part'), namedNode('internal:1f0b')),
      quad(namedNode('internal:1f0b'), namedNode('https://subjects.test/weight'), literal('12')),
    ];
    expect(fromRevisionSubjects(written, GRAPH)).to.equal(written);
    const stored = [...toRevisionSubjects(written, GRAPH)];
    expect(fromRevisionSubjects(stored, OBJECT)).to.equal(stored);
    expect(toRevisionSubjects(written, OBJECT)).to.equal(written);
  });
});
