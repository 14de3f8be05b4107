import { HttpError } from '../../errors.js';
import { permission, PERMISSIONS, type Permission } from '../../rdf/vocab.js';
import type { ActionRequestRecord } from '../../store/schema/action-requests.js';
import type { EventRecord } from '../../store/schema/events.js';
import type { GrantIndex, GrantRecord } from './grant-index.js';

/** Who is calling: the logistics agent of the verified token. */
export interface Caller {
  agent: string;
  internal: boolean;
}

/** What an access decision on a Logistics Object depends on: its IRI and who created it (RevisionIndex's entries). */
export interface ObjectOwnership {
  iri: string;
  creator: string;
}

/** Every kind of access the server decides on, with what the decision depends on. */
export type Access =
  | { kind: 'create-object' }
  | { kind: 'read-object'; object: ObjectOwnership }
  | { kind: 'submit-change'; object: ObjectOwnership }
  /** PATCH_LOGISTICS_OBJECT: the `auto` policy accepts this caller's changes at once. */
  | { kind: 'change-object'; object: ObjectOwnership }
  /** GET_LOGISTICS_EVENT on an object: list its events. */
  | { kind: 'read-events'; object: ObjectOwnership }
  /**
   * One event (`event` undefined when there is none at `iri`): GET_LOGISTICS_EVENT on its object, or having posted it.
   */
  | { kind: 'read-event'; object: ObjectOwnership; iri: string; event: EventRecord | undefined }
  /** POST_LOGISTICS_EVENT on an object. */
  | { kind: 'post-event'; object: ObjectOwnership }
  | { kind: 'list-action-requests' }
  | { kind: 'read-action-request'; request: ActionRequestRecord }
  | { kind: 'decide-action-request' }
  | { kind: 'revoke-action-request'; request: ActionRequestRecord }
  /** An operator route under /internal/; `what` names it in the error. */
  | { kind: 'operate'; what: string };

const INTERNAL_ONLY: Partial<Record<Access['kind'], string>> = {
  'create-object': 'creating Logistics Objects',
  'list-action-requests': 'listing action requests',
  'decide-action-request': 'deciding on action requests',
};

/** Why a caller holds a permission on an object. */
export type AccessSource = { kind: 'internal-actor' } | { kind: 'creator' } | { kind: 'grant'; grant: GrantRecord };

/** Which access kind needs which ONE Record permission on its object. */
const PERMISSION_OF: Partial<Record<Access['kind'], Permission>> = {
  'read-object': permission.GET_LOGISTICS_OBJECT,
  'change-object': permission.PATCH_LOGISTICS_OBJECT,
  'read-events': permission.GET_LOGISTICS_EVENT,
  'read-event': permission.GET_LOGISTICS_EVENT,
  'post-event': permission.POST_LOGISTICS_EVENT,
};

/**
 * The one place where access is decided (`check`, or `allows` where a denial is no error); deny by default:
 * internal actors may do everything, an object's creator everything on it, others what grants in force give
 * (docs/access-control.md). Any authenticated caller may ask for a change; requesters read and revoke their own
 * action requests and read events they posted (ONE Record API, "Authentication and authorization per endpoint").
 */
export class Authorizer {
  constructor(
    private readonly internalAgents: ReadonlySet<string>,
    /** Answer 404 instead of 403, so a denial does not reveal that the resource exists. */
    private readonly hideForbidden: boolean,
    readonly grants: GrantIndex,
  ) {}

  caller(agent: string): Caller {
    return { agent, internal: this.internalAgents.has(agent) };
  }

  /** Does `caller` hold `wanted` on `object`? */
  holds(caller: Caller, object: ObjectOwnership, wanted: Permission): boolean {
    return (
      caller.internal ||
      caller.agent === object.creator ||
      this.grants.holds(caller.agent, object.iri, wanted, Date.now())
    );
  }

  /** Where each of the four permissions of `caller` on `object` comes from (none: not held). */
  explain(caller: Caller, object: ObjectOwnership): Map<Permission, AccessSource[]> {
    const now = Date.now();
    const out = new Map<Permission, AccessSource[]>();
    for (const wanted of PERMISSIONS) {
      const sources: AccessSource[] = [];
      if (caller.internal) sources.push({ kind: 'internal-actor' });
      if (caller.agent === object.creator) sources.push({ kind: 'creator' });
      for (const grant of this.grants.sources(caller.agent, object.iri, wanted, now))
        sources.push({ kind: 'grant', grant });
      out.set(wanted, sources);
    }
    return out;
  }

  allows(caller: Caller, access: Access): boolean {
    if (caller.internal) return true;
    const wanted = PERMISSION_OF[access.kind];
    if (wanted && 'object' in access && this.holds(caller, access.object, wanted)) return true;
    switch (access.kind) {
      case 'read-event':
        return caller.agent === access.event?.createdBy;
      case 'submit-change':
        return true;
      case 'read-action-request':
      case 'revoke-action-request':
        return caller.agent === access.request.requestedBy;
      default:
        return false;
    }
  }

  /**
   * Throws the denial when `caller` may not: 403 (or 404, see hideForbidden) naming the resource; 403 for internal-only
   * operations.
   */
  check(caller: Caller, access: Access): void {
    if (this.allows(caller, access)) return;
    const internalOnly = access.kind === 'operate' ? access.what : INTERNAL_ONLY[access.kind];
    if (internalOnly)
      throw new HttpError(403, 'internal_only', {
        message: `${internalOnly} is for internal actors of this server only`,
      });
    throw this.denied(resourceOf(access));
  }

  private denied(resource: string | undefined): HttpError {
    if (this.hideForbidden) return new HttpError(404, 'not_found', { message: 'Resource not found', resource });
    return new HttpError(403, 'forbidden', { message: 'the caller may not access this resource', resource });
  }
}

function resourceOf(access: Access): string | undefined {
  if ('iri' in access) return access.iri;
  if ('request' in access) return access.request.iri;
  if ('object' in access) return access.object.iri;
  return undefined;
}
