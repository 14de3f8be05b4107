import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { projectFile } from '../../project-files.js';
import { VIEWS, type View } from '../../store/query-service.js';

/** A SPARQL query kept in a `.rq` file: its first comment line describes it, a `# view: …` line names its view. */
export interface QueryFile {
  name: string;
  description: string;
  view: View;
  text: string;
}

export function parseQueryFile(name: string, text: string): QueryFile {
  const comments = text
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .map((line) => line.replace(/^#\s*/, ''));
  const viewLine = comments.find((line) => /^view:/i.test(line));
  const view = viewLine?.replace(/^view:\s*/i, '').trim() ?? 'latest';
  if (!(VIEWS as readonly string[]).includes(view))
    throw new Error(`${name}: unknown view "${view}" (one of ${VIEWS.join(', ')})`);
  return { name, description: comments.find((line) => !/^view:/i.test(line)) ?? name, view: view as View, text };
}

export function readQueryFile(path: string): QueryFile {
  return parseQueryFile(basename(path, '.rq'), readFileSync(path, 'utf8'));
}

/** The analytics queries shipped in scripts/queries/, by file name. */
export function shippedQueries(): QueryFile[] {
  const dir = projectFile('scripts/queries');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.rq'))
    .sort()
    .map((f) => readQueryFile(join(dir, f)));
}
