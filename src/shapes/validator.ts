import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HttpError } from '../errors.js';
import type { Quad, Term } from '../rdf/terms.js';
import { rdf, XSD } from '../rdf/vocab.js';
import { compactIri, compileShapes, type CompiledShapes, type NodeCheck, type PropertyCheck, type ValueCheck } from './compile.js';
import { isWellTyped } from '../rdf/xsd-lexical.js';

export const SHAPES_DIR = fileURLToPath(new URL('../../../shapes/', import.meta.url));
export const SHAPES_FILE = `${SHAPES_DIR}onerecord-shapes.ttl`;
export const STRICT_SHAPES_FILE = `${SHAPES_DIR}strict-shapes.ttl`;

/** One way the data breaks a shape, as SHACL would report it, with a message a person understands. */
export interface Violation {
  /** The node the constraint is about (sh:focusNode). */
  focusNode: string;
  /** The property IRI (sh:resultPath). */
  path: string;
  /** The offending value, when one value is at fault. */
  value?: Term;
  /** e.g. `cargo:grossWeight/cargo:numericalValue must be a number, got "abc"` */
  message: string;
  /** The property shape (or node shape of a closed check) that failed. */
  shape: string;
}

export interface ValidatorOptions {
  /** Refuse properties unknown to the ontologies (the strict shapes). */
  strict?: boolean;
}

/** The error that refuses data with `violations`: one detail per violation (property, focus node, message). */
export function shapeError(violations: readonly Violation[], status: number): HttpError {
  return new HttpError(status, 'shape_violation', violations.map((v) => ({ message: v.message, property: v.path, resource: v.focusNode })));
}

/** The Turtle of the shapes a validator with `options` enforces, as served by GET /shapes. */
export function shapesTurtle(options: ValidatorOptions = {}): string {
  return [SHAPES_FILE, ...(options.strict ? [STRICT_SHAPES_FILE] : [])].map((f) => readFileSync(f, 'utf8')).join('\n');
}

const NUMERIC = new Set(['decimal', 'double', 'float', 'integer', 'int', 'long', 'nonNegativeInteger', 'positiveInteger'].map((t) => `${XSD}${t}`));

/** The number a well-typed numeric literal stands for, for sh:minInclusive; undefined for other literals. */
function numericValue(lexical: string, datatype: string): number | undefined {
  if (!NUMERIC.has(datatype) || !isWellTyped(lexical, datatype)) return undefined;
  const n = Number(lexical.replace(/^\+/, '').replace(/^(-?)INF$/, '$1Infinity'));
  return Number.isNaN(n) ? undefined : n;
}

const termKey = (t: Term) => (t.termType === 'Literal' ? '' : `${t.termType}:${t.value}`);
const show = (t: Term) => (t.termType === 'Literal' ? JSON.stringify(t.value) : t.termType === 'BlankNode' ? 'a blank node' : `<${t.value}>`);
const times = (n: number) => (n === 1 ? 'once' : `${n} times`);

/** The triples of one node: its predicates and their values, in data order. */
type NodeData = Map<string, Term[]>;

/**
 * Checks triples against the compiled shapes: the checks of the request path. The SHACL engine
 * (test/shapes-reference.test.ts) must find the same focus nodes and paths on any data.
 */
export class ShapeValidator {
  constructor(private readonly shapes: CompiledShapes) {}

  static fromFiles(options: ValidatorOptions = {}): ShapeValidator {
    return new ShapeValidator(compileShapes([readFileSync(SHAPES_FILE, 'utf8'), ...(options.strict ? [readFileSync(STRICT_SHAPES_FILE, 'utf8')] : [])]));
  }

