import { blankNode, iriToNt, namedNode, quad, termToNt, type Quad, type RDF } from '../../rdf/terms.js';
import { xsd } from '../../rdf/vocab.js';
import { Claims } from '../claims.js';
import { CommitStream } from '../commit-stream.js';
import type { GraphStore } from '../graph-store.js';
import type { SparqlJsonResults } from '../readers.js';
import { actionRequestFromTriples, type ActionRequestRecord } from '../schema/action-requests.js';
import { revisionGraph, type RevisionRecord } from '../schema/revisions.js';
import { storedDomainEvents } from '../schema/stored-events.js';
import { WriteTransaction } from '../transaction.js';
import { EngineNotifications } from './engine-notifications.js';
import { readCreatedAndLatestRevisions, readFinishedRequests, readRevision } from './engine-layout.js';
import { updateText } from './update-text.js';
import { fromEngine, toEngine } from './engine-literals.js';

/** What the store needs of a SPARQL 1.1 engine (SparqlClient: the Protocol over HTTP). */
export interface SparqlEngine {
  select(query: string): Promise<SparqlJsonResults>;
  update(text: string): Promise<string>;
}

type Binding = SparqlJsonResults['results']['bindings'][number];
type BoundTerm = Binding[string];

/** A term of SPARQL JSON results as an RDF term. */
function termOf(b: BoundTerm): RDF.Term {
  if (b.type === 'uri') return namedNode(b.value);
  if (b.type === 'bnode') return blankNode(b.value);
  return fromEngine(b.value, b.datatype, b['xml:lang']);
}

/**
 * The store on a SPARQL 1.1 engine (`store.backend: sparql`): every commit is one Update request,
 * which the engine applies atomically and keeps in its own transaction log (the durability: no
 * journal here); every read is a query. The claims of writes in flight and the after-commit stream
 * are this process's, as with the embedded store.
 */
export class SparqlEngineStore implements GraphStore {
  readonly claims = new Claims();
  readonly committed = new CommitStream();
  readonly receivedNotifications: EngineNotifications;
  private closed = false;

  constructor(private readonly engine: SparqlEngine) {
    this.receivedNotifications = new EngineNotifications(this, (graphs) => this.engine.update(graphs.map((g) => `DROP SILENT GRAPH ${iriToNt(g)}`).join(' ;\n')).then(() => undefined));
  }

  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return new WriteTransaction(this.claims, quads);
  }

  /** One Update request; once the engine acknowledged it, the events are published and the claims released, in one tick. */
  async commit(tx: WriteTransaction): Promise<void> {
    try {
      if (this.closed) throw new Error('the store is closed');
      const text = updateText(tx);
      if (text) await this.engine.update(text);
      this.committed.publish(tx.events);
    } finally {
      tx.release();
    }
  }

  async select(sparql: string): Promise<SparqlJsonResults> {
    return this.engine.select(sparql);
  }

  async graphTriples(graph: string): Promise<Quad[]> {
    const rows = await this.engine.select(`SELECT ?s ?p ?o WHERE { GRAPH ${iriToNt(graph)} { ?s ?p ?o } }`);
    return rows.results.bindings.map((b) => quad(termOf(b.s) as Quad['subject'], termOf(b.p) as Quad['predicate'], termOf(b.o) as Quad['object']));
  }

  revision(object: string, number: number): Promise<RevisionRecord | undefined> {
    return readRevision(this, revisionGraph(object, number));
  }

  /** Read from its graph: a request the index does not hold is finished, or unknown. */
  async finishedRequest(iri: string): Promise<ActionRequestRecord | undefined> {
    return actionRequestFromTriples(iri, await this.graphTriples(iri));
  }

  finishedRequests(object?: string): Promise<ActionRequestRecord[]> {
    return readFinishedRequests(this, object);
  }

  /** As the engine keeps them: what a VALUES clause gives back is what a stored literal reads as. */
  async canonicalLiterals(literals: readonly RDF.Literal[]): Promise<RDF.Literal[]> {
    const out = [...literals];
    const asked = out.map((l, i) => [l, i] as const).filter(([l]) => l.datatype.value !== xsd.string || l.language !== '');
    if (asked.length === 0) return out;
    const rows = await this.engine.select(`SELECT ?i ?v WHERE { VALUES (?i ?v) { ${asked.map(([l, i]) => `(${i} ${termToNt(toEngine(l))})`).join(' ')} } }`);
    for (const b of rows.results.bindings) out[Number(b.i.value)] = termOf(b.v) as RDF.Literal;
    return out;
  }

  /** Publishes the domain events that rebuild what consumers keep, from what the engine holds: once, at start. */
  async publishStored(): Promise<void> {
    this.committed.publish(await storedDomainEvents(this, await readCreatedAndLatestRevisions(this)));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
