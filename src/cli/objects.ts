import { extname } from 'node:path';
import {
  choiceOption,
  countOption,
  EXIT,
  flagOption,
  readInputFile,
  remoteCommand,
  textOption,
  UsageError,
} from './command.js';
import { RDF_FORMATS, RDF_MEDIA_TYPES } from './api-client.js';
import { printText } from './output.js';

/** The body types POST /logistics-objects takes, by file extension. */
const OBJECT_FILE_TYPES: Record<string, string> = {
  '.jsonld': 'application/ld+json',
  '.json': 'application/ld+json',
  '.ttl': 'text/turtle',
};

/** The Content-Type of an object file, or undefined for a file that is not one. */
export function objectFileType(path: string): string | undefined {
  return OBJECT_FILE_TYPES[extname(path).toLowerCase()];
}

export const getCommand = remoteCommand({
  name: 'get',
  synopsis: '<iri|id> [--at <time>] [--revision <n>] [--embedded] [--format jsonld|turtle|nt]',
  description: `Prints a Logistics Object: the latest revision, revision n, or the one valid at a time (RFC 3339 or
YYYYMMDDThhmmssZ). An id is taken as {url}/logistics-objects/{id}. --embedded inlines linked objects.`,
  example: 'npx onerecord get "$PIECE" --revision 1 --format turtle',
  options: {
    at: { type: 'string' },
    revision: { type: 'string' },
    embedded: { type: 'boolean' },
    format: { type: 'string' },
  },
  arity: [1, 1],
  async run({ args, values }, client) {
    const format = choiceOption(values, 'format', RDF_FORMATS, 'jsonld');
    const revision = countOption(values, 'revision');
    const res = await client.expect([200], 'GET', client.objectIri(args[0]), {
      accept: RDF_MEDIA_TYPES[format],
      query: {
        at: textOption(values, 'at'),
        revision: revision?.toString(),
        embedded: flagOption(values, 'embedded') ? 'true' : undefined,
      },
    });
    printText(await res.text());
    return EXIT.ok;
  },
});

export const createCommand = remoteCommand({
  name: 'create',
  synopsis: '<file.jsonld|file.json|file.ttl>',
  description: `Creates one Logistics Object from a JSON-LD or Turtle file and prints its IRI. Many objects at once:
onerecord import.`,
  example: 'PIECE=$(npx onerecord create piece.jsonld)',
  options: {},
  arity: [1, 1],
  async run({ args }, client) {
    const contentType = objectFileType(args[0]);
    if (!contentType) throw new UsageError(`${args[0]}: give a .jsonld, .json or .ttl file`);
    console.log(await client.create('/logistics-objects', contentType, readInputFile(args[0])));
    return EXIT.ok;
  },
});
