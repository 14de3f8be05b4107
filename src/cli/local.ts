import { isValidIri } from '../rdf/terms.js';
import { countOption, EXIT, localCommand, textOption, UsageError } from './command.js';
import { localConfig } from './local-config.js';
import { holderToken } from './local-token.js';

export const tokenCommand = localCommand({
  name: 'token',
  synopsis: '[--agent <logistics agent IRI>] [--lifetime <seconds>]',
  description: `Prints a bearer token of the embedded identity provider for the agent (default: the data holder).
Reads the key from DATA_DIR (or the dataDir of CONFIG_FILE); the server must have started once with it.`,
  example: 'TOKEN=$(npx onerecord token --lifetime 600)',
  options: { agent: { type: 'string' }, lifetime: { type: 'string' } },
  arity: [0, 0],
  async run({ values }) {
    const agent = textOption(values, 'agent');
    if (agent !== undefined && !isValidIri(agent))
      throw new UsageError('--agent must be an absolute IRI (the logistics agent the token speaks for)');
    console.log(await holderToken(agent, countOption(values, 'lifetime')));
    return EXIT.ok;
  },
});

export const exportCommand = localCommand({
  name: 'export',
  synopsis: '[--out <file>]',
  description: `Writes everything the data directory holds (snapshot, journal, revision archive) as N-Quads, to the
file or to stdout, without loading it into memory: for moving the data to a larger backend. Stop the
server first (or export a copy of the directory). Never overwrites a file.`,
  example: 'DATA_DIR=./data npx onerecord export --out all.nq',
  options: { out: { type: 'string' } },
  arity: [0, 0],
  async run({ values }) {
    const out = textOption(values, 'out');
    const { dataDir } = await localConfig();
    // Loaded here only: it brings the embedded store (Oxigraph's WASM), which no other command needs.
    const { exportDataDirectory } = await import('../store/embedded/export/export.js');
    const { lines, droppedTail } = await exportDataDirectory(dataDir, out);
    if (droppedTail)
      console.error(`left out the journal's last record: ${droppedTail} (a write torn by a crash, never acknowledged)`);
    console.error(`exported ${lines} N-Quads lines from ${dataDir}${out ? ` to ${out}` : ''}`);
    return EXIT.ok;
  },
});
