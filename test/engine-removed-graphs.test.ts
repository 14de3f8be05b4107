import { expect } from 'chai';
import { literal, namedNode, quad } from '../src/rdf/terms.js';
import { parseEvents, readFeed } from '../src/store/sparql-engine/commit-feed.js';
import { SparqlClient } from '../src/store/sparql-engine/sparql-client.js';
import { SparqlEngineStore } from '../src/store/sparql-engine/sparql-engine-store.js';
import { INLINE_QUADS } from '../src/store/sparql-engine/update-text.js';
import { engineClientOptions, leaseEngine, releaseEngine } from './support/virtuoso.js';

// A commit may remove thousands of graphs at once (outbox entries removed by a delivery catching up after a restart):
// Virtuoso refused an operation naming more than about 100 of them, and the commit failed at every retry.

const LEASE = 'engine-removed-graphs';
const COUNT = 2500;
const graph = (i: number) => `https://example.org/removed-graphs/entry-${i}`;
const note = namedNode('https://example.org/note');

describe('a commit removing 2,500 graphs on the engine', function () {
  this.timeout(120_000);
  after(() => releaseEngine(LEASE));

  for (const shared of [false, true])
    for (const staged of [false, true])
      it(`is applied whole${shared ? ' with its feed entry (several processes)' : ''}${staged ? ', its quads staged' : ''}: every graph gone, its own quads written`, async () => {
        const engine = await leaseEngine(LEASE);
        const client = new SparqlClient(engineClientOptions(engine));
        const store = new SparqlEngineStore(
          client,
          shared ? { pollMs: 20, gapWaitMs: 300, retentionMs: 60_000, deadAfterMs: 60_000, log: () => {} } : undefined,
        );
        if (shared) await store.publishStored();
        for (let from = 0; from < COUNT; from += 500) {
          const data = Array.from(
            { length: 500 },
            (_, k) => `GRAPH <${graph(from + k)}> { <${graph(from + k)}#s> <${note.value}> "entry ${from + k}" }`,
          );
          await client.update(`INSERT DATA { ${data.join('\n')} }`);
        }
        const kept = 'https://example.org/removed-graphs/kept';
        const tx = store.begin();
        tx.removedGraphs.push(...Array.from({ length: COUNT }, (_, i) => graph(i)));
        const written = staged ? INLINE_QUADS + 1 : 3;
        for (let i = 0; i < written; i++)
          tx.insert.push(quad(namedNode(`${kept}#${i}`), note, literal(`kept ${i}`), namedNode(kept)));
        tx.events.push({ kind: 'outbox-compacted', through: COUNT });
        await store.commit(tx);

        const left = await client.select(
          `SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s <${note.value}> ?o } FILTER (STRSTARTS(STR(?g), "${graph(0).slice(0, -1)}")) }`,
        );
        expect(Number(left.results.bindings[0].n.value), 'quads left in the removed graphs').to.equal(0);
        expect(await store.graphTriples(kept)).to.have.length(written);
        if (shared) {
          const told = (await readFeed(client, -1, [], 1000)).flatMap((e) => parseEvents(e.events));
          expect(told, 'the feed entry').to.deep.include({ kind: 'outbox-compacted', through: COUNT });
        }
        await store.close();
        await client.update(`CLEAR GRAPH <${kept}>`);
      });
});
