import { iriToNt, literal, namedNode, quad, quadToNq, termToNt, type Quad, type RDF } from '../../rdf/terms.js';
import { STORE, xsd } from '../../rdf/vocab.js';
import { finishedQuad } from '../schema/finished-graphs.js';
import { engineLatestQuads, latestGraph, revisionQuads } from '../schema/revisions.js';
import type { WriteTransaction } from '../transaction.js';
import type { FeedEntryParts } from './commit-feed.js';
import { toEngine } from './engine-literals.js';
import { entryOf } from '../../map-entry.js';
import { revisionDelta } from '../revision-delta.js';
import { toRevisionSubjects } from '../schema/revision-subjects.js';

/*
 * One write as SPARQL 1.1 Update text. A write that takes its feed entry's position from the engine or removes whole
 * graphs is ONE operation, `DELETE { … } INSERT { … } WHERE { … }` (`updateOperation`): Virtuoso applies one
 * operation as a whole when it fails, and its WHERE joins the commit's intent (only while its process may send it)
 * and matches the graphs removed (`removedGraphPatterns`) in branches of a UNION beside an empty branch, so the
 * constants are written once whatever those graphs hold (and also when they hold nothing). Any other is `INSERT DATA`
 * then `DELETE DATA` (`dataOperations`), half the engine's CPU. Either is completed from its intent when a dropped
 * connection cuts it (docs/sparql-engine.md, "Known limits"). A quad both deleted and inserted ends up present, as in
 * the embedded store.
 */

/** Datatypes whose literals Virtuoso keeps apart as constants of one template (with language-tagged strings). */
const TEMPLATE_CONSTANTS = new Set<string>([xsd.string, xsd.dateTime, xsd.anyURI]);

/**
 * How the literals of an operation's templates are written: Virtuoso 7.2 folds equal-valued constants
 * of one template into one (a boolean true stored as the positiveInteger 1) and keeps an xsd:long as an
 * xsd:integer, while INSERT DATA and values bound in the WHERE clause keep theirs. So every other typed
 * literal is a variable in the template, bound once by STRDT in the WHERE clause.
 */
class TemplateLiterals {
  private readonly variables = new Map<string, string>();
  private readonly bound: string[] = [];

  term(l: RDF.Literal): string {
    const constant = termToNt(l);
    if (l.language || TEMPLATE_CONSTANTS.has(l.datatype.value)) return constant;
    let variable = this.variables.get(constant);
    if (!variable) {
      variable = `?literal${this.variables.size}`;
      this.variables.set(constant, variable);
      this.bound.push(`BIND (STRDT (${termToNt(literal(l.value))}, ${iriToNt(l.datatype.value)}) AS ${variable})`);
    }
    return variable;
  }

  /** The BINDs of the WHERE clause. */
  binds(): string {
    return this.bound.join(' ');
  }
}

/** Literals as constants: for INSERT DATA, where they are kept apart. */
const constants = { term: (l: RDF.Literal) => termToNt(l) };

/** The quads as the body of a template (or of INSERT DATA): grouped by graph. */
function template(
  quads: readonly Quad[],
  literals: Pick<TemplateLiterals, 'term'>,
  graphPatterns: readonly string[] = [],
): string {
  const byGraph = new Map<string, string[]>();
  for (const q of quads) {
    const graph = q.graph.termType === 'NamedNode' ? q.graph.value : '';
    const object = q.object.termType === 'Literal' ? literals.term(toEngine(q.object)) : termToNt(q.object);
    entryOf(byGraph, graph, () => []).push(`${termToNt(q.subject)} ${termToNt(q.predicate)} ${object} .`);
  }
  const parts: string[] = [];
  for (const [graph, lines] of byGraph)
    parts.push(graph === '' ? lines.join('\n') : `GRAPH ${iriToNt(graph)} {\n${lines.join('\n')}\n}`);
  return [...parts, ...graphPatterns].join('\n');
}

/**
 * What each new revision writes: its metadata (every revision's is kept), the object's mark and record of its latest
 * revision (`latestOf`), its triples in its own graph with its embedded nodes named as its own (revision-subjects.ts),
 * and the object's graph (`latestGraph`, as in the embedded store) changed in place.
 */
function revisionWrites(tx: WriteTransaction): { insert: Quad[]; delete: Quad[] } {
  const insert: Quad[] = [];
  const remove: Quad[] = [];
  for (const { revision, triples, replaces } of tx.revisions) {
    insert.push(
      ...revisionQuads(revision),
      ...engineLatestQuads(revision),
      ...inGraph(toRevisionSubjects(triples, revision.graph), revision.graph),
    );
    const latest = latestGraph(revision.object);
    if (!replaces) {
      insert.push(...inGraph(triples, latest));
      continue;
    }
    remove.push(...engineLatestQuads(replaces.revision));
    const { added, removed } = revisionDelta(replaces, triples);
    insert.push(...inGraph(added, latest));
    remove.push(...inGraph(removed, latest));
  }
  return { insert, delete: remove };
}

