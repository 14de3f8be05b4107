import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { iriToNt, literal, termToNt } from '../../rdf/terms.js';
import { STORE } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';
import type { CommitCondition } from './commit-conditions.js';

export const INTENTS_GRAPH = `${STORE}commit-intents`;
/** An intent's operation as written by an earlier build: its text as it is. */
const INTENDED_UPDATE = `${STORE}intendedUpdate`;
/** An intent's operation, its text deflated (RFC 1951) and in base64. */
const INTENDED_UPDATE_DEFLATED = `${STORE}intendedUpdateDeflated`;
/** A revision graph an intent's operation writes (`intentsNaming`). */
const WRITES_GRAPH = `${STORE}writesGraph`;
const CLAIMED_BY = `${STORE}claimedBy`;
const COMPLETED_BY = `${STORE}completedBy`;
/** A row of an intent while its own process may send its operation: a completer removes it before sending. */
const SENDABLE_BY_OWNER = `${STORE}sendableByOwner`;
const SLOT_PREFIX = `${STORE}slot:`;

/** The subject that stands for a slot among the claims: every claim of one slot is a row of it. */
const slotIri = (key: string) => `${SLOT_PREFIX}${encodeURIComponent(key)}`;

/** The graph pattern that matches while an intent (bound to ?claimant) claims the slot `key`. */
export const claimedPattern = (key: string, claimant = '?claimant') =>
  `GRAPH ${iriToNt(INTENTS_GRAPH)} { ${iriToNt(slotIri(key))} ${iriToNt(CLAIMED_BY)} ${claimant} }`;

/** The highest number `n` of the slots `{prefix}{n}` that an intent claims; 0 if none. */
export async function highestClaimedNumber(reader: SparqlReader, prefix: string): Promise<number> {
  const slots = termToNt(literal(slotIri(prefix)));
  const rows = await reader.select(
    `SELECT (MAX(?n) AS ?highest) WHERE { GRAPH ${iriToNt(INTENTS_GRAPH)} { ?slot ${iriToNt(CLAIMED_BY)} ?intent } ` +
      `FILTER (STRSTARTS(STR(?slot), ${slots})) BIND ` +
      `(<http://www.w3.org/2001/XMLSchema#integer>(STRAFTER(STR(?slot), ${slots})) AS ?n) }`,
  );
  return Number(rows.results.bindings[0]?.highest?.value ?? 0);
}

const PROCESS_PREFIX = `${STORE}commit:`;

/** The process an intent is of (`CommitIntents.process`), and when that process started (its clock). */
export function processOf(intent: string): { process: string; startedAt: number } {
  const process = intent.slice(0, intent.lastIndexOf('-') + 1);
  return { process, startedAt: Number(process.slice(PROCESS_PREFIX.length, PROCESS_PREFIX.length + 15)) };
}

/** The intent of one commit: the update operation that applies it, stored before that operation is sent. */
export interface CommitIntent {
  iri: string;
  update: string;
  /** The graphs of the new revisions it writes. */
  graphs?: readonly string[];
}

/**
 * The pattern binding `variable` to the stored text of `intent` (a term or a variable), however it is stored. An
 * operation's text compresses to about a sixth: Virtuoso's cost of storing a literal grows with its length.
 */
const storedText = (intent: string, variable: string) =>
  `VALUES ?textKind { ${iriToNt(INTENDED_UPDATE_DEFLATED)} ${iriToNt(INTENDED_UPDATE)} } ` +
  `${intent} ?textKind ${variable}`;

const textOf = (stored: string, kind: string) =>
  kind === INTENDED_UPDATE_DEFLATED ? inflateRawSync(Buffer.from(stored, 'base64')).toString() : stored;

/** Intents of applied commits are removed this many at a time, in an operation of their own. */
export const INTENTS_REMOVED_TOGETHER = 200;

/**
 * Virtuoso keeps part of an operation whose caller's connection drops, so every commit first stores its operation's
 * text as one quad (applied whole or not at all), then sends it. Sending again is harmless, so a lost answer is
 * sent again and a start sends the stored intents again, oldest first; intents of applied commits are removed in
 * batches (docs/sparql-engine.md, "How the server uses the engine").
 */
