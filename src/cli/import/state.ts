import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type { ImportItem } from './sources.js';

/**
 * What an import created of the objects that name no IRI of their own, so that running it again
 * skips them: the server cannot be asked about an object whose IRI it chose. One line per object,
 * `<key> <IRI>`, appended as soon as the server answered 201; the key is a hash of the server URL
 * and the object's body, so the same input can go to several servers, and an edited object goes
 * in again.
 */
export class ImportState {
  private readonly done: Set<string>;

  private constructor(
    private readonly path: string,
    private readonly server: string,
  ) {
    const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
    this.done = new Set(
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ')[0]),
    );
  }

  /** The state of importing `input` (a file or a directory) into `server`, kept beside the input. */
  static of(input: string, server: string): ImportState {
    return new ImportState(`${input.replace(/\/+$/, '')}.import-state`, server);
  }

  private key(item: ImportItem): string {
    return createHash('sha256').update(`${this.server}\n${item.contentType}\n${item.body}`).digest('hex');
  }

  has(item: ImportItem): boolean {
    return this.done.has(this.key(item));
  }

  record(item: ImportItem, iri: string): void {
    appendFileSync(this.path, `${this.key(item)} ${iri}\n`);
  }
}
