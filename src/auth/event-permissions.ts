import type { LogisticsObjectEntry } from '../domain/revision-index.js';
import type { api } from '../rdf/vocab.js';
import type { AccessControl, Caller } from './access-control.js';

/** The api:Permission individuals that govern Logistics Events. */
export type EventPermission = typeof api.GET_LOGISTICS_EVENT | typeof api.POST_LOGISTICS_EVENT;

/**
 * Whether `caller` holds `permission` on the events of `object`. Event permissions are asked
 * for separately from object reads, because a caller may be allowed to read or post events
 * without reading the object; an ACL with GET_LOGISTICS_EVENT / POST_LOGISTICS_EVENT grants
 * replaces this check without touching the event code.
 */
export type EventPermissionCheck = (caller: Caller, permission: EventPermission, object: LogisticsObjectEntry) => boolean;

/**
 * Until grants exist both permissions come with object access: internal actors and the
 * object's creator. Posting is not opened to every authenticated caller (which the spec
 * allows) because objects are deny-by-default and an open POST would reveal which object
 * URIs exist.
 */
export function objectLevelEventPermissions(access: AccessControl): EventPermissionCheck {
  return (caller, _permission, object) => access.canReadObject(caller, object);
}
