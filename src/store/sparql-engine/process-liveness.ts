import { dateTimeLiteral, iriToNt, termToNt } from '../../rdf/terms.js';
import { STORE } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

/*
 * Which server processes on one engine are alive: each writes, every fifth of `deadAfterMs`, when it
 * was last seen (its clock), under the name its commit intents start with (CommitIntents.process). A
 * process not seen for `deadAfterMs` is dead: the others complete the intents it left (a write it had
 * stored but not applied holds its slots until then).
 */

/** Where the processes' heartbeats go: written on their clocks, whatever the requests do. */
export const PROCESSES_GRAPH = `${STORE}processes`;
const SEEN_AT = `${STORE}seenAt`;

/**
 * The operations recording that `process` is alive at `at`: the new time first, then the earlier ones
 * removed, so that a reader in between finds one or the other. Not one DELETE/INSERT with an OPTIONAL
 * of the earlier time: Virtuoso 7.2 inserted nothing by it.
 */
export function heartbeat(process: string, at: Date): string {
  const g = iriToNt(PROCESSES_GRAPH);
  const p = iriToNt(process);
  const now = termToNt(dateTimeLiteral(at));
  return `INSERT DATA { GRAPH ${g} { ${p} ${iriToNt(SEEN_AT)} ${now} } } ;
DELETE { GRAPH ${g} { ${p} ${iriToNt(SEEN_AT)} ?before } }
WHERE { GRAPH ${g} { ${p} ${iriToNt(SEEN_AT)} ?before } FILTER (?before < ${now}) }`;
}

/** When each process was last seen. */
export async function lastSeen(reader: SparqlReader): Promise<Map<string, number>> {
  const rows = await reader.select(
    `SELECT ?process ?at WHERE { GRAPH ${iriToNt(PROCESSES_GRAPH)} { ?process ${iriToNt(SEEN_AT)} ?at } }`,
  );
  const seen = new Map<string, number>();
  for (const b of rows.results.bindings)
    if (b.process && b.at) seen.set(b.process.value, Math.max(seen.get(b.process.value) ?? 0, Date.parse(b.at.value)));
  return seen;
}

/** Removes the records of processes not seen since `cutoff`. */
export function livenessTrim(cutoff: Date): string {
  const g = iriToNt(PROCESSES_GRAPH);
  return (
    `DELETE { GRAPH ${g} { ?process ${iriToNt(SEEN_AT)} ?at } } WHERE { GRAPH ${g} { ?process ` +
    `${iriToNt(SEEN_AT)} ?at } FILTER (?at < ${termToNt(dateTimeLiteral(cutoff))}) }`
  );
}
