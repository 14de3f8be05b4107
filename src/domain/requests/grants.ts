import { randomUUID } from 'node:crypto';
import type { AccessSource, Authorizer, Caller } from '../access/authorizer.js';
import type { GrantIndex, GrantRecord } from '../access/grant-index.js';
import { HttpError, badQuery, badRequest, notFound } from '../../errors.js';
import { quad, type Quad } from '../../rdf/terms.js';
import { acl, permission, requestStatus, type Permission } from '../../rdf/vocab.js';
import { claimKey, type Claims } from '../../store/claims.js';
import { accessToQuads, grantQuads, sortPermissions, withdrawalQuads } from '../../store/schema/grants.js';
import type { WriteTransaction } from '../../store/transaction.js';
import { currentStatus } from './action-request-index.js';
import type { ActionRequests, RequestWrite } from './action-requests.js';
import { onlyNodeOfType } from './only-node.js';
import type { LogisticsObjects } from '../objects/logistics-objects.js';

/** A grant to add: `permissions` on `objects` for `agent` (every authenticated caller when absent). */
export interface GrantSpec {
  agent?: string;
  objects: readonly string[];
  permissions: readonly Permission[];
  expiresAt?: Date;
  delegation?: string;
  derivedFrom?: readonly string[];
}

/** A withdrawal: `objects` of `grant` (all of them withdraws the grant). */
export interface Withdrawal {
  grant: GrantRecord;
  objects: readonly string[];
}

export interface GrantFilter {
  object?: string;
  agent?: string;
}

/** One permission's provenance, as the explain-access route shows it: a source and, for grants, the chain behind it. */
export interface ChainLink {
  grant: string;
  agent: string;
  permissions: string[];
  objects: number;
  grantedBy: string;
  grantedAt: string;
  expiresAt?: string;
  delegation?: { request: string; requestedBy: string; status: string };
  derivedFrom: ChainLink[];
}

/**
 * Keys of the trust-chain rule: a withdrawal takes `withdraw`, a grant derived from it shares `derive`; each refuses
 * while the other is held.
 */
const withdrawKey = (grant: string) => `withdraw ${claimKey.grant(grant)}`;
const deriveKey = (grant: string) => `derive ${claimKey.grant(grant)}`;

const busy = (grant: string) =>
  new HttpError(409, 'grant_busy', {
    message: 'a grant this depends on is being withdrawn or delegated onward in a write in flight; retry',
    resource: grant,
  });

/** The Logistics Object an acl:accessTo names: itself, or the one whose `/logistics-events` it names. */
const objectOfResource = (resource: string) =>
  resource.endsWith(EVENTS_SUFFIX) ? resource.slice(0, -EVENTS_SUFFIX.length) : resource;

/**
 * Grants (acl:Authorization graphs, src/store/schema/grants.ts): adding them to a transaction,
 * withdrawing them with every grant derived from them at any depth of delegation (one
 * transaction), and the internal ACL routes (grant, list, revoke, explain). Reading decisions
 * go through the Authorizer, backed by the GrantIndex this keeps through the after-commit stream.
 */
export class Grants {
  readonly prefix: string;

  constructor(
    /** Claims of writes in flight: a grant being withdrawn, or derived from. */
    private readonly claims: Claims,
    readonly index: GrantIndex,
    private readonly access: Authorizer,
    private readonly objects: LogisticsObjects,
    private readonly requests: ActionRequests,
    baseUrl: string,
  ) {
    this.prefix = `${baseUrl}/internal/acl/`;
  }

