import { dateTimeLiteral, iriToNt, namedNode, quad, type Quad } from '../../rdf/terms.js';
import { PERMISSIONS, acl, permission, rdf, store as meta, type Permission } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

/*
 * Access-control grants, in W3C Web Access Control terms (as IATA's ACL.json example): one named
 * graph per grant, named after it. The four ONE Record permissions (ONE Record API, "AccessDelegation")
 * map onto modes this way (docs/access-control.md):
 *
 *   GET_LOGISTICS_OBJECT    acl:Read   on the Logistics Object        (node <grant>)
 *   PATCH_LOGISTICS_OBJECT  acl:Write  on the Logistics Object        (node <grant>)
 *   GET_LOGISTICS_EVENT     acl:Read   on {object}/logistics-events   (node <grant#events>)
 *   POST_LOGISTICS_EVENT    acl:Append on {object}/logistics-events   (node <grant#events>)
 *
 * Two authorisation nodes, because WAC gives every mode of an authorisation on every resource
 * it names: one node for both would let a reader of the object read its events. The grant node
 * also carries the bookkeeping (who granted it, when, the AccessDelegationRequest it came from,
 * the grants it was derived from in a trust chain, when it expires). Withdrawing a grant removes
 * the acl:Authorization type of its nodes (so no Web Access Control reader takes them for
 * authorisations) and records who withdrew it and when; what it named stays as history. That
 * keeps a withdrawal a few quads however many objects the grant covers, so revoking a long trust
 * chain over many objects is one small commit. Withdrawing one object from a grant that stays
 * deletes that object's accessTo quads.
 */

/** One grant: `permissions` on every one of `objects` for `agent` (or every authenticated caller). */
export interface GrantRecord {
  /** The acl:Authorization (and its graph); its events node is `${iri}#events`. */
  iri: string;
  /** acl:agent; absent for a public grant (acl:agentClass acl:AuthenticatedAgent). */
  agent?: string;
  /** Logistics Objects, sorted. */
  objects: string[];
  /** In PERMISSIONS order. */
  permissions: Permission[];
  grantedBy: string;
  grantedAt: Date;
  /** The AccessDelegationRequest whose acceptance created the grant. */
  delegation?: string;
  /** Grants through which the delegator held what it passed on; withdrawing one withdraws this too. */
  derivedFrom: string[];
  expiresAt?: Date;
}

const EVENTS_SUFFIX = '/logistics-events';
export const eventsNode = (grant: string) => `${grant}#events`;
const eventsOf = (object: string) => `${object}${EVENTS_SUFFIX}`;

/** Where each permission lives: on the object node or the events node, with which mode. */
const PLACEMENT: Readonly<Record<Permission, { events: boolean; mode: string }>> = {
  [permission.GET_LOGISTICS_OBJECT]: { events: false, mode: acl.Read },
  [permission.PATCH_LOGISTICS_OBJECT]: { events: false, mode: acl.Write },
  [permission.GET_LOGISTICS_EVENT]: { events: true, mode: acl.Read },
  [permission.POST_LOGISTICS_EVENT]: { events: true, mode: acl.Append },
};

export const sortPermissions = (list: Iterable<Permission>): Permission[] =>
  [...new Set(list)].sort((a, b) => PERMISSIONS.indexOf(a) - PERMISSIONS.indexOf(b));

/** The permission a (node kind, mode) pair stands for. */
function permissionOf(events: boolean, mode: string): Permission | undefined {
  return PERMISSIONS.find((p) => PLACEMENT[p].events === events && PLACEMENT[p].mode === mode);
}

/** The authorisation nodes of a grant, each with the resources it names for `objects`. */
function nodes(
  grant: GrantRecord,
  objects: readonly string[],
): { iri: string; modes: string[]; resources: string[] }[] {
  const out = [];
  for (const events of [false, true]) {
    const modes = grant.permissions.filter((p) => PLACEMENT[p].events === events).map((p) => PLACEMENT[p].mode);
    if (modes.length > 0)
      out.push({
        iri: events ? eventsNode(grant.iri) : grant.iri,
        modes,
        resources: events ? objects.map(eventsOf) : [...objects],
      });
  }
  return out;
}

/** Every quad of a grant, in its graph. */
export function grantQuads(grant: GrantRecord): Quad[] {
  const g = namedNode(grant.iri);
  const s = g;
  const out: Quad[] = [
    quad(s, namedNode(meta.grantedBy), namedNode(grant.grantedBy), g),
    quad(s, namedNode(meta.grantedAt), dateTimeLiteral(grant.grantedAt), g),
  ];
  if (grant.delegation) out.push(quad(s, namedNode(meta.grantDelegation), namedNode(grant.delegation), g));
  for (const parent of grant.derivedFrom) out.push(quad(s, namedNode(meta.grantDerivedFrom), namedNode(parent), g));
  if (grant.expiresAt) out.push(quad(s, namedNode(meta.grantExpiresAt), dateTimeLiteral(grant.expiresAt), g));
  for (const node of nodes(grant, grant.objects)) {
    const n = namedNode(node.iri);
    out.push(quad(n, namedNode(rdf.type), namedNode(acl.Authorization), g));
    out.push(
      grant.agent
        ? quad(n, namedNode(acl.agent), namedNode(grant.agent), g)
        : quad(n, namedNode(acl.agentClass), namedNode(acl.AuthenticatedAgent), g),
    );
    for (const mode of node.modes) out.push(quad(n, namedNode(acl.mode), namedNode(mode), g));
    for (const resource of node.resources) out.push(quad(n, namedNode(acl.accessTo), namedNode(resource), g));
  }
  return out;
}

