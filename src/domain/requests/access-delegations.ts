import type { Authorizer, Caller } from '../access/authorizer.js';
import type { DecisionPolicy } from '../../config.js';
import { HttpError, badRequest } from '../../errors.js';
import { dateTimeLiteral, literal, namedNode, quad, xsdLiteral, type Quad, type Term } from '../../rdf/terms.js';
import {
  INTERNAL_SCHEME,
  PERMISSIONS,
  api,
  apiLocalName,
  rdf,
  requestStatus,
  xsd,
  type Permission,
} from '../../rdf/vocab.js';
import type { ActionRequestRecord } from './action-request-index.js';
import type { AcceptHandler, ActionRequests, RequestWrite } from './action-requests.js';
import type { Grants } from './grants.js';
import { onlyNodeOfType } from './only-node.js';
import type { LogisticsObjects } from '../objects/logistics-objects.js';
import type { LogisticsObjectEntry } from '../objects/revision-index.js';
import { shapeError } from '../../shapes/validator.js';
import { SHAPES } from '../../shapes/vocabulary.js';

/** An api:AccessDelegation as the server keeps it. */
export interface Delegation {
  permissions: Permission[];
  /** The Delegates (isRequestedFor): one in API 2.3, a list in 2.0–2.2. */
  delegates: string[];
  objects: string[];
  description?: string;
  notifyRequestStatusChange: boolean;
  expiresAt?: Date;
}

/** A delegation with its objects' entries, as a decision on it reads them. */
interface ParsedDelegation {
  delegation: Delegation;
  entryOf: (object: string) => LogisticsObjectEntry;
}

/** The API 2.3 shape allowing one Delegate per AccessDelegation (`isRequestedFor` at most once). */
const ONE_DELEGATE_SHAPE = `${SHAPES}api-AccessDelegation-api-isRequestedFor`;

const PERMISSION_NAMES = new Map(PERMISSIONS.map((p) => [apiLocalName(p), p]));

/** Reads the one api:AccessDelegation node of `triples`; 400 naming the property at fault. */
export function parseDelegation(
  triples: readonly Quad[],
  isLocalObject: (iri: string) => boolean,
  now: Date,
): Delegation {
  const own = onlyNodeOfType(triples, api.AccessDelegation, 'api:AccessDelegation', 'one_access_delegation');
  const values = (p: string) => own.filter((t) => t.predicate.value === p).map((t) => t.object);
  const iris = (p: string, what: string): string[] => {
    const found = values(p);
    if (found.length === 0)
      throw badRequest('missing_property', `${apiLocalName(p)} must name at least one ${what}`, p);
    const bad = found.find((t) => t.termType !== 'NamedNode' || t.value.startsWith(INTERNAL_SCHEME));
    if (bad) throw badRequest('invalid_property', `${apiLocalName(p)} must name ${what}s by their @id`, p);
    return [...new Set(found.map((t) => t.value))];
  };

  const permissions = values(api.hasPermission).map(
    (t) =>
      PERMISSION_NAMES.get(apiLocalName(t.value)) ??
      fail(api.hasPermission, `${t.value} is not a Permission (${[...PERMISSION_NAMES.keys()].join(', ')})`),
  );
  if (permissions.length === 0)
    fail(api.hasPermission, `hasPermission must name at least one of ${[...PERMISSION_NAMES.keys()].join(', ')}`);
  const delegates = iris(api.isRequestedFor, 'organisation');
  const objects = iris(api.hasLogisticsObject, 'Logistics Object');
  const foreign = objects.find((o) => !isLocalObject(o));
  if (foreign) fail(api.hasLogisticsObject, `${foreign} is not a Logistics Object of this server`);
  const description = single(values(api.hasDescription), api.hasDescription);
  if (description && description.termType !== 'Literal') fail(api.hasDescription, 'hasDescription must be a string');
  const notify = single(values(api.notifyRequestStatusChange), api.notifyRequestStatusChange);
  if (notify && !(notify.termType === 'Literal' && (notify.value === 'true' || notify.value === 'false')))
    fail(api.notifyRequestStatusChange, 'notifyRequestStatusChange must be true or false');
  const expires = single(values(api.expiresAt), api.expiresAt);
  let expiresAt: Date | undefined;
  if (expires) {
    expiresAt = new Date(expires.value);
    if (expires.termType !== 'Literal' || !/^\d{4}-\d\d-\d\dT/.test(expires.value) || Number.isNaN(expiresAt.getTime()))
      fail(api.expiresAt, 'expiresAt must be an xsd:dateTime');
    if (expiresAt.getTime() <= now.getTime()) fail(api.expiresAt, 'expiresAt must be in the future');
  }
  return {
    permissions: [...new Set(permissions)],
    delegates,
    objects,
    description: description?.value,
    notifyRequestStatusChange: notify?.value === 'true',
    expiresAt,
  };
}