  /** Adds a new grant to `tx`; 409 while a grant it derives from is being withdrawn. */
  add(tx: WriteTransaction, spec: GrantSpec, grantedBy: string): GrantRecord {
    const grant: GrantRecord = {
      iri: `${this.prefix}${randomUUID()}`,
      agent: spec.agent,
      objects: [...new Set(spec.objects)].sort(),
      permissions: sortPermissions(spec.permissions),
      grantedBy,
      grantedAt: new Date(),
      delegation: spec.delegation,
      derivedFrom: [...new Set(spec.derivedFrom ?? [])].sort(),
      expiresAt: spec.expiresAt,
    };
    for (const parent of grant.derivedFrom) {
      if (this.claims.isHeld(withdrawKey(parent))) throw busy(parent);
      tx.share(deriveKey(parent));
    }
    tx.insert.push(...grantQuads(grant));
    tx.events.push({ kind: 'grant-added', grant });
    return grant;
  }

  /**
   * Withdraws `roots` and, following the trust chain, the same objects from every grant derived
   * from them at any depth, into `write`. An accepted AccessDelegationRequest left without grants
   * becomes REQUEST_REVOKED in the same write (except those in `revoking`, revoked by the caller).
   */
  withdraw(
    write: RequestWrite,
    roots: readonly Withdrawal[],
    by: string,
    revoking: ReadonlySet<string> = new Set(),
  ): void {
    const removed = new Map<GrantRecord, Set<string>>();
    const covered = new Map<GrantRecord, Set<string>>();
    const queue = [...roots];
    while (queue.length > 0) {
      const { grant, objects } = queue.pop()!;
      const has = covered.get(grant) ?? new Set(grant.objects);
      covered.set(grant, has);
      const gone = removed.get(grant) ?? new Set<string>();
      removed.set(grant, gone);
      const fresh = objects.filter((o) => has.has(o) && !gone.has(o));
      if (fresh.length === 0) continue;
      for (const o of fresh) gone.add(o);
      for (const child of this.index.derivedFrom(grant.iri)) queue.push({ grant: child, objects: fresh });
    }
    const tx = write.tx;
    const at = new Date();
    const emptied = new Set<string>();
    for (const [grant, gone] of removed) {
      if (gone.size === 0) continue;
      if (this.claims.isHeld(deriveKey(grant.iri)) || !tx.claim(withdrawKey(grant.iri))) throw busy(grant.iri);
      const whole = gone.size === grant.objects.length;
      if (whole) {
        const withdrawal = withdrawalQuads(grant, at, by);
        tx.delete.push(...withdrawal.delete);
        tx.insert.push(...withdrawal.insert);
      } else {
        tx.delete.push(...accessToQuads(grant, [...gone]));
      }
      tx.events.push({ kind: 'grant-withdrawn', grant, objects: whole ? [...grant.objects] : [...gone] });
      if (whole) emptied.add(grant.iri);
    }
    const delegations = new Set(
      [...removed.keys()].flatMap((g) => (g.delegation && emptied.has(g.iri) ? [g.delegation] : [])),
    );
    for (const delegation of delegations) {
      if (revoking.has(delegation)) continue;
      const record = this.requests.index.get(delegation);
      if (!record || currentStatus(record) !== requestStatus.ACCEPTED) continue;
      if (![...this.index.fromDelegation(delegation)].every((g) => emptied.has(g.iri))) continue;
      this.requests.ensureIdle(record);
      write.transition(record, { to: requestStatus.REVOKED, by, revoked: true });
    }
  }

  // --- internal ACL routes (internal actors only) ---

  private operate(caller: Caller): void {
    this.access.check(caller, { kind: 'operate', what: 'managing access control' });
  }

  /** POST /internal/acl: grants what an acl:Authorization body (as IATA's ACL.json) says. */
  async create(body: Quad[], caller: Caller): Promise<GrantRecord[]> {
    this.operate(caller);
    const named = body.filter((t) => t.predicate.value === acl.accessTo).map((t) => objectOfResource(t.object.value));
    const known = await this.objects.index.findAll(named);
    const specs = this.parseAuthorization(body, (object) => known.has(object));
    const write = this.requests.write();
    const grants = specs.map((spec) => this.add(write.tx, spec, caller.agent));
    await this.requests.commit(write);
    return grants;
  }

