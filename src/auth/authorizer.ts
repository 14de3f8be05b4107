import { HttpError } from '../errors.js';
import type { LogisticsObjectEntry } from '../domain/revision-index.js';
import type { ActionRequestRecord } from '../store/schema/action-requests.js';
import type { EventRecord } from '../store/schema/events.js';

/** Who is calling: the logistics agent of the verified token. */
export interface Caller {
  agent: string;
  internal: boolean;
}

/** Every kind of access the server decides on, with what the decision depends on. */
export type Access =
  | { kind: 'create-object' }
  | { kind: 'read-object'; object: LogisticsObjectEntry }
  | { kind: 'submit-change'; object: LogisticsObjectEntry }
  /** GET_LOGISTICS_EVENT on an object: list its events. */
  | { kind: 'read-events'; object: LogisticsObjectEntry }
  /** One event (`event` undefined when there is none at `iri`): GET_LOGISTICS_EVENT on its object, or having posted it. */
  | { kind: 'read-event'; object: LogisticsObjectEntry; iri: string; event: EventRecord | undefined }
  /** POST_LOGISTICS_EVENT on an object. */
  | { kind: 'post-event'; object: LogisticsObjectEntry }
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

/**
 * The one place where access is decided: every route and domain operation asks `check` (or
 * `allows`, where a denial is not an error, such as embedded objects). Deny by default: internal
 * actors may do everything; an object's creator may read it and read and post its events (until
 * access delegation brings grants, which back this class without changing its callers); any
 * authenticated caller may ask for a change (the holder decides); requesters read and revoke their
 * own action requests, and read events they posted. Posting events is not open to every caller
 * (which the spec allows) because objects are deny-by-default and an open POST would reveal which
 * object URIs exist.
 */
export class Authorizer {
  constructor(
    private readonly internalAgents: ReadonlySet<string>,
    /** Answer 404 instead of 403, so a denial does not reveal that the resource exists. */
    private readonly hideForbidden: boolean,
  ) {}

  caller(agent: string): Caller {
    return { agent, internal: this.internalAgents.has(agent) };
  }

  allows(caller: Caller, access: Access): boolean {
    if (caller.internal) return true;
    switch (access.kind) {
      case 'read-object':
      case 'read-events':
      case 'post-event':
        return caller.agent === access.object.creator;
      case 'read-event':
        return this.allows(caller, { kind: 'read-events', object: access.object }) || caller.agent === access.event?.createdBy;
      case 'submit-change':
        return true;
      case 'read-action-request':
      case 'revoke-action-request':
        return caller.agent === access.request.requestedBy;
      default:
        return false;
    }
  }

  /** Throws the denial when `caller` may not: 403 (or 404, see hideForbidden) naming the resource; 403 for internal-only operations. */
  check(caller: Caller, access: Access): void {
    if (this.allows(caller, access)) return;
    const internalOnly = access.kind === 'operate' ? access.what : INTERNAL_ONLY[access.kind];
    if (internalOnly) throw new HttpError(403, 'internal_only', { message: `${internalOnly} is for internal actors of this server only` });
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
