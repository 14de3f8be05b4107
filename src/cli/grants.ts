import { ACL, acl, apiLocalName, permission, type Permission } from '../rdf/vocab.js';
import { EXIT, listOption, remoteCommand, UsageError } from './command.js';

/** Where each ONE Record permission lives in Web Access Control (docs/access-control.md). */
const WAC: Record<Permission, { on: 'object' | 'events'; mode: string }> = {
  [permission.GET_LOGISTICS_OBJECT]: { on: 'object', mode: acl.Read },
  [permission.PATCH_LOGISTICS_OBJECT]: { on: 'object', mode: acl.Write },
  [permission.GET_LOGISTICS_EVENT]: { on: 'events', mode: acl.Read },
  [permission.POST_LOGISTICS_EVENT]: { on: 'events', mode: acl.Append },
};

function permissionsOf(names: string[]): Permission[] {
  const all = Object.keys(WAC) as Permission[];
  return (names.length === 0 ? ['GET_LOGISTICS_OBJECT'] : names.flatMap((n) => n.split(','))).map((name) => {
    const found = all.find((p) => apiLocalName(p) === apiLocalName(name.trim()));
    if (!found) throw new UsageError(`--permission ${name}: one of ${all.map(apiLocalName).join(', ')}`);
    return found;
  });
}

/**
 * The acl:Authorization bodies that give `permissions`. One authorisation gives every mode it names
 * on every resource it names, so the object's modes and the events' modes share one only when equal.
 */
function authorizations(object: string, agent: string, permissions: Permission[]): object[] {
  const modes = (on: 'object' | 'events') =>
    [...new Set(permissions.filter((p) => WAC[p].on === on).map((p) => WAC[p].mode))].sort();
  const targets = [
    { resources: [object], modes: modes('object') },
    { resources: [`${object}/logistics-events`], modes: modes('events') },
  ].filter((t) => t.modes.length > 0);
  const merged =
    targets.length === 2 && targets[0].modes.join() === targets[1].modes.join()
      ? [{ resources: targets.flatMap((t) => t.resources), modes: targets[0].modes }]
      : targets;
  return merged.map((t) => ({
    '@context': { acl: ACL },
    '@type': 'acl:Authorization',
    'acl:agent': { '@id': agent },
    'acl:accessTo': t.resources.map((r) => ({ '@id': r })),
    'acl:mode': t.modes.map((m) => ({ '@id': m })),
  }));
}

export const grantCommand = remoteCommand({
  name: 'grant',
  synopsis:
    '<object iri|id> <agent iri> [--permission ' +
    'GET_LOGISTICS_OBJECT|PATCH_LOGISTICS_OBJECT|GET_LOGISTICS_EVENT|POST_LOGISTICS_EVENT]...',
  description: `Grants an organisation permissions on a Logistics Object (default GET_LOGISTICS_OBJECT), through
POST /internal/acl (internal actors only), and prints the IRI of each grant made: one, or two when the
object and its events get different modes. Withdraw one with DELETE /internal/acl/{id}.`,
  example:
    'npx onerecord grant "$PIECE" https://partner.example.com/logistics-objects/partner --permission ' +
    'GET_LOGISTICS_OBJECT,GET_LOGISTICS_EVENT',
  options: { permission: { type: 'string', multiple: true } },
  arity: [2, 2],
  async run({ args, values }, client) {
    const object = client.objectIri(args[0]);
    for (const body of authorizations(object, args[1], permissionsOf(listOption(values, 'permission')))) {
      console.log(await client.create('/internal/acl', 'application/ld+json', JSON.stringify(body)));
    }
    return EXIT.ok;
  },
});
