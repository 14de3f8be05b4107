import { expect } from 'chai';
import { literal, namedNode, quad } from '../src/rdf/terms.js';
import { revisionGraph } from '../src/store/schema/revisions.js';
import { SparqlClient } from '../src/store/sparql-engine/sparql-client.js';
import { SparqlEngineStore } from '../src/store/sparql-engine/sparql-engine-store.js';
import { engineClientOptions, leaseEngine, releaseEngine } from './support/virtuoso.js';

// A process alone on the engine sends the operations of commits made at once in shared requests (a request's own cost
// is much of Virtuoso's: docs/sparql-engine.md, "Write cost"), large ones such as a PATCH's too.

const LEASE = 'engine-write-batches';
const CARGO = 'https://onerecord.iata.org/ns/cargo#';

describe('operations of commits made at once on an engine of one process', function () {
  this.timeout(60_000);
  after(() => releaseEngine(LEASE));

  it('share update requests, those of ~12,000 characters too; each commit is applied whole', async () => {
    const engine = await leaseEngine(LEASE);
    const sent: string[] = [];
    class RecordingClient extends SparqlClient {
      override update(text: string): Promise<string> {
        sent.push(text);
        return super.update(text);
      }
    }
    const store = new SparqlEngineStore(new RecordingClient(engineClientOptions(engine)));
    const objects = Array.from({ length: 8 }, (_, i) => `https://example.org/logistics-objects/batched-${i}`);
    const marks = (object: string) =>
      Array.from({ length: 100 }, (_, m) =>
        quad(namedNode(object), namedNode(`${CARGO}shippingMarks`), literal(`${object} mark ${m}`)),
      );
    await Promise.all(
      objects.map((object) => {
        const tx = store.begin();
        const revision = {
          object,
          number: 1,
          graph: revisionGraph(object, 1),
          createdAt: new Date(),
          createdBy: 'https://example.org/agent',
          mostSpecificType: `${CARGO}Piece`,
        };
        tx.revisions.push({ revision, triples: marks(object) });
        tx.events.push({ kind: 'object-created', revision });
        return store.commit(tx);
      }),
    );

    const operations = sent.filter((text) => text.includes('shippingMarks'));
    const longest = Math.max(...operations.flatMap((text) => text.split(' ;\n').map((part) => part.length)));
    expect(longest, 'one commit’s operation').to.be.greaterThan(8_000);
    const shared = operations.filter((text) => objects.filter((object) => text.includes(`<${object}>`)).length > 1);
    expect(shared, 'requests carrying several commits’ operations').to.not.deep.equal([]);
    for (const object of objects) {
      expect(await store.graphTriples(object)).to.have.length(100);
      expect(await store.graphTriples(revisionGraph(object, 1))).to.have.length(100);
    }
    await store.close();
  });
});