/** The body with permissions given by bare name (`"GET_LOGISTICS_OBJECT"`) as the IRIs the shapes list. */
function withPermissionIris(body: readonly Quad[]): readonly Quad[] {
  return body.map((t) => {
    const permission =
      t.predicate.value === api.hasPermission && t.object.termType === 'Literal'
        ? PERMISSION_NAMES.get(t.object.value)
        : undefined;
    return permission ? quad(t.subject, t.predicate, namedNode(permission)) : t;
  });
}

function fail(property: string, message: string): never {
  throw badRequest('invalid_access_delegation', message, property);
}

function single(terms: Term[], property: string): Term | undefined {
  if (terms.length > 1) fail(property, `${apiLocalName(property)} takes one value`);
  return terms[0];
}

/** The stored api:AccessDelegation node `iri`: what was asked, in canonical form. */
function delegationQuads(iri: string, d: Delegation): Quad[] {
  const s = namedNode(iri);
  const out = [quad(s, namedNode(rdf.type), namedNode(api.AccessDelegation))];
  for (const p of d.permissions) out.push(quad(s, namedNode(api.hasPermission), namedNode(p)));
  for (const o of d.delegates) out.push(quad(s, namedNode(api.isRequestedFor), namedNode(o)));
  for (const o of d.objects) out.push(quad(s, namedNode(api.hasLogisticsObject), namedNode(o)));
  if (d.description !== undefined) out.push(quad(s, namedNode(api.hasDescription), literal(d.description)));
  out.push(quad(s, namedNode(api.notifyRequestStatusChange), xsdLiteral(d.notifyRequestStatusChange, xsd.boolean)));
  if (d.expiresAt) out.push(quad(s, namedNode(api.expiresAt), dateTimeLiteral(d.expiresAt)));
  return out;
}

/**
 * AccessDelegationRequests (POST /access-delegations): validation, the decision policy, and
 * accepting, which creates one grant per Delegate in the same commit as the status change.
 * Trust chains: a requester that is not the Delegate may only pass on permissions it holds;
 * the grants made for it remember the grants it held them through (derivedFrom), so revoking
 * a delegation withdraws everything delegated onward from it, at any depth, in one commit.
 */
export class AccessDelegations implements AcceptHandler {
  constructor(
    private readonly access: Authorizer,
    private readonly objects: LogisticsObjects,
    private readonly requests: ActionRequests,
    private readonly grants: Grants,
    private readonly policy: DecisionPolicy,
    /** The data holder, recorded as the one who decided when the policy decides. */
    private readonly holder: string,
  ) {}

  /** The delegation `triples` describe, and its objects' entries (each exists, or parsing refused it). */
  private async parse(triples: readonly Quad[]): Promise<ParsedDelegation> {
    const delegation = parseDelegation(triples, await this.objects.existenceIn(triples), new Date());
    return { delegation, entryOf: await this.objects.existingAmong(delegation.objects) };
  }

