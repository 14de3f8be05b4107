import { ApiFailure, formatApiError, readErrorAnswer } from '../api-errors.js';
import { ServerUnreachable, type ApiClient } from '../api-client.js';
import { EXIT, remoteCommand } from '../command.js';
import { Progress } from './progress.js';
import { openSource, type ImportItem } from './sources.js';
import { ImportState } from './state.js';

/** Requests in flight: enough to keep the server's write path busy, few enough not to crowd out other clients. */
const IN_FLIGHT = 4;

type Outcome = { kind: 'created' | 'present' } | { kind: 'refused'; message: string };

/** Whether an object that names its IRI is on the server already (200) or not (404); other answers are refusals. */
async function exists(client: ApiClient, iri: string): Promise<boolean> {
  const res = await client.send('GET', iri, { accept: 'application/n-triples' });
  if (res.status === 200 || res.status === 404) return res.status === 200;
  throw new ApiFailure(await readErrorAnswer(res));
}

async function importOne(client: ApiClient, state: ImportState, item: ImportItem): Promise<Outcome> {
  try {
    if (item.iri ? await exists(client, item.iri) : state.has(item)) return { kind: 'present' };
    const iri = await client.create('/logistics-objects', item.contentType, item.body);
    if (!item.iri) state.record(item, iri);
    return { kind: 'created' };
  } catch (err) {
    if (err instanceof ApiFailure) return { kind: 'refused', message: formatApiError(err.report) };
    throw err;
  }
}

export const importCommand = remoteCommand({
  name: 'import',
  synopsis: '<directory|file.ndjson|file.nq>',
  description: `Creates many Logistics Objects: each .jsonld/.json/.ttl file of a directory, each line of an .ndjson
file, or each named graph of an .nq file. Resumable: an object whose IRI (@id) is on the server already
is skipped; one without @id is skipped when <input>.import-state records that it went in. Shows a
progress bar on a terminal, then a summary with the server's error for each refused object. Exit 0
when every object is on the server, 1 when some were refused (run it again after fixing them).`,
  example: 'npx onerecord import pieces.ndjson',
  options: {},
  arity: [1, 1],
  async run({ args }, client) {
    const input = args[0];
    const source = await openSource(input, `${client.baseUrl}/logistics-objects/`);
    const state = ImportState.of(input, client.baseUrl);
    const progress = new Progress(source.total, process.stderr.isTTY ? process.stderr : undefined);
    const counts = { created: 0, present: 0 };
    const refused: { position: number; line: string }[] = [];
    let unreachable: ServerUnreachable | undefined;
    const iterator = source.items[Symbol.asyncIterator]();
    let taken = 0;
    const worker = async () => {
      for (let next = await iterator.next(); !next.done && !unreachable; next = await iterator.next()) {
        const position = taken++;
        try {
          const outcome = await importOne(client, state, next.value);
          if (outcome.kind === 'refused') refused.push({ position, line: `  ${next.value.label}: ${outcome.message}` });
          else counts[outcome.kind]++;
          progress.step();
        } catch (err) {
          if (!(err instanceof ServerUnreachable)) throw err;
          unreachable = err;
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    progress.finish();
    if (source.note) console.error(source.note);
    const seconds = progress.elapsedSeconds.toFixed(1);
    console.error(
      `${input}: ${counts.created} created, ${counts.present} already there, ${refused.length} refused, ` +
        `of ${source.total} (${seconds} s)`,
    );
    // Requests run side by side; the summary lists refusals in the order of the input.
    if (refused.length > 0)
      console.error(
        `refused:\n${refused
          .sort((a, b) => a.position - b.position)
          .map((r) => r.line)
          .join('\n')}`,
      );
    if (unreachable) console.error(`stopped: ${unreachable.message}; run the same command again to go on`);
    return refused.length > 0 || unreachable ? EXIT.refused : EXIT.ok;
  },
});