function inGraph(triples: readonly Quad[], graph: string): Quad[] {
  const g = namedNode(graph);
  return triples.map((t) => quad(t.subject, t.predicate, t.object, g));
}

/**
 * Graphs named in one VALUES block. Virtuoso compiles a pattern per graph into SQL it caps at 10,000 lines (about 100
 * graphs) and a VALUES block of 5,000 names is refused; a block of 1,000 passes.
 */
const REMOVED_PER_BLOCK = 1000;

/**
 * The patterns matching every quad of `graphs`: the DELETE template's part and the WHERE clause's UNION branches, one
 * per block of REMOVED_PER_BLOCK graphs, so an operation's text stays within what Virtuoso compiles however many
 * graphs it removes.
 */
function removedGraphPatterns(graphs: readonly string[]): { template: string[]; branches: string[] } {
  const template: string[] = [];
  const branches: string[] = [];
  for (let from = 0, k = 0; from < graphs.length; from += REMOVED_PER_BLOCK, k++) {
    const names = graphs.slice(from, from + REMOVED_PER_BLOCK).map(iriToNt);
    const pattern = `GRAPH ?rg${k} { ?rs${k} ?rp${k} ?ro${k} }`;
    template.push(pattern);
    branches.push(`{ VALUES ?rg${k} { ${names.join(' ')} } ${pattern} }`);
  }
  return { template, branches };
}

/**
 * The operation deleting `remove`, every quad of `removedGraphs` and inserting `insert`, and writing
 * `feed` (the commit's feed entry, bound in the branch that is otherwise empty); empty when it does nothing.
 */
export function updateOperation(
  remove: readonly Quad[],
  insert: readonly Quad[],
  removedGraphs: readonly string[] = [],
  feed?: FeedEntryParts,
): string {
  if (remove.length === 0 && insert.length === 0 && removedGraphs.length === 0 && !feed) return '';
  const removed = removedGraphPatterns(removedGraphs);
  const first = feed?.branch ?? '{}';
  const branches = removed.branches.length === 0 ? first : `{ ${[first, ...removed.branches].join(' UNION ')} }`;
  const literals = new TemplateLiterals();
  const deleted =
    remove.length > 0 || removed.template.length > 0
      ? `DELETE {\n${template(remove, literals, removed.template)}\n}\n`
      : '';
  const inserted =
    insert.length > 0 || feed ? `INSERT {\n${[template(insert, literals), feed?.template ?? ''].join('\n')}\n}\n` : '';
  const binds = literals.binds();
  const gate = feed?.gate ?? '';
  return `${deleted}${inserted}WHERE ${binds || gate ? `{ ${gate} ${binds} ${branches} }` : branches}`;
}

/**
 * A write that neither removes whole graphs nor writes a feed entry as constants: `INSERT DATA`, then `DELETE DATA`
 * of what it removes and does not insert again (so a quad both removed and inserted ends up present, as in
 * `updateOperation`). Virtuoso compiles a template operation, at a cost that grows with its quads, and takes data as
 * it comes: a PATCH's write costs it about half the CPU so (docs/sparql-engine.md, "Write cost"). Two operations in
 * one request: the engine rolls a deadlocked request back whole, a cut one is completed from its intent like any, and
 * sent again it changes nothing more. Empty when it does nothing.
 */
export function dataOperations(write: EngineWrite): string {
  const inserted = new Set(write.insert.map(quadToNq));
  const removed = write.remove.filter((q) => !inserted.has(quadToNq(q)));
  return [
    ...(write.insert.length > 0 ? [`INSERT DATA {\n${template(write.insert, constants)}\n}`] : []),
    ...(removed.length > 0 ? [`DELETE DATA {\n${template(removed, constants)}\n}`] : []),
  ].join(' ;\n');
}

/**
 * A write that tells other processes of itself by its feed entry, in two parts: `ahead`, the graphs it creates for
 * good (`EngineWrite.created`) by `INSERT DATA`, sent first in a request of its own; then `rest` with the feed entry
 * (`updateOperation`). Virtuoso shows the quads of an operation to other requests as it writes them, not once it
 * ends, so a process that learns of the commit from its feed entry then finds those graphs whole
 * (docs/sparql-engine.md, "What the engine guarantees"). Sent again, `ahead` changes nothing more; `rest` joins the
 * intent as any commit's operation does.
 */