  /** The grants matching `filter`, oldest first. */
  list(caller: Caller, filter: GrantFilter): GrantRecord[] {
    this.operate(caller);
    const source = filter.object ? this.index.forObject(filter.object) : [...this.index.all()];
    return source
      .filter((g) => filter.agent === undefined || g.agent === filter.agent)
      .sort((a, b) => a.grantedAt.getTime() - b.grantedAt.getTime() || (a.iri < b.iri ? -1 : 1));
  }

  get(iri: string, caller: Caller): GrantRecord {
    this.operate(caller);
    const grant = this.index.get(iri);
    if (!grant) throw notFound(iri, 'Authorization not found');
    return grant;
  }

  /** DELETE /internal/acl/{id}: withdraws a grant and everything derived from it. */
  async revoke(iri: string, caller: Caller): Promise<void> {
    const grant = this.get(iri, caller);
    await this.commitWithdrawal([{ grant, objects: grant.objects }], caller.agent);
  }

  /**
   * DELETE /internal/acl?object=&agent=: withdraws what grants give `agent` (or anyone) on `object` (or every object).
   */
  async revokeMatching(filter: GrantFilter, caller: Caller): Promise<number> {
    const grants = this.list(caller, filter);
    await this.commitWithdrawal(
      grants.map((grant) => ({ grant, objects: filter.object ? [filter.object] : grant.objects })),
      caller.agent,
    );
    return grants.length;
  }

  private async commitWithdrawal(roots: Withdrawal[], by: string): Promise<void> {
    if (roots.length === 0) return;
    const write = this.requests.write();
    try {
      this.withdraw(write, roots, by);
    } catch (err) {
      write.tx.release();
      throw err;
    }
    await this.requests.commit(write);
  }

  /**
   * The triples of a grant as operators see it: its authorisation nodes and its bookkeeping (who, when, from which
   * delegation).
   */
  representation(grant: GrantRecord): Quad[] {
    return grantQuads(grant).map((q) => quad(q.subject, q.predicate, q.object));
  }

  /**
   * GET /internal/access: which permissions `agent` holds on `object`, and the chain of grants and delegations behind
   * each.
   */
  async explain(
    objectIri: string | undefined,
    agent: string,
    caller: Caller,
  ): Promise<{
    object: string;
    agent: string;
    internal: boolean;
    creator: boolean;
    permissions: Record<string, { held: boolean; sources: unknown[] }>;
  }> {
    this.operate(caller);
    if (objectIri === undefined)
      throw badQuery('object', 'object (the Logistics Object to explain access to) is required');
    const entry = await this.objects.existing(objectIri);
    const subject = this.access.caller(agent);
    const permissions: Record<string, { held: boolean; sources: unknown[] }> = {};
    for (const [wanted, sources] of this.access.explain(subject, entry)) {
      permissions[localName(wanted)] = {
        held: sources.length > 0,
        sources: sources.map((s) => this.describe(s, new Set())),
      };
    }
    return { object: entry.iri, agent, internal: subject.internal, creator: entry.creator === agent, permissions };
  }

  private describe(source: AccessSource, seen: Set<string>): unknown {
    if (source.kind !== 'grant') return { source: source.kind };
    return { source: 'grant', ...this.chain(source.grant, seen) };
  }

  private chain(grant: GrantRecord, seen: Set<string>): ChainLink {
    seen.add(grant.iri);
    const request = grant.delegation ? this.requests.index.get(grant.delegation) : undefined;
    return {
      grant: grant.iri,
      agent: grant.agent ?? acl.AuthenticatedAgent,
      permissions: grant.permissions.map(localName),
      objects: grant.objects.length,
      grantedBy: grant.grantedBy,
      grantedAt: grant.grantedAt.toISOString(),
      expiresAt: grant.expiresAt?.toISOString(),
      delegation: request && {
        request: request.iri,
        requestedBy: request.requestedBy,
        status: localName(currentStatus(request)),
      },
      derivedFrom: grant.derivedFrom.flatMap((parent) => {
        const g = this.index.get(parent);
        return g && !seen.has(g.iri) ? [this.chain(g, seen)] : [];
      }),
    };
  }