  validate(triples: readonly Quad[]): Violation[] {
    const nodes = new Map<string, { term: Term; data: NodeData }>();
    for (const t of triples) {
      const k = termKey(t.subject);
      let node = nodes.get(k);
      if (!node) nodes.set(k, (node = { term: t.subject, data: new Map() }));
      const values = node.data.get(t.predicate.value);
      // A graph is a set: a triple given twice counts once.
      if (!values) node.data.set(t.predicate.value, [t.object]);
      else if (!values.some((v) => v.equals(t.object))) values.push(t.object);
    }
    const typesOf = (t: Term) => nodes.get(termKey(t))?.data.get(rdf.type) ?? [];

    const found: { node: Term; check: PropertyCheck; value?: Term; count?: number }[] = [];
    const closed: { node: Term; check: NodeCheck; predicate: string; value: Term }[] = [];
    for (const { term, data } of nodes.values()) {
      const checks = new Set<NodeCheck>();
      for (const type of data.get(rdf.type) ?? []) {
        for (const c of this.shapes.ancestors(type.value)) for (const check of this.shapes.byClass.get(c) ?? []) checks.add(check);
      }
      for (const predicate of data.keys()) for (const check of this.shapes.bySubjectOf.get(predicate) ?? []) checks.add(check);
      for (const check of checks) {
        for (const property of check.properties) {
          const values = data.get(property.path) ?? [];
          if ((property.min !== undefined && values.length < property.min) || (property.max !== undefined && values.length > property.max)) {
            found.push({ node: term, check: property, count: values.length });
          }
          if (property.value) for (const v of values) if (!this.accepts(property.value, v, typesOf)) found.push({ node: term, check: property, value: v });
        }
        if (check.allowed) {
          for (const [predicate, values] of data) if (!check.allowed.has(predicate)) for (const v of values) closed.push({ node: term, check, predicate, value: v });
        }
      }
    }
    if (found.length === 0 && closed.length === 0) return [];

    const pathTo = this.pathsFromRoots(triples);
    const at = (node: Term, predicate: string) => [...(pathTo.get(termKey(node)) ?? []), compactIri(predicate)].join('/');
    return [
      ...found.map(({ node, check, value, count }): Violation => ({
        focusNode: node.value,
        path: check.path,
        shape: check.shape,
        ...(value && { value }),
        message:
          value !== undefined
            ? `${at(node, check.path)} must be ${check.value!.expected}, got ${show(value)}`
            : check.max !== undefined && count! > check.max
              ? `${at(node, check.path)} may appear at most ${times(check.max)}, got ${count} values`
              : `${at(node, check.path)} must appear at least ${times(check.min!)}, got ${count === 0 ? 'none' : count}`,
      })),
      ...closed.map(({ node, check, predicate, value }): Violation => ({
        focusNode: node.value,
        path: predicate,
        shape: check.shape,
        value,
        message: `${at(node, predicate)} is not a property of the ONE Record ontologies (strict mode)`,
      })),
    ];
  }

  private accepts(check: ValueCheck, value: Term, typesOf: (t: Term) => Term[]): boolean {
    switch (check.kind) {
      case 'in':
        return value.termType === 'NamedNode' && check.values.has(value.value);
      case 'class': {
        if (value.termType === 'Literal') return false;
        const types = typesOf(value);
        return types.length === 0 || types.some((t) => check.classes.some((c) => this.shapes.ancestors(t.value).has(c)));
      }
      case 'datatype': {
        if (value.termType !== 'Literal') return false;
        const datatype = value.datatype.value;
        if (!check.accepted.has(datatype) || !isWellTyped(value.value, datatype)) return false;
        if (check.minInclusive !== undefined && !((numericValue(value.value, datatype) ?? -Infinity) >= check.minInclusive)) return false;
        if (check.maxLength !== undefined && value.value.length > check.maxLength) return false;
        return check.pattern === undefined || check.pattern.test(value.value);
      }
    }
  }

  /** For each node, the predicates that lead to it from a node nothing points to (for messages). */
  private pathsFromRoots(triples: readonly Quad[]): Map<string, string[]> {
    const referenced = new Set(triples.filter((t) => t.predicate.value !== rdf.type).map((t) => termKey(t.object)));
    const paths = new Map<string, string[]>();
    const todo: string[] = [];
    for (const t of triples) {
      const k = termKey(t.subject);
      if (!referenced.has(k) && !paths.has(k)) (paths.set(k, []), todo.push(k));
    }
    while (todo.length > 0) {
      const k = todo.shift()!;
      for (const t of triples) {
        if (termKey(t.subject) !== k || t.predicate.value === rdf.type) continue;
        const child = termKey(t.object);
        if (child && !paths.has(child)) (paths.set(child, [...paths.get(k)!, compactIri(t.predicate.value)]), todo.push(child));
      }
    }
    return paths;
  }
}