export class CommitIntents {
  /**
   * This process's name, which its intents start with (ordering them after those of earlier
   * processes, and among themselves): `{STORE}commit:{start time, ms}-{uuid}-`.
   */
  readonly process = `${PROCESS_PREFIX}${Date.now().toString().padStart(15, '0')}-${randomUUID()}-`;
  private sequence = 0;
  /** Intents of commits known to be applied, not yet removed. */
  private applied: string[] = [];

  /** The name of the next commit's intent. */
  nextIri(): string {
    return `${this.process}${String(++this.sequence).padStart(12, '0')}`;
  }

  /** Whether `iri` names an intent of this process. */
  isOwn(iri: string): boolean {
    return iri.startsWith(this.process);
  }

  /**
   * The operation storing `intent`. With `conditions`, it stores it only if every slot is empty and
   * claimed by no other stored intent, and the intent claims them (until it is removed: a slot once
   * filled stays filled). An INSERT-only operation guarded on the graph it writes: the one form that
   * Virtuoso isolates (docs/sparql-engine.md, "What the engine guarantees"); whether it was stored
   * is read back (`isStored`). With `unapplied` (the pattern of its commit's feed entry), it stores nothing once
   * the commit is applied: sent again after a lost answer by a process that was taken for dead meanwhile, it must
   * not store an intent that its operation would then apply a second time.
   */
  recording(intent: CommitIntent, conditions: readonly CommitCondition[] = [], unapplied?: string): string {
    const graph = iriToNt(INTENTS_GRAPH);
    const deflated = deflateRawSync(intent.update, { level: 1 }).toString('base64');
    const stored =
      `${iriToNt(intent.iri)} ${iriToNt(INTENDED_UPDATE_DEFLATED)} ${termToNt(literal(deflated))} ; ` +
      `${iriToNt(SENDABLE_BY_OWNER)} ${iriToNt(this.process)}` +
      (intent.graphs ?? []).map((graph) => ` ; ${iriToNt(WRITES_GRAPH)} ${iriToNt(graph)}`).join('');
    if (conditions.length === 0 && !unapplied) return `INSERT DATA { GRAPH ${graph} { ${stored} } }`;
    const notApplied = unapplied ? `FILTER NOT EXISTS { ${unapplied} }` : '';
    // A claim is a row of its slot's subject: of two intents claiming one slot at once, Virtuoso
    // stores one, where rows of the intent (`<intent> claims "slot"`) could both be stored.
    const claims = conditions.map((c) => `${iriToNt(slotIri(c.key))} ${iriToNt(CLAIMED_BY)} ${iriToNt(intent.iri)}`);
    const unclaimed = conditions.map((c, i) => `FILTER NOT EXISTS { ${claimedPattern(c.key, `?claimant${i}`)} }`);
    const empty = conditions.map((c) => `FILTER NOT EXISTS { ${c.filled} }`);
    return `INSERT { GRAPH ${graph} { ${[stored, ...claims].join(' . ')} } }
WHERE { VALUES ?guard { 1 } ${unclaimed.join(' ')} ${empty.join(' ')} ${notApplied} }`;
  }

  /** The commit of `intent` is applied. */
  settled(intent: CommitIntent): void {
    this.applied.push(intent.iri);
  }

  /**
   * Once enough intents of applied commits gathered: them, taken out of the list (`restore` them if removing them
   * fails).
   */
  removable(): string[] | undefined {
    return this.applied.length < INTENTS_REMOVED_TOGETHER ? undefined : this.takeApplied();
  }

  /** Every intent of an applied commit not yet removed, taken out of the list. */
  takeApplied(): string[] {
    return this.applied.splice(0, this.applied.length);
  }

  restore(iris: readonly string[]): void {
    this.applied.push(...iris);
  }
}

/**
 * The operation by which the process `completer` claims the completion of another process's stored
 * `intent`: stored only while the intent is stored and no process claims it. A row of the intent,
 * as a slot's claim is a row of its slot: of two such claims at once, Virtuoso stores one. Removed
 * with the intent (`intentsRemoval`).
 */