/** The quads that name `objects` in a grant: deleting them withdraws the grant from those objects only. */
export function accessToQuads(grant: GrantRecord, objects: readonly string[]): Quad[] {
  const g = namedNode(grant.iri);
  return nodes(grant, objects).flatMap((node) =>
    node.resources.map((r) => quad(namedNode(node.iri), namedNode(acl.accessTo), namedNode(r), g)),
  );
}

/** What withdrawing a whole grant deletes and inserts. */
export function withdrawalQuads(grant: GrantRecord, at: Date, by: string): { delete: Quad[]; insert: Quad[] } {
  const g = namedNode(grant.iri);
  return {
    delete: nodes(grant, []).map((node) =>
      quad(namedNode(node.iri), namedNode(rdf.type), namedNode(acl.Authorization), g),
    ),
    insert: [
      quad(g, namedNode(meta.grantWithdrawnAt), dateTimeLiteral(at), g),
      quad(g, namedNode(meta.grantWithdrawnBy), namedNode(by), g),
    ],
  };
}

/**
 * Every grant in force or expired the store holds (not withdrawn ones), oldest first (ties by IRI). Graphs without
 * bookkeeping are not grants.
 */
export async function readGrants(reader: SparqlReader): Promise<GrantRecord[]> {
  const p = iriToNt;
  const grants = new Map<string, GrantRecord>();
  // Independent reads, sent together: on an engine each is a round trip, and a start waits for all of them.
  const [heads, parents, rows] = await Promise.all([
    reader.select(`SELECT ?g ?by ?at ?delegation ?expires WHERE { GRAPH ?g {
    ?g ${p(meta.grantedBy)} ?by ; ${p(meta.grantedAt)} ?at .
    FILTER NOT EXISTS { ?g ${p(meta.grantWithdrawnAt)} ?withdrawn }
    OPTIONAL { ?g ${p(meta.grantDelegation)} ?delegation } OPTIONAL { ?g ${p(meta.grantExpiresAt)} ?expires } } }`),
    reader.select(`SELECT ?g ?parent WHERE { GRAPH ?g { ?g ${p(meta.grantDerivedFrom)} ?parent } }`),
    reader.select(`SELECT ?g ?node ?agent ?mode ?resource WHERE { GRAPH ?g {
    ?node a ${p(acl.Authorization)} ; ${p(acl.mode)} ?mode .
    OPTIONAL { ?node ${p(acl.agent)} ?agent } OPTIONAL { ?node ${p(acl.accessTo)} ?resource } } }`),
  ]);
  for (const b of heads.results.bindings) {
    const grant: GrantRecord = {
      iri: b.g.value,
      objects: [],
      permissions: [],
      grantedBy: b.by.value,
      grantedAt: new Date(b.at.value),
      derivedFrom: [],
    };
    if (b.delegation) grant.delegation = b.delegation.value;
    if (b.expires) grant.expiresAt = new Date(b.expires.value);
    grants.set(grant.iri, grant);
  }
  for (const b of parents.results.bindings) {
    grants.get(b.g.value)?.derivedFrom.push(b.parent.value);
  }
  const objects = new Map<string, Set<string>>();
  const permissions = new Map<string, Set<Permission>>();
  for (const b of rows.results.bindings) {
    const grant = grants.get(b.g.value);
    if (!grant) continue;
    const events = b.node.value === eventsNode(grant.iri);
    if (b.agent) grant.agent = b.agent.value;
    const granted = permissionOf(events, b.mode.value);
    if (granted) permissions.set(grant.iri, (permissions.get(grant.iri) ?? new Set()).add(granted));
    if (b.resource) {
      const object =
        events && b.resource.value.endsWith(EVENTS_SUFFIX)
          ? b.resource.value.slice(0, -EVENTS_SUFFIX.length)
          : b.resource.value;
      objects.set(grant.iri, (objects.get(grant.iri) ?? new Set()).add(object));
    }
  }
  for (const grant of grants.values()) {
    grant.objects = [...(objects.get(grant.iri) ?? [])].sort();
    grant.permissions = sortPermissions(permissions.get(grant.iri) ?? []);
    grant.derivedFrom.sort();
  }
  return [...grants.values()].sort(
    (a, b) => a.grantedAt.getTime() - b.grantedAt.getTime() || (a.iri < b.iri ? -1 : a.iri > b.iri ? 1 : 0),
  );
}