  /**
   * Reads an acl:Authorization: acl:agent (or acl:agentClass acl:AuthenticatedAgent / foaf:Agent
   * for every authenticated caller), acl:accessTo Logistics Objects of this server (modes Read,
   * Write) or their `/logistics-events` (Read, Append), acl:mode. One grant per kind of resource.
   */
  private parseAuthorization(body: Quad[], exists: (object: string) => boolean): GrantSpec[] {
    const own = onlyNodeOfType(body, acl.Authorization, 'acl:Authorization', 'one_authorization');
    const values = (p: string) => own.filter((t) => t.predicate.value === p).map((t) => t.object);
    const agents = values(acl.agent);
    const classes = values(acl.agentClass);
    if (agents.length + classes.length !== 1 || agents.some((a) => a.termType !== 'NamedNode')) {
      throw badRequest('invalid_agent', 'name exactly one acl:agent (by IRI) or one acl:agentClass', acl.agent);
    }
    if (classes.length === 1 && !PUBLIC_CLASSES.has(classes[0].value)) {
      throw badRequest(
        'invalid_agent_class',
        `acl:agentClass must be ${acl.AuthenticatedAgent} (or foaf:Agent): every caller is authenticated`,
        acl.agentClass,
      );
    }
    const modes = values(acl.mode).map((m) => m.value);
    if (modes.length === 0 || modes.some((m) => !MODES.has(m)))
      throw badRequest('invalid_mode', 'acl:mode must be acl:Read, acl:Write or acl:Append (at least one)', acl.mode);
    const resources = values(acl.accessTo);
    if (resources.length === 0)
      throw badRequest('missing_access_to', 'acl:accessTo must name at least one Logistics Object', acl.accessTo);
    const onObjects: string[] = [];
    const onEvents: string[] = [];
    for (const r of resources) {
      const events = r.value.endsWith(EVENTS_SUFFIX);
      const object = objectOfResource(r.value);
      if (r.termType !== 'NamedNode' || !exists(object)) {
        throw badRequest(
          'unknown_object',
          `acl:accessTo ${r.value} is not a Logistics Object of this server (or its logistics-events)`,
          acl.accessTo,
        );
      }
      (events ? onEvents : onObjects).push(object);
    }
    const agent = agents[0]?.value;
    const specs: GrantSpec[] = [];
    const objectPermissions = modes.flatMap((m) =>
      m === acl.Read ? [permission.GET_LOGISTICS_OBJECT] : m === acl.Write ? [permission.PATCH_LOGISTICS_OBJECT] : [],
    );
    const eventPermissions = modes.map((m) =>
      m === acl.Read ? permission.GET_LOGISTICS_EVENT : permission.POST_LOGISTICS_EVENT,
    );
    if (onObjects.length > 0) {
      if (objectPermissions.length === 0)
        throw badRequest('invalid_mode', 'acl:Append applies to logistics-events, not to a Logistics Object', acl.mode);
      specs.push({ agent, objects: onObjects, permissions: objectPermissions });
    }
    if (onEvents.length > 0) specs.push({ agent, objects: onEvents, permissions: eventPermissions });
    if (specs.length === 2 && sameSet(specs[0].objects, specs[1].objects))
      return [{ agent, objects: onObjects, permissions: [...objectPermissions, ...eventPermissions] }];
    return specs;
  }
}

const EVENTS_SUFFIX = '/logistics-events';
const MODES = new Set<string>([acl.Read, acl.Write, acl.Append]);
const PUBLIC_CLASSES = new Set([acl.AuthenticatedAgent, 'http://xmlns.com/foaf/0.1/Agent']);
const localName = (iri: string) => iri.slice(iri.lastIndexOf('#') + 1);
const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && new Set([...a, ...b]).size === a.length;
