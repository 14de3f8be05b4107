import { readFileSync } from 'node:fs';
import rdf from 'rdf-ext';
import { Parser } from 'n3';
import Validator from 'shacl-engine/Validator.js';
import { SHAPES_FILE, STRICT_SHAPES_FILE } from '../../src/shapes/validator.js';
import type { Quad } from '../../src/rdf/terms.js';

/** What both validators are compared on: whether the data conforms, and which focus node / path pairs fail. */
export interface Verdict {
  conforms: boolean;
  failures: string[];
}

export const failureKey = (focusNode: string, path: string) => `${focusNode} ${path}`;

/** shacl-engine, the reference SHACL implementation, loaded with the generated shapes. */
export class ReferenceValidator {
  private readonly validator: Validator;
  private readonly hierarchy: Quad[];

  constructor(options: { strict?: boolean } = {}) {
    const quads = [SHAPES_FILE, ...(options.strict ? [STRICT_SHAPES_FILE] : [])].flatMap((f) =>
      new Parser().parse(readFileSync(f, 'utf8')),
    );
    this.validator = new Validator(rdf.dataset(quads), { factory: rdf });
    // SHACL reads rdfs:subClassOf from the data graph; the shapes carry the ontology's hierarchy.
    this.hierarchy = quads.filter((q) => q.predicate.value === 'http://www.w3.org/2000/01/rdf-schema#subClassOf');
  }

  async verdict(triples: readonly Quad[]): Promise<Verdict> {
    const report = await this.validator.validate({ dataset: rdf.dataset([...triples, ...this.hierarchy]) });
    const failures = new Set<string>();
    for (const r of report.results) {
      const path = r.path?.[0]?.predicates?.[0]?.value ?? '';
      failures.add(failureKey(r.focusNode.term.value, path));
    }
    return { conforms: report.conforms, failures: [...failures].sort() };
  }
}
