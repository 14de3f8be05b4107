import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { iriToNt, literal, termToNt } from '../../rdf/terms.js';
import { STORE } from '../../rdf/vocab.js';
import type { Lease, LeaseHolder } from '../lease.js';
import type { SparqlReader } from '../readers.js';
import { updateRetried } from './engine.js';
import type { LeaseShare } from './lease-share.js';

/** Where the leases' terms are claimed: written on the processes' clocks, whatever the requests do. */
export const LEASES_GRAPH = `${STORE}leases`;
const HELD_BY = `${STORE}leaseHeldBy`;
const LEASE_NAME = `${STORE}leaseName`;
const LEASE_TERM = `${STORE}leaseTerm`;
/** Terms this far back are removed by the holder (they are kept a little for the operator's eye). */
const TERMS_KEPT = 10;

export interface EngineLeaseOptions {
  /** Length of one term; a holder that stops renewing is replaced within 1.5 terms plus a poll. */
  termMs: number;
  log: (message: string) => void;
  /** One of a set of leases the processes share out (LeaseShare): taken, and kept, only within this process's share. */
  share?: LeaseShare;
}

interface EngineAccess extends SparqlReader {
  update(text: string): Promise<string>;
}

/**
 * A lease in the engine, in numbered terms of `termMs` (term n from n × termMs), each claimed by one guarded INSERT
 * and read back. The holder claims the next term halfway through its own; others try every fifth of a term. A
 * holder stops `margin` before its last term ends, so the processes' clocks must agree within it
 * (docs/sparql-engine.md, "Several processes").
 */
export class EngineLease implements Lease {
  readonly process = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private holder: LeaseHolder | undefined;
  /** The last term claimed by this process; its lease ends `margin` before that term does. */
  private heldThrough: number | undefined;
  private holding = false;
  private timer: NodeJS.Timeout | undefined;
  /** Fires when the lease ends unless renewed before. */
  private endTimer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly margin: number;

  constructor(
    private readonly engine: EngineAccess,
    private readonly name: string,
    private readonly options: EngineLeaseOptions,
  ) {
    this.margin = Math.min(1000, options.termMs / 4);
  }

  start(holder: LeaseHolder): void {
    this.holder = holder;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.endTimer);
    await this.ticking;
    this.drop();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) =>
          this.options.log(`lease ${this.name}: the engine did not answer: ${(err as Error).message}`),
        )
        .finally(() => this.schedule(this.nextTickIn()));
    }, ms);
    this.timer.unref();
  }

  /**
   * Every fifth of a term; a holder also right at the halfway point of its last term, when it may
   * claim the next one: its window to renew ends `margin` before that term does (a quarter term
   * for short terms), and a poll landing late in it left the claim's round trips too little time
   * on a busy machine, so the lease lapsed for a moment though nobody else could take it.
   */
  private nextTickIn(): number {
    const { termMs } = this.options;
    if (!this.holding || this.heldThrough === undefined) return termMs / 5;
    // Past it (renewed, or the claim failed): polls again, never at once. At it (a timer that fired
    // a millisecond early found the term not yet half over): a millisecond later.
    const untilRenewal = this.heldThrough * termMs + termMs / 2 - Date.now();
    return untilRenewal >= 0 ? Math.max(1, Math.min(termMs / 5, untilRenewal)) : termMs / 5;
  }

  private async tick(): Promise<void> {
    const { termMs } = this.options;
    const now = Date.now();
    const term = Math.floor(now / termMs);
    // The holder claims the next term halfway through the current one; the others the current one.
    const wanted = this.holding ? (now - term * termMs >= termMs / 2 ? term + 1 : undefined) : term;
    if (wanted === undefined || (this.heldThrough !== undefined && wanted <= this.heldThrough)) return;
    const { share } = this.options;
    if (!share) return this.take(wanted, term);
    if (this.holding) {
      if (await share.keeps(this)) await this.take(wanted, term);
      return;
    }
    if (!(await share.mayClaim(this))) return;
    try {
      await this.take(wanted, term);
    } finally {
      share.claimEnded(this);
    }
  }

  /** Claims term `wanted` (`term` is the current one); tells the holder once it is held. */
  private async take(wanted: number, term: number): Promise<void> {
    const { termMs } = this.options;
    if (!(await this.claimed(wanted))) return;
    // Gained in the second half of a term: the next one too, before it is said to be held.
    if (wanted === term && Date.now() - term * termMs >= termMs / 2) await this.claimed(term + 1);
    if (!this.holding && !this.stopped && Date.now() < this.endOf(this.heldThrough!)) {
      this.holding = true;
      this.options.share?.gained(this);
      this.options.log(`lease ${this.name}: held by this process (${this.process}) through term ${this.heldThrough}`);
      this.holder?.gained();
    }
  }

  /** Claims `term`; whether this process holds it (and so the lease until it ends). */
  private async claimed(wanted: number): Promise<boolean> {
    const holder = await this.claim(wanted);
    if (this.stopped || holder !== this.process || Date.now() >= this.endOf(wanted)) return false;
    this.heldThrough = wanted;
    clearTimeout(this.endTimer);
    this.endTimer = setTimeout(() => this.drop(), this.endOf(wanted) - Date.now());
    this.endTimer.unref();
    if (wanted % TERMS_KEPT === 0) await this.engine.update(this.oldTermsRemoval(wanted - TERMS_KEPT));
    return true;
  }

  /** When this process stops holding a lease whose last claimed term is `term`, by its clock. */
  private endOf(term: number): number {
    return (term + 1) * this.options.termMs - this.margin;
  }

  private drop(): void {
    if (!this.holding) return;
    this.holding = false;
    this.options.share?.dropped(this);
    this.options.log(`lease ${this.name}: no longer held by this process (${this.process})`);
    this.holder?.lost();
  }

  /** Claims `term` if nobody did; who holds it. */
  private async claim(term: number): Promise<string | undefined> {
    const g = iriToNt(LEASES_GRAPH);
    const t = iriToNt(`${STORE}lease:${encodeURIComponent(this.name)}:${term}`);
    // Claims of many leases (one per group of queues) at once deadlock now and then: sent again then.
    await updateRetried(
      this.engine,
      `INSERT { GRAPH ${g} { ${t} ${iriToNt(HELD_BY)} ${termToNt(literal(this.process))} ;
  ${iriToNt(LEASE_NAME)} ${termToNt(literal(this.name))} ; ${iriToNt(LEASE_TERM)} ${term} } }
WHERE { VALUES ?guard { 1 } FILTER NOT EXISTS { GRAPH ${g} { ${t} ${iriToNt(HELD_BY)} ?holder } } }`,
    );
    const rows = await this.engine.select(
      `SELECT ?holder WHERE { GRAPH ${g} { ${t} ${iriToNt(HELD_BY)} ?holder } } ORDER BY ?holder LIMIT 1`,
    );
    return rows.results.bindings[0]?.holder.value;
  }

  private oldTermsRemoval(before: number): string {
    const g = iriToNt(LEASES_GRAPH);
    return (
      `DELETE { GRAPH ${g} { ?t ?p ?o } } WHERE { GRAPH ${g} { ?t ${iriToNt(LEASE_NAME)} ` +
      `${termToNt(literal(this.name))} ; ${iriToNt(LEASE_TERM)} ?term ; ?p ?o FILTER (?term < ${before}) } }`
    );
  }
}
