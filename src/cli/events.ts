import { CODE_LISTS, OUTPUT_CONTEXT, cargo } from '../rdf/vocab.js';
import { EXIT, countOption, remoteCommand, textOption } from './command.js';
import { LISTING_FORMATS, printListing } from './listing.js';
import { localName } from './output.js';

/** Where a short event code (`DEP`) comes from: IATA's status codes, as in the cargo ontology's examples. */
const STATUS_CODES = `${CODE_LISTS}StatusCode#`;

export const eventsCommand = remoteCommand({
  name: 'events',
  synopsis: `<iri|id> [--code <code>[,<code>]] [--since <time>] [--limit <n>] [--format ${LISTING_FORMATS.join('|')}]`,
  description: `Lists the Logistics Events of an object, in the order they were recorded: all, those with one of
the codes, those created after a time (--since, RFC 3339 or YYYYMMDDThhmmssZ). At most --limit
(default 100, at most 1000).`,
  example: 'npx onerecord events "$PIECE" --code DEP,ARR --since 2024-05-01T00:00:00Z',
  options: {
    code: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    format: { type: 'string' },
  },
  arity: [1, 1],
  async run({ args, values }, client) {
    const query = {
      'event-code': textOption(values, 'code'),
      'created-after': textOption(values, 'since'),
      limit: countOption(values, 'limit')?.toString(),
    };
    await printListing(client, `${client.objectIri(args[0])}/logistics-events`, query, values, {
      header: ['event', 'code', 'event date', 'created'],
      row: (graph, item) => [
        item,
        localName(graph.value(item, cargo.eventCode)),
        graph.value(item, cargo.eventDate),
        graph.value(item, cargo.creationDate),
      ],
    });
    return EXIT.ok;
  },
});

export const eventCommand = remoteCommand({
  name: 'event',
  synopsis: '<iri|id> <code> [--date <time>] [--time-type ACTUAL|ESTIMATED|EXPECTED|PLANNED|REQUESTED]',
  description: `Posts a Logistics Event for an object and prints its IRI. The code is a status code (DEP, ARR, …)
or the IRI of a code-list entry; the event date is --date (RFC 3339), else now.`,
  example: 'npx onerecord event "$PIECE" DEP --date 2024-05-01T10:00:00Z',
  options: { date: { type: 'string' }, 'time-type': { type: 'string' } },
  arity: [2, 2],
  async run({ args, values }, client) {
    const [object, code] = args;
    const timeType = textOption(values, 'time-type');
    const event = {
      '@context': OUTPUT_CONTEXT,
      '@type': 'cargo:LogisticsEvent',
      'cargo:eventCode': { '@id': code.includes(':') ? code : STATUS_CODES + code },
      'cargo:eventDate': { '@type': 'xsd:dateTime', '@value': textOption(values, 'date') ?? new Date().toISOString() },
      ...(timeType === undefined ? {} : { 'cargo:eventTimeType': { '@id': `cargo:${timeType}` } }),
    };
    console.log(
      await client.create(`${client.objectIri(object)}/logistics-events`, 'application/ld+json', JSON.stringify(event)),
    );
    return EXIT.ok;
  },
});
