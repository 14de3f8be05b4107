import type { Permission } from '../../rdf/vocab.js';
import type { GrantRecord } from '../../store/schema/grants.js';
import type { DomainEvent } from '../../store/transaction.js';

export type { GrantRecord };

/** Key of public grants (acl:agentClass acl:AuthenticatedAgent) in the per-object map. */
const ANY_AGENT = '';

/** True while `grant` is in force at `now` (epoch ms). */
export const inForce = (grant: GrantRecord, now: number) =>
  grant.expiresAt === undefined || grant.expiresAt.getTime() > now;

/**
 * In-memory index of the grants the store holds, kept by the after-commit stream (and so rebuilt
 * at start), so an access check on the hot path is two map lookups and a scan of the caller's
 * few grants on that object. Also answers the trust-chain questions: which grants an accepted
 * AccessDelegationRequest created, and which grants were derived from a grant.
 */
export class GrantIndex {
  private readonly byIri = new Map<string, GrantRecord>();
  /** object -> agent (ANY_AGENT for public grants) -> grants. */
  private readonly byObject = new Map<string, Map<string, Set<GrantRecord>>>();
  private readonly byDelegation = new Map<string, Set<GrantRecord>>();
  /** parent grant IRI -> grants derived from it. */
  private readonly children = new Map<string, Set<GrantRecord>>();

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.kind === 'grant-added') this.add(e.grant);
      else if (e.kind === 'grant-withdrawn') this.withdraw(e.grant, e.objects);
    }
  }

  get size(): number {
    return this.byIri.size;
  }

  get(iri: string): GrantRecord | undefined {
    return this.byIri.get(iri);
  }

  all(): IterableIterator<GrantRecord> {
    return this.byIri.values();
  }

  /** Grants in force naming `object` for `agent`, its own and public ones. */
  sources(agent: string, object: string, permission: Permission, now: number): GrantRecord[] {
    const perAgent = this.byObject.get(object);
    if (!perAgent) return [];
    const out: GrantRecord[] = [];
    for (const key of [agent, ANY_AGENT]) {
      for (const grant of perAgent.get(key) ?? [])
        if (grant.permissions.includes(permission) && inForce(grant, now)) out.push(grant);
    }
    return out;
  }

  /** The hot-path question: does a grant in force give `agent` `permission` on `object`? */
  holds(agent: string, object: string, permission: Permission, now: number): boolean {
    const perAgent = this.byObject.get(object);
    if (!perAgent) return false;
    for (const key of [agent, ANY_AGENT]) {
      const grants = perAgent.get(key);
      if (grants)
        for (const grant of grants) if (grant.permissions.includes(permission) && inForce(grant, now)) return true;
    }
    return false;
  }

  /** The objects that grants to `agent`, and public ones, name (in force or expired). */
  objectsGrantedTo(agent: string): Set<string> {
    const objects = new Set<string>();
    for (const grant of this.byIri.values())
      if (grant.agent === undefined || grant.agent === agent) for (const object of grant.objects) objects.add(object);
    return objects;
  }

  /** Every grant naming `object` (in force or expired). */
  forObject(object: string): GrantRecord[] {
    return [...(this.byObject.get(object)?.values() ?? [])].flatMap((set) => [...set]);
  }

  /** Grants created by accepting the AccessDelegationRequest `request`. */
  fromDelegation(request: string): ReadonlySet<GrantRecord> {
    return this.byDelegation.get(request) ?? EMPTY;
  }

  /** Grants derived (through a delegation) from grant `parent`. */
  derivedFrom(parent: string): ReadonlySet<GrantRecord> {
    return this.children.get(parent) ?? EMPTY;
  }

  private add(grant: GrantRecord): void {
    // A commit's events may come twice (a process starting while others write on the same engine).
    if (this.byIri.has(grant.iri)) return;
    this.byIri.set(grant.iri, grant);
    for (const object of grant.objects) this.link(grant, object);
    if (grant.delegation) addTo(this.byDelegation, grant.delegation, grant);
    for (const parent of grant.derivedFrom) addTo(this.children, parent, grant);
  }

  private link(grant: GrantRecord, object: string): void {
    let perAgent = this.byObject.get(object);
    if (!perAgent) {
      perAgent = new Map();
      this.byObject.set(object, perAgent);
    }
    addTo(perAgent, grant.agent ?? ANY_AGENT, grant);
  }

  private withdraw(grant: GrantRecord, objects: readonly string[]): void {
    const indexed = this.byIri.get(grant.iri);
    if (!indexed) return;
    const gone = new Set(objects);
    for (const object of gone) {
      const perAgent = this.byObject.get(object);
      if (!perAgent) continue;
      removeFrom(perAgent, indexed.agent ?? ANY_AGENT, indexed);
      if (perAgent.size === 0) this.byObject.delete(object);
    }
    indexed.objects = indexed.objects.filter((o) => !gone.has(o));
    if (indexed.objects.length > 0) return;
    this.byIri.delete(indexed.iri);
    if (indexed.delegation) removeFrom(this.byDelegation, indexed.delegation, indexed);
    for (const parent of indexed.derivedFrom) removeFrom(this.children, parent, indexed);
  }
}

const EMPTY: ReadonlySet<GrantRecord> = new Set();

function addTo<K>(map: Map<K, Set<GrantRecord>>, key: K, grant: GrantRecord): void {
  const set = map.get(key);
  if (set) set.add(grant);
  else map.set(key, new Set([grant]));
}

function removeFrom<K>(map: Map<K, Set<GrantRecord>>, key: K, grant: GrantRecord): void {
  const set = map.get(key);
  if (set?.delete(grant) && set.size === 0) map.delete(key);
}
