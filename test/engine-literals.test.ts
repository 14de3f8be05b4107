import { expect } from 'chai';
import { literal, namedNode, quad, termToNt } from '../src/rdf/terms.js';
import { revisionGraph } from '../src/store/schema/revisions.js';
import { SparqlClient } from '../src/store/sparql-engine/sparql-client.js';
import { SparqlEngineStore } from '../src/store/sparql-engine/sparql-engine-store.js';
import { engineClientOptions, leaseEngine, releaseEngine } from './support/virtuoso.js';

// Literals of many datatypes written by one commit (one operation) come back from Virtuoso as
// written: it folds equal-valued constants of one template into one (a positiveInteger 1 and a
// boolean true), which the server's operations avoid (src/store/sparql-engine/update-text.ts).

const LEASE = 'engine-literals';
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const OBJECT = 'https://example.org/logistics-objects/literals';

describe('literals on the engine backend', function () {
  this.timeout(60_000);
  after(() => releaseEngine(LEASE));

  it('one commit holding equal values of several datatypes keeps each literal as it was written', async () => {
    const engine = await leaseEngine(LEASE);
    const store = new SparqlEngineStore(new SparqlClient(engineClientOptions(engine)));
    const values = [
      ['1', 'positiveInteger'],
      ['true', 'boolean'],
      ['1', 'nonNegativeInteger'],
      ['1', 'integer'],
      ['5', 'long'],
      ['2', 'positiveInteger'],
      ['2', 'nonNegativeInteger'],
      ['false', 'boolean'],
      ['0', 'integer'],
      ['1.5', 'double'],
      ['1.5', 'decimal'],
      ['P1M', 'duration'],
      ['2024-05-01T10:00:00Z', 'dateTime'],
      ['1', 'string'],
    ];
    const triples = values.map(([value, type], i) =>
      quad(namedNode(OBJECT), namedNode(`https://example.org/p${i}`), literal(value, namedNode(`${XSD}${type}`))),
    );
    const tx = store.begin();
    const revision = {
      object: OBJECT,
      number: 1,
      graph: revisionGraph(OBJECT, 1),
      createdAt: new Date(),
      createdBy: 'https://example.org/agent',
      mostSpecificType: 'https://onerecord.iata.org/ns/cargo#Piece',
    };
    tx.revisions.push({ revision, triples });
    tx.events.push({ kind: 'object-created', revision });
    await store.commit(tx);
    for (const graph of [OBJECT, revisionGraph(OBJECT, 1)]) {
      const read = (await store.graphTriples(graph)).map((t) => `${t.predicate.value} ${termToNt(t.object)}`).sort();
      expect(read, graph).to.deep.equal(triples.map((t) => `${t.predicate.value} ${termToNt(t.object)}`).sort());
    }
    await store.close();
  });
});