export function completionClaim(intent: string, completer: string): string {
  const g = iriToNt(INTENTS_GRAPH);
  const i = iriToNt(intent);
  return `INSERT { GRAPH ${g} { ${i} ${iriToNt(COMPLETED_BY)} ${iriToNt(completer)} } }
WHERE { GRAPH ${g} { ${storedText(i, '?update')} }
  FILTER NOT EXISTS { GRAPH ${g} { ${i} ${iriToNt(COMPLETED_BY)} ?completer } } }`;
}

/**
 * The pattern a commit's operation joins when its own process sends it: it changes nothing once a completer took
 * the intent over (`takenOver`), or once the intent is removed.
 */
export const ownerGate = (intent: string) =>
  `GRAPH ${iriToNt(INTENTS_GRAPH)} { ${iriToNt(intent)} ${iriToNt(SENDABLE_BY_OWNER)} ?owner }`;

/**
 * The operation by which `completer`, holding the claim on `intent`, takes it from its process: after it, the
 * owner's operation (a process paused, not dead) changes nothing, so only the completer's is applied.
 */
export function takenOver(intent: string): string {
  const g = iriToNt(INTENTS_GRAPH);
  const i = iriToNt(intent);
  return `DELETE { GRAPH ${g} { ${i} ${iriToNt(SENDABLE_BY_OWNER)} ?owner } } WHERE { ${ownerGate(intent)} }`;
}

/**
 * The stored operation of `intent` as `completer` sends it: joining its claim instead of the owner's row. An
 * intent stored by an earlier build, without that row, joins its stored text: sent as it is.
 */
export function asCompleter(update: string, intent: string, completer: string): string {
  const claim = `${iriToNt(intent)} ${iriToNt(COMPLETED_BY)} ${iriToNt(completer)}`;
  const claimed = `GRAPH ${iriToNt(INTENTS_GRAPH)} { ${claim} }`;
  return update.replace(ownerGate(intent), () => claimed);
}

/** The operation removing the claim of `completer` (taken for dead) on completing `intent`. */
export function completionClaimRemoval(intent: string, completer: string): string {
  return (
    `DELETE DATA { GRAPH ${iriToNt(INTENTS_GRAPH)} { ${iriToNt(intent)} ${iriToNt(COMPLETED_BY)} ` +
    `${iriToNt(completer)} } }`
  );
}

/** The process that claims the completion of `intent`, if one does. */
export async function completerOf(reader: SparqlReader, intent: string): Promise<string | undefined> {
  const rows = await reader.select(
    `SELECT ?completer WHERE { GRAPH ${iriToNt(INTENTS_GRAPH)} { ${iriToNt(intent)} ${iriToNt(COMPLETED_BY)} ` +
      `?completer } } LIMIT 1`,
  );
  return rows.results.bindings[0]?.completer?.value;
}

/**
 * The operations removing the intents `iris` (matched by name: their texts need not be sent back):
 * their texts, and their claims; one operation per kind of row, in one request.
 */
export function intentsRemoval(iris: readonly string[]): string {
  const g = iriToNt(INTENTS_GRAPH);
  const selected = `VALUES ?intent { ${iris.map(iriToNt).join(' ')} }`;
  return [`?intent ?p ?o`, `?slot ${iriToNt(CLAIMED_BY)} ?intent`]
    .map((row) => `DELETE { GRAPH ${g} { ${row} } } WHERE { ${selected} GRAPH ${g} { ${row} } }`)
    .join(' ;\n');
}

/**
 * Whether an engine's answer to a guarded recording says it stored something: Virtuoso counts what
 * each operation did ("Insert into <…>, 3 (or less) triples -- done"). Any other answer (nothing
 * stored, another engine's) is checked by reading the intent back (`isStored`).
 */
export const reportsInsert = (answer: string): boolean =>
  /Insert into <[^>]*>, [1-9][0-9]* \(or less\) triples -- done/.test(answer);

