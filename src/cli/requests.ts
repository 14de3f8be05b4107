import { API, api, rdf, requestStatus } from '../rdf/vocab.js';
import { RDF_MEDIA_TYPES, type ApiClient } from './api-client.js';
import { formatApiError, storedErrors } from './api-errors.js';
import { EXIT, flagOption, remoteCommand, textOption, type Command } from './command.js';
import { Graph } from './graph.js';
import { LISTING_FORMATS, printListing } from './listing.js';
import { localName } from './output.js';

/**
 * Reads an action request back and says where it stands: its IRI on stdout, its status (and the
 * errors of a failed or rejected one) on stderr. Exit 1 unless it reached one of `wanted`.
 */
export async function reportRequest(client: ApiClient, iri: string, wanted: readonly string[]): Promise<number> {
  const res = await client.expect([200], 'GET', iri, { accept: RDF_MEDIA_TYPES.nt });
  const graph = Graph.fromNTriples(await res.text());
  const status = graph.value(iri, api.hasRequestStatus);
  console.log(iri);
  console.error(`status: ${localName(status)}`);
  for (const error of storedErrors(graph, iri)) console.error(`  ${formatApiError(error)}`);
  return wanted.includes(status) ? EXIT.ok : EXIT.refused;
}

export const requestsCommand = remoteCommand({
  name: 'requests',
  synopsis: `[--pending] [--object <iri|id>] [--format ${LISTING_FORMATS.join('|')}]`,
  description: `Lists the action requests (change, access delegation, subscription requests) of this server,
oldest first: all, the pending ones, or those about one Logistics Object. For internal actors.`,
  example: 'npx onerecord requests --pending',
  options: { pending: { type: 'boolean' }, object: { type: 'string' }, format: { type: 'string' } },
  arity: [0, 0],
  async run({ values }, client) {
    const object = textOption(values, 'object');
    const query = {
      status: flagOption(values, 'pending') ? requestStatus.PENDING : undefined,
      'logistics-object': object && client.objectIri(object),
    };
    await printListing(client, '/action-requests', query, values, {
      header: ['request', 'type', 'status', 'object', 'requested by', 'requested at'],
      row: (graph, item) => [
        item,
        localName(graph.values(item, rdf.type).find((t) => t.startsWith(API)) ?? ''),
        localName(graph.value(item, api.hasRequestStatus)),
        graph.value(item, api.hasLogisticsObject),
        graph.value(item, api.isRequestedBy),
        graph.value(item, api.isRequestedAt),
      ],
    });
    return EXIT.ok;
  },
});

function decisionCommand(name: 'accept' | 'reject', status: string): Command {
  const code = localName(status);
  const note = name === 'accept' ? ' (a Change that no longer applies fails)' : '';
  return remoteCommand({
    name,
    synopsis: '<request iri|id>',
    description: [
      `${name === 'accept' ? 'Accepts' : 'Rejects'} a pending action request (PATCH ?status=${code}), then prints its`,
      `IRI and, on stderr, the status it has now. Exit 1 if it does not end ${code}${note}.`,
    ].join('\n'),
    example: `npx onerecord ${name} "$REQUEST"`,
    options: {},
    arity: [1, 1],
    async run({ args }, client) {
      const iri = client.requestIri(args[0]);
      await client.expect([204], 'PATCH', iri, { query: { status } });
      return reportRequest(client, iri, [status]);
    },
  });
}

export const acceptCommand = decisionCommand('accept', requestStatus.ACCEPTED);
export const rejectCommand = decisionCommand('reject', requestStatus.REJECTED);

export const revokeCommand = remoteCommand({
  name: 'revoke',
  synopsis: '<request iri|id>',
  description: `Revokes an action request (DELETE): a pending ChangeRequest, a pending or accepted access
delegation or subscription request. Prints its IRI and, on stderr, its status.`,
  example: 'npx onerecord revoke "$REQUEST"',
  options: {},
  arity: [1, 1],
  async run({ args }, client) {
    const iri = client.requestIri(args[0]);
    await client.expect([204], 'DELETE', iri);
    return reportRequest(client, iri, [requestStatus.REVOKED]);
  },
});