  /** POST /access-delegations: any authenticated caller; 403 when it passes on a permission it does not hold. */
  async submit(body: Quad[], caller: Caller): Promise<ActionRequestRecord> {
    // The data model's shapes first (one error detail per violation), with what this server reads
    // beyond API 2.3: permissions by bare name, and a list of Delegates (API 2.0–2.2, one grant each).
    const violations = this.objects
      .shapeViolations(withPermissionIris(body))
      .filter((v) => v.shape !== ONE_DELEGATE_SHAPE);
    if (violations.length > 0) throw shapeError(violations, 400);
    const parsed = await this.parse(body);
    const { delegation } = parsed;
    const missing = this.unheld(caller, parsed);
    if (missing) throw missing;
    const record = this.requests.newRecord(
      api.AccessDelegationRequest,
      caller.agent,
      delegation.objects,
      delegation.notifyRequestStatusChange,
    );
    const node = `${INTERNAL_SCHEME}${record.iri.slice(this.requests.prefix.length)}-delegation`;
    const write = this.requests.write();
    write.create(record, [
      quad(namedNode(record.iri), namedNode(api.hasAccessDelegation), namedNode(node)),
      ...delegationQuads(node, delegation),
    ]);
    // Only the holder delegates: the policy accepts at once what the holder's own side asks for.
    if (this.policy !== 'manual' && caller.internal) {
      this.settle(write, record, parsed, this.holder);
    }
    await this.requests.commit(write);
    return record;
  }

  /**
   * The holder accepts a pending request (PATCH /action-requests/{id}) into `write`; returns the error recorded, if
   * any.
   */
  async accept(record: ActionRequestRecord, decidedBy: string, write: RequestWrite): Promise<HttpError | undefined> {
    return this.settle(write, record, await this.parse(await this.requests.storedTriples(record)), decidedBy);
  }

  /** Revoking an accepted delegation withdraws its grants and every grant derived from them. */
  revoked(write: RequestWrite, record: ActionRequestRecord, revokedBy: string): void {
    const roots = [...this.grants.index.fromDelegation(record.iri)].map((grant) => ({ grant, objects: grant.objects }));
    this.grants.withdraw(write, roots, revokedBy, new Set([record.iri]));
  }

  /** Accepts into `write` (grants for every Delegate), or rejects with the error that stops it (returned). */
  private settle(
    write: RequestWrite,
    record: ActionRequestRecord,
    parsed: ParsedDelegation,
    decidedBy: string,
  ): HttpError | undefined {
    const { delegation } = parsed;
    const requester = this.access.caller(record.requestedBy);
    let error: HttpError | undefined = this.unheld(requester, parsed);
    if (!error && delegation.expiresAt && delegation.expiresAt.getTime() <= Date.now()) {
      error = new HttpError(422, 'delegation_expired', {
        message: 'the delegation expired before it was accepted',
        property: api.expiresAt,
        resource: record.iri,
      });
    }
    if (error) {
      write.transition(record, { to: requestStatus.REJECTED, by: decidedBy, errors: [error] });
      return error;
    }
    write.transition(record, { to: requestStatus.ACCEPTED, by: decidedBy });
    const derivedFrom = this.parentGrants(requester, parsed);
    for (const agent of delegation.delegates) {
      this.grants.add(
        write.tx,
        {
          agent,
          objects: delegation.objects,
          permissions: delegation.permissions,
          expiresAt: delegation.expiresAt,
          delegation: record.iri,
          derivedFrom: agent === requester.agent ? [] : derivedFrom,
        },
        decidedBy,
      );
    }
    return undefined;
  }

  /** The 403 when `requester` passes on (to another Delegate) a permission it does not hold. */
  private unheld(requester: Caller, { delegation, entryOf }: ParsedDelegation): HttpError | undefined {
    if (!delegation.delegates.some((d) => d !== requester.agent)) return undefined;
    for (const object of delegation.objects) {
      const entry = entryOf(object);
      const lacking = delegation.permissions.find((p) => !this.access.holds(requester, entry, p));
      if (lacking) {
        const rule = 'the requester may only delegate permissions it holds';
        return new HttpError(403, 'delegating_unheld_permission', {
          message: `${rule}: it lacks ${apiLocalName(lacking)} on ${object}`,
          property: api.hasPermission,
          resource: object,
        });
      }
    }
    return undefined;
  }

  /**
   * The grants through which `requester` holds what it passes on (none when it holds it as internal actor or creator).
   */
  private parentGrants(requester: Caller, { delegation, entryOf }: ParsedDelegation): string[] {
    const parents = new Set<string>();
    for (const object of delegation.objects) {
      const sources = this.access.explain(requester, entryOf(object));
      for (const p of delegation.permissions) {
        const list = sources.get(p) ?? [];
        if (list.some((s) => s.kind !== 'grant')) continue;
        for (const s of list) if (s.kind === 'grant') parents.add(s.grant.iri);
      }
    }
    return [...parents];
  }
}
