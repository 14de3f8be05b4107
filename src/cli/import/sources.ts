import { createReadStream, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { DataFactory, Parser, Writer } from 'n3';
import type { Quad, Term } from '../../rdf/terms.js';
import { INTERNAL_SCHEME, rdf } from '../../rdf/vocab.js';
import { UsageError } from '../command.js';
import { objectFileType } from '../objects.js';

/** One object to create: its body as POST /logistics-objects takes it. */
export interface ImportItem {
  /** Where it is in the input, for the summary: a file name, `line 12`, a graph name. */
  label: string;
  body: string;
  contentType: string;
  /**
   * The object's IRI when the input names one of this server: what resuming asks the server about.
   * Another server's IRI is never asked for (it would get the token); this server refuses it.
   */
  iri?: string;
}

export interface ImportSource {
  total: number;
  items: AsyncIterable<ImportItem>;
  /** Said once in the summary: what the input held that is not an object. */
  note?: string;
}

const LINE_FILES = new Set(['.ndjson', '.jsonl']);

/** The `@id` of a JSON-LD object, resolved as the server resolves it (against the objects' prefix). */
function jsonLdIri(body: string, objectsPrefix: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { '@id'?: unknown })['@id'];
    return typeof id === 'string' && !id.startsWith('_:') ? new URL(id, objectsPrefix).href : undefined;
  } catch {
    return undefined; // not JSON: the server says what is wrong with it
  }
}

/** The one named subject of a Turtle document that no other triple points to: the top-level object. */
function turtleIri(body: string, objectsPrefix: string): string | undefined {
  try {
    const triples = new Parser({ baseIRI: objectsPrefix }).parse(body);
    const pointedTo = new Set(triples.map((t) => t.object.value));
    const tops = new Set(
      triples
        .filter((t) => t.subject.termType === 'NamedNode' && !pointedTo.has(t.subject.value))
        .map((t) => t.subject.value),
    );
    return tops.size === 1 ? [...tops][0] : undefined;
  } catch {
    return undefined;
  }
}

const ownIri = (iri: string | undefined, objectsPrefix: string) => (iri?.startsWith(objectsPrefix) ? iri : undefined);

function item(label: string, body: string, contentType: string, objectsPrefix: string): ImportItem {
  const iri = contentType === 'text/turtle' ? turtleIri(body, objectsPrefix) : jsonLdIri(body, objectsPrefix);
  return { label, body, contentType, iri: ownIri(iri, objectsPrefix) };
}

function directorySource(dir: string, objectsPrefix: string): ImportSource {
  const files = readdirSync(dir)
    .filter((f) => objectFileType(f) && statSync(join(dir, f)).isFile())
    .sort();
  async function* items(): AsyncIterable<ImportItem> {
    for (const file of files)
      yield item(file, readFileSync(join(dir, file), 'utf8'), objectFileType(file)!, objectsPrefix);
  }
  return { total: files.length, items: items() };
}

async function* lines(path: string): AsyncIterable<{ number: number; text: string }> {
  let number = 0;
  for await (const text of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    number++;
    if (text.trim() !== '') yield { number, text };
  }
}

/** One JSON-LD object per line, read as it goes: only the count is taken up front, for the ETA. */
async function lineSource(path: string, objectsPrefix: string): Promise<ImportSource> {
  let total = 0;
  for await (const _ of lines(path)) total++;
  async function* items(): AsyncIterable<ImportItem> {
    for await (const line of lines(path))
      yield item(`line ${line.number}`, line.text, 'application/ld+json', objectsPrefix);
  }
  return { total, items: items() };
}

/**
 * N-Quads hold one object per named graph, named by the object's IRI (as `onerecord export` writes
 * the latest revisions). Other graphs (revisions, events, bookkeeping) are left out. Embedded
 * objects' `internal:` ids become blank nodes: the server gives those ids and refuses them from clients.
 */
function nQuadsSource(path: string, objectsPrefix: string): ImportSource {
  const graphs = new Map<string, Quad[]>();
  for (const q of new Parser({ format: 'N-Quads' }).parse(readFileSync(path, 'utf8'))) {
    if (q.graph.termType !== 'NamedNode') continue;
    const list = graphs.get(q.graph.value);
    if (list) list.push(q);
    else graphs.set(q.graph.value, [q]);
  }
  const isObjectGraph = (name: string, quads: Quad[]) =>
    !name.includes('/logistics-events/') &&
    quads.some((q) => q.subject.value === name && q.predicate.value === rdf.type);
  const objects = [...graphs].filter(([name, quads]) => isObjectGraph(name, quads));
  const blank = (t: Term) =>
    t.termType === 'NamedNode' && t.value.startsWith(INTERNAL_SCHEME)
      ? DataFactory.blankNode(t.value.slice(INTERNAL_SCHEME.length))
      : t;
  async function* items(): AsyncIterable<ImportItem> {
    for (const [name, quads] of objects) {
      const triples = quads.map((q) =>
        DataFactory.quad(blank(q.subject) as Quad['subject'], q.predicate, blank(q.object) as Quad['object']),
      );
      yield {
        label: name,
        body: new Writer({ format: 'N-Triples' }).quadsToString(triples),
        contentType: 'text/turtle',
        iri: ownIri(name, objectsPrefix),
      };
    }
  }
  const left = graphs.size - objects.length;
  return {
    total: objects.length,
    items: items(),
    note:
      left > 0 ? `left out ${left} graphs that are not Logistics Objects (revisions, events, bookkeeping)` : undefined,
  };
}

/** The objects of a directory of .jsonld/.json/.ttl files, an .ndjson file or an .nq file. */
export async function openSource(path: string, objectsPrefix: string): Promise<ImportSource> {
  let directory: boolean;
  try {
    directory = statSync(path).isDirectory();
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (directory) return directorySource(path, objectsPrefix);
  const extension = extname(path).toLowerCase();
  if (LINE_FILES.has(extension)) return lineSource(path, objectsPrefix);
  if (extension === '.nq') return nQuadsSource(path, objectsPrefix);
  throw new UsageError(
    `${path}: give a directory of .jsonld/.json/.ttl files, an .ndjson file (one object per line) or an .nq file`,
  );
}
