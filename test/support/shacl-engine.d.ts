// Types for the parts of shacl-engine and rdf-ext (untyped JavaScript packages) the reference test uses.
declare module 'shacl-engine/Validator.js' {
  import type { DatasetCore, Term } from '@rdfjs/types';
  interface ValidationResult {
    focusNode: { term: Term };
    path?: { predicates: Term[] }[];
    value?: { term: Term };
  }
  export default class Validator {
    constructor(shapes: DatasetCore, options: { factory: unknown });
    validate(data: { dataset: DatasetCore }): Promise<{ conforms: boolean; results: ValidationResult[] }>;
  }
}
declare module 'rdf-ext' {
  import type { DatasetCore, Quad } from '@rdfjs/types';
  const rdf: { dataset(quads?: Iterable<Quad>): DatasetCore };
  export default rdf;
}
