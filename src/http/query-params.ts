import type { Request } from 'express';
import { badQuery } from '../errors.js';
import { API, api, apiLocalName, requestStatus, xsd } from '../rdf/vocab.js';
import { isWellTyped } from '../rdf/xsd-lexical.js';

/*
 * Query parameters, read and checked here so the domain gets typed values. One rule for
 * parameters with several spellings (`updated-from`/`updatedFrom`, `eventType`/`event-code`):
 * any one of them may be given; giving two is a 400 naming the second.
 */

const parsedQueries = new WeakMap<Request, Record<string, unknown>>();
const NO_QUERY: Readonly<Record<string, unknown>> = Object.freeze({});

/** The query string, parsed once per request (express 5 parses it again on every `req.query` read). */
function queryOf(req: Request): Record<string, unknown> {
  // Without a query string nothing is parsed, and nothing is kept (an entry per request costs the GC).
  if (!req.url.includes('?')) return NO_QUERY;
  let query = parsedQueries.get(req);
  if (!query) {
    query = req.query as Record<string, unknown>;
    parsedQueries.set(req, query);
  }
  return query;
}

/** A single string query parameter, or undefined; 400 if it is given more than once. */
export function queryParam(req: Request, name: string): string | undefined {
  const value = queryOf(req)[name];
  if (Array.isArray(value)) throw badQuery(name, `${name} is given more than once`);
  return typeof value === 'string' ? value : undefined;
}

/** Every value of the one spelling of a parameter that was given, with that spelling. */
export function queryValues(req: Request, names: readonly string[]): { name: string; values: string[] } | undefined {
  const query = queryOf(req);
  const given = names.filter((n) => query[n] !== undefined);
  if (given.length > 1) throw badQuery(given[1], `give ${given.join(' or ')}, not both`);
  if (given.length === 0) return undefined;
  const raw = query[given[0]];
  return {
    name: given[0],
    values: (Array.isArray(raw) ? raw : [raw]).filter((v): v is string => typeof v === 'string'),
  };
}

/** The value of a parameter that may be given once, under any one of its spellings. */
export function singleQueryValue(req: Request, names: readonly string[]): { name: string; value: string } | undefined {
  const p = queryValues(req, names);
  if (p && p.values.length !== 1) throw badQuery(p.name, `${p.name} may be given once`);
  return p && { name: p.name, value: p.values[0] };
}

/** A count (`limit`, `skip`) from 0 to `max`; `fallback` when absent. */
export function queryCount(req: Request, name: string, fallback: number, max = 1e9): number {
  const p = singleQueryValue(req, [name]);
  if (!p) return fallback;
  if (!/^\d{1,10}$/.test(p.value) || Number(p.value) > max)
    throw badQuery(name, `${name} must be an integer from 0 to ${max}`);
  return Number(p.value);
}

/** An instant given once under any of `names`. */
export function queryInstant(req: Request, names: readonly string[]): Date | undefined {
  const p = singleQueryValue(req, names);
  return p && parseInstant(p.value, p.name);
}

/** Parses `at` in `YYYYMMDDThhmmssZ` (ONE Record API, "Endpoints", Conventions) or RFC 3339 form. */
export function parseInstant(value: string, parameter: string): Date {
  const compact = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  const iso = compact ? `${compact[1]}-${compact[2]}-${compact[3]}T${compact[4]}:${compact[5]}:${compact[6]}Z` : value;
  const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  const date = new Date(iso);
  // Date rolls impossible days over (2024-02-30 is 1 March): the calendar is checked on the text.
  if (
    !rfc3339.test(iso) ||
    Number.isNaN(date.getTime()) ||
    !isWellTyped(iso.replace(/[t ]/, 'T').replace(/z$/, 'Z'), xsd.dateTime)
  ) {
    throw badQuery(parameter, `${parameter} must be YYYYMMDDThhmmssZ or an RFC 3339 date-time`);
  }
  return date;
}

const STATUS_BY_NAME = new Map(Object.values(requestStatus).map((iri) => [iri.slice(API.length), iri]));
const REQUEST_TYPES: readonly string[] = [api.ChangeRequest, api.AccessDelegationRequest, api.SubscriptionRequest];

/** A RequestStatus from a query parameter: `REQUEST_ACCEPTED`, `ACCEPTED`, `api:REQUEST_ACCEPTED` or the IRI. */
export function parseRequestStatus(value: string, parameter: string): string {
  const name = apiLocalName(value.trim());
  const found = STATUS_BY_NAME.get(name) ?? STATUS_BY_NAME.get(`REQUEST_${name}`);
  if (!found) throw badQuery(parameter, `${parameter} must be one of ${[...STATUS_BY_NAME.keys()].join(', ')}`);
  return found;
}

/** An action request type from a query parameter, in the same spellings as statuses. */
export function parseRequestType(value: string, parameter: string): string {
  const iri = `${API}${apiLocalName(value.trim())}`;
  if (!REQUEST_TYPES.includes(iri))
    throw badQuery(parameter, `${parameter} must be one of ${REQUEST_TYPES.map(apiLocalName).join(', ')}`);
  return iri;
}