/**
 * Whether an engine's answer to operations says the `WHERE` of one of them matched nothing, so it changed nothing:
 * Virtuoso counts the solutions of each template ("Insert into <…>, 0 triples -- nothing to do", "Modify <…>,
 * delete 0 (or less) and insert 0 (or less) triples"). Another engine's answer says nothing of it: false.
 */
export function reportsUnmatched(answer: string): boolean {
  return /\b0 (?:\(or less\) )?(?:triples|quads)|(?:delete|insert) 0 \(or less\)/.test(answer);
}

/**
 * The engine's answer to several operations sent in one request, one line per operation, when each writes one graph
 * (so Virtuoso answers one line for it): undefined when the answer does not read so.
 */
export function answerLines(answer: string, operations: number): string[] | undefined {
  try {
    const results = JSON.parse(answer) as { results?: { bindings?: Record<string, { value?: string }>[] } };
    const value = Object.values(results.results?.bindings?.[0] ?? {})[0]?.value ?? '';
    const lines = value.split('\n').filter((line) => /-- (done|nothing to do)$/.test(line) && !/^Commit\b/.test(line));
    return lines.length === operations ? lines : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `intent` is stored: its guarded recording stores nothing when a condition fails. */
export async function isStored(reader: SparqlReader, intent: CommitIntent): Promise<boolean> {
  return (await storedIntentNames(reader, [intent.iri])).size > 0;
}

/** The first of `conditions` that another writer filled or claims (of `intent`, which failed them). */
export async function failedCondition(
  reader: SparqlReader,
  conditions: readonly CommitCondition[],
  intent: CommitIntent,
): Promise<CommitCondition | undefined> {
  for (const condition of conditions) {
    const claimedByOther = `${claimedPattern(condition.key)} FILTER (?claimant != ${iriToNt(intent.iri)})`;
    const rows = await reader.select(
      `SELECT ?found WHERE { { ${condition.filled} BIND (1 AS ?found) } UNION { ${claimedByOther} BIND (2 AS ?found) ` +
        `} } LIMIT 1`,
    );
    if (rows.results.bindings.length > 0) return condition;
  }
  return undefined;
}

/**
 * The names of the stored intents (of those `among`, when given), without their texts; told by
 * their text or one of their claims: a row of a long literal may come back without it (docs/sparql-engine.md).
 */
export async function storedIntentNames(reader: SparqlReader, among?: readonly string[]): Promise<Set<string>> {
  const g = iriToNt(INTENTS_GRAPH);
  const values = among ? `VALUES ?intent { ${among.map(iriToNt).join(' ')} } ` : '';
  const rows = await reader.select(
    `SELECT DISTINCT ?intent WHERE { ${values}GRAPH ${g} { { ${storedText('?intent', '?update')} } UNION { ` +
      `?slot ${iriToNt(CLAIMED_BY)} ?intent } UNION { ?intent ${iriToNt(SENDABLE_BY_OWNER)} ?owner } } }`,
  );
  return new Set(rows.results.bindings.filter((b) => b.intent).map((b) => b.intent.value));
}

/** The stored intents whose operation writes the revision graph `graph` (a write cut off before it wrote it, say). */
export async function intentsNaming(reader: SparqlReader, graph: string): Promise<Set<string>> {
  const rows = await reader.select(
    `SELECT DISTINCT ?intent WHERE { GRAPH ${iriToNt(INTENTS_GRAPH)} { ?intent ${iriToNt(WRITES_GRAPH)} ` +
      `${iriToNt(graph)} } }`,
  );
  return new Set(rows.results.bindings.filter((b) => b.intent).map((b) => b.intent.value));
}

/** Every stored intent, oldest first. */
export async function storedIntents(reader: SparqlReader): Promise<CommitIntent[]> {
  const rows = await reader.select(
    `SELECT ?intent ?update ?textKind WHERE { GRAPH ${iriToNt(INTENTS_GRAPH)} { ${storedText('?intent', '?update')} ` +
      `} } ORDER BY ?intent`,
  );
  // A row without its text: an intent another process removed while it was read (applied).
  return rows.results.bindings
    .filter((b) => b.intent && b.update && b.textKind)
    .map((b) => ({ iri: b.intent.value, update: textOf(b.update.value, b.textKind.value) }));
}
