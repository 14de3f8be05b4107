import { OUTPUT_CONTEXT, api, CARGO, requestStatus, XSD, xsd } from '../rdf/vocab.js';
import { RDF_MEDIA_TYPES } from './api-client.js';
import { listOption, remoteCommand, textOption, UsageError } from './command.js';
import { Graph } from './graph.js';
import { reportRequest } from './requests.js';

type Json = Record<string, unknown>;

/** An IRI as given: in full, prefixed by `cargo:`, `api:` or `xsd:`, or a bare name in `namespace`. */
function expandIri(name: string, namespace: string): string {
  const colon = name.indexOf(':');
  if (colon < 0) return namespace + name;
  const prefix = name.slice(0, colon);
  return Object.hasOwn(OUTPUT_CONTEXT, prefix)
    ? OUTPUT_CONTEXT[prefix as keyof typeof OUTPUT_CONTEXT] + name.slice(colon + 1)
    : name;
}

/**
 * The api:o of one `p=v`: `<iri>` links, `v^^datatype` is typed, a plain `v` takes the datatype of
 * the property's current values (the value itself if present, so a DELETE names it exactly as
 * stored), else xsd:string.
 */
function operationObject(current: Graph, object: string, property: string, value: string): Json {
  const link = /^<(.+)>$/.exec(value);
  if (link) return { '@id': link[1] };
  const typed = /^(.*)\^\^(\S+)$/s.exec(value);
  const stored = current.objects(object, property);
  const like = stored.find((o) => o.value === value) ?? stored.find((o) => o.termType === 'Literal');
  if (!typed && like?.termType === 'NamedNode') return { '@id': value };
  const datatype = typed ? expandIri(typed[2], XSD) : like?.termType === 'Literal' ? like.datatype.value : xsd.string;
  return {
    '@type': 'api:OperationObject',
    'api:hasDatatype': { '@type': 'xsd:anyURI', '@value': datatype },
    'api:hasValue': typed ? typed[1] : value,
  };
}

interface Assignment {
  op: 'ADD' | 'DELETE';
  property: string;
  value: string;
}

function assignment(op: 'ADD' | 'DELETE', text: string): Assignment {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--${op.toLowerCase()} ${text}: give property=value`);
  return { op, property: expandIri(text.slice(0, eq), CARGO), value: text.slice(eq + 1) };
}

function operation(current: Graph, object: string, { op, property, value }: Assignment): Json {
  return {
    '@type': 'api:Operation',
    'api:op': { '@id': `api:${op}` },
    'api:s': object,
    'api:p': { '@type': 'xsd:anyURI', '@value': property },
    'api:o': operationObject(current, object, property, value),
  };
}

export const changeCommand = remoteCommand({
  name: 'change',
  synopsis: '<iri|id> [--delete <property>=<value>]... [--add <property>=<value>]... [--description <text>]',
  description: `Submits an api:Change of a Logistics Object, built on its current revision: the DELETEs and ADDs
given, applied together. A property is a full IRI, cargo:name or a bare cargo name. A value is text
(typed like the property's current values, else xsd:string), text^^xsd:type, or <iri> to link.
Prints the ChangeRequest's IRI and, on stderr, its status; exit 1 if it failed or was rejected.`,
  example:
    'npx onerecord change "$PIECE" --delete goodsDescription=Books --add goodsDescription=Magazines --add ' +
    '"grossWeight=<$WEIGHT>"',
  options: {
    add: { type: 'string', multiple: true },
    delete: { type: 'string', multiple: true },
    description: { type: 'string' },
  },
  arity: [1, 1],
  async run({ args, values }, client) {
    const object = client.objectIri(args[0]);
    const assignments = [
      ...listOption(values, 'delete').map((d) => assignment('DELETE', d)),
      ...listOption(values, 'add').map((a) => assignment('ADD', a)),
    ];
    if (assignments.length === 0) throw new UsageError('give at least one --add or --delete');
    const res = await client.expect([200], 'GET', object, { accept: RDF_MEDIA_TYPES.nt });
    const current = Graph.fromNTriples(await res.text());
    const description = textOption(values, 'description');
    const change: Json = {
      '@context': OUTPUT_CONTEXT,
      '@type': 'api:Change',
      'api:hasLogisticsObject': { '@id': object },
      'api:hasRevision': {
        '@type': 'xsd:positiveInteger',
        '@value': res.headers.get('revision') ?? current.value(object, api.hasLatestRevision),
      },
      ...(description === undefined ? {} : { 'api:hasDescription': description }),
      'api:hasOperation': assignments.map((a) => operation(current, object, a)),
    };
    const request = await client.create(object, 'application/ld+json', JSON.stringify(change), 'PATCH');
    return reportRequest(client, request, [requestStatus.ACCEPTED, requestStatus.PENDING]);
  },
});
