import { HttpError } from '../errors.js';
import type { LogisticsObjectEntry } from '../domain/revision-index.js';

/** Who is calling: the logistics agent of the verified token. */
export interface Caller {
  agent: string;
  internal: boolean;
}

/**
 * Deny by default: internal actors and an object's creator may do everything with it.
 * Grants to other agents arrive with access delegation.
 */
export class AccessControl {
  constructor(
    private readonly internalAgents: ReadonlySet<string>,
    private readonly hideForbidden: boolean,
  ) {}

  caller(agent: string): Caller {
    return { agent, internal: this.internalAgents.has(agent) };
  }

  canReadObject(caller: Caller, entry: LogisticsObjectEntry): boolean {
    return caller.internal || caller.agent === entry.creator;
  }

  /** 403, or 404 when configured to hide that the resource exists. */
  denied(resource: string): HttpError {
    if (this.hideForbidden) return new HttpError(404, 'not_found', { message: 'Resource not found', resource });
    return new HttpError(403, 'forbidden', { message: 'the caller may not access this resource', resource });
  }

  requireInternal(caller: Caller, what: string): void {
    if (!caller.internal) throw new HttpError(403, 'internal_only', { message: `${what} is for internal actors of this server only` });
  }
}