export function feedOperations(write: EngineWrite, feed: FeedEntryParts): { ahead: string; rest: string } {
  const created = write.insert.filter((q) => write.created.has(q.graph.value));
  const others = write.insert.filter((q) => !write.created.has(q.graph.value));
  return {
    ahead: created.length > 0 ? `INSERT DATA {\n${template(created, constants)}\n}` : '',
    rest: updateOperation(write.remove, others, write.removedGraphs, feed),
  };
}

/** What a commit does to the engine's quads. */
export interface EngineWrite {
  remove: Quad[];
  insert: Quad[];
  removedGraphs: readonly string[];
  /** The graphs it creates, which no later write changes: new revisions' and new Logistics Events'. */
  created: ReadonlySet<string>;
}

export function engineWrite(tx: WriteTransaction): EngineWrite {
  const revisions = revisionWrites(tx);
  return {
    remove: [...tx.delete, ...revisions.delete],
    insert: [...tx.insert, ...revisions.insert, ...tx.finished.map(finishedQuad)],
    removedGraphs: tx.removedGraphs,
    created: new Set([
      ...tx.revisions.map((r) => r.revision.graph),
      ...tx.events.flatMap((e) => (e.kind === 'event-appended' ? [e.event.iri] : [])),
    ]),
  };
}

/**
 * Up to this many quads a write is one operation with its quads as constants. Virtuoso compiles an
 * operation into SQL of at most 10,000 lines: 800 constant quads pass, 1,500 do not.
 */
export const INLINE_QUADS = 500;

/** Quads staged per request (four triples each; Virtuoso takes fewer than 5,000 triples in one INSERT DATA). */
const STAGED_PER_REQUEST = 200;

export const STAGED_SUBJECT = `${STORE}staged-subject`;

const staged = {
  subject: STAGED_SUBJECT,
  predicate: `${STORE}staged-predicate`,
  object: `${STORE}staged-object`,
  graph: `${STORE}staged-graph`,
};

/** Where the staged parts of write `id` wait: graphs nobody reads, removed by the operation that applies them. */
export const stagingGraph = (id: string, part: 'insert' | 'delete') => `${STORE}staging:${id}:${part}`;

/**
 * A write too large for one operation: its quads go first, in as many requests as it takes, to two
 * staging graphs as descriptions (subject, predicate, object, graph), then ONE operation applies
 * them, whatever their number (its text does not grow with them); the staging graphs are removed
 * after it. Until that operation, nothing of the write is in the graphs that are read; if it never
 * comes (a crash), the staging graphs are left over, and removed at the next start.
 */
export function stagedWrite(write: EngineWrite, id: string, feed?: FeedEntryParts): { stage: string[]; apply: string } {
  const stage: string[] = [];
  for (const part of ['insert', 'delete'] as const) {
    const quads = part === 'insert' ? write.insert : write.remove;
    const graph = namedNode(stagingGraph(id, part));
    for (let from = 0; from < quads.length; from += STAGED_PER_REQUEST) {
      const described = quads.slice(from, from + STAGED_PER_REQUEST).flatMap((q, k) => {
        const node = namedNode(`${STORE}staged:${id}:${part}:${from + k}`);
        return [
          quad(node, namedNode(staged.subject), q.subject, graph),
          quad(node, namedNode(staged.predicate), q.predicate, graph),
          quad(node, namedNode(staged.object), q.object, graph),
          // Every quad the store writes is in a named graph.
          quad(node, namedNode(staged.graph), q.graph as Quad['object'], graph),
        ];
      });
      stage.push(`INSERT DATA {\n${template(described, constants)}\n}`);
    }
  }
  const [ins, del] = [iriToNt(stagingGraph(id, 'insert')), iriToNt(stagingGraph(id, 'delete'))];
  const describedAs = (prefix: string) =>
    `?${prefix}q ${iriToNt(staged.subject)} ?${prefix}s ; ${iriToNt(staged.predicate)} ?${prefix}p ; ` +
    `${iriToNt(staged.object)} ?${prefix}o ; ${iriToNt(staged.graph)} ?${prefix}g`;
  const removed = removedGraphPatterns(write.removedGraphs);
  const branches = [
    `{ GRAPH ${del} { ${describedAs('d')} } }`,
    `{ GRAPH ${ins} { ${describedAs('i')} } }`,
    ...removed.branches,
    ...(feed ? [feed.branch] : []),
  ];
  // The staging graphs stay: sent again, the operation must find them (they go once it is applied).
  const apply = `DELETE {
GRAPH ?dg { ?ds ?dp ?do }
${removed.template.join('\n')}
}
INSERT { GRAPH ?ig { ?is ?ip ?io } ${feed?.template ?? ''} }
WHERE { ${feed?.gate ?? ''} ${branches.join(' UNION ')} }`;
  return { stage, apply };
}
