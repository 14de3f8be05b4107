import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HttpError } from '../errors.js';
import type { Quad, Term } from '../rdf/terms.js';
import { rdfTermKey, valueKey, type NodeTriples } from '../rdf/triples.js';
import { rdf, XSD } from '../rdf/vocab.js';
import {
  compactIri,
  compileShapes,
  type CompiledShapes,
  type NodeCheck,
  type PropertyCheck,
  type ValueCheck,
} from './compile.js';
import { isWellTyped } from '../rdf/xsd-lexical.js';

export const SHAPES_DIR = fileURLToPath(new URL('../../../shapes/', import.meta.url));
export const SHAPES_FILE = `${SHAPES_DIR}onerecord-shapes.ttl`;
export const STRICT_SHAPES_FILE = `${SHAPES_DIR}strict-shapes.ttl`;

/** One way the data breaks a shape, as SHACL would report it, with a message a person understands. */
export interface Violation {
  /** The node the constraint is about (sh:focusNode). */
  focusNode: string;
  /**
   * What the error's `hasResource` names: the focus node when it is an IRI the client can use,
   * else (a blank node, or an `internal:` node the server named) the object the message's path
   * starts from; undefined when that has no such IRI either (an API object sent without @id).
   */
  resource?: string;
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
  return new HttpError(
    status,
    'shape_violation',
    violations.map((v) => ({ message: v.message, property: v.path, resource: v.resource })),
  );
}

/** The Turtle of the shapes a validator with `options` enforces, as served by GET /shapes. */
export function shapesTurtle(options: ValidatorOptions = {}): string {
  return [SHAPES_FILE, ...(options.strict ? [STRICT_SHAPES_FILE] : [])].map((f) => readFileSync(f, 'utf8')).join('\n');
}

const NUMERIC = new Set(
  ['decimal', 'double', 'float', 'integer', 'int', 'long', 'nonNegativeInteger', 'positiveInteger'].map(
    (t) => `${XSD}${t}`,
  ),
);

/** The number a well-typed numeric literal stands for, for sh:minInclusive; undefined for other literals. */
function numericValue(lexical: string, datatype: string): number | undefined {
  if (!NUMERIC.has(datatype) || !isWellTyped(lexical, datatype)) return undefined;
  const n = Number(lexical.replace(/^\+/, '').replace(/^(-?)INF$/, '$1Infinity'));
  return Number.isNaN(n) ? undefined : n;
}

const termKey = (t: Term) => (t.termType === 'Literal' ? '' : `${t.termType}:${t.value}`);
const show = (t: Term) =>
  t.termType === 'Literal' ? JSON.stringify(t.value) : t.termType === 'BlankNode' ? 'a blank node' : `<${t.value}>`;
/**
 * Whether a client can name `t` in a request: an IRI, but not an `internal:` id, which may be one this
 * request's blank nodes were given.
 */
const isNameable = (t: Term) => t.termType === 'NamedNode' && !t.value.startsWith('internal:');
const times = (n: number) => (n === 1 ? 'once' : `${n} times`);

/**
 * What of some data `validate` checks: per node (by IRI), all of it ('whole') or the predicates a
 * change touched, each with the values it added (by `rdfTermKey`: only those have their values checked).
 */
export type Focus = ReadonlyMap<string, 'whole' | ReadonlyMap<string, ReadonlySet<string>>>;

/**
 * The focus of a change from `removed` to `added` on data that conformed before: the predicates it
 * touches and the values it adds; a node whose types it changes is checked whole, and so are the
 * values that point at such a node (class checks read the types of values).
 */
export function changeFocus(triples: readonly Quad[], added: readonly Quad[], removed: readonly Quad[]): Focus {
  const focus = new Map<string, 'whole' | Map<string, Set<string>>>();
  const retyped = new Set<string>();
  const touch = (t: Quad, value?: Term) => {
    let node = focus.get(t.subject.value);
    if (node === 'whole') return;
    if (!node) {
      node = new Map();
      focus.set(t.subject.value, node);
    }
    let values = node.get(t.predicate.value);
    if (!values) {
      values = new Set();
      node.set(t.predicate.value, values);
    }
    if (value) values.add(rdfTermKey(value));
  };
  for (const [list, isAdded] of [
    [added, true],
    [removed, false],
  ] as const) {
    for (const t of list) {
      if (t.predicate.value === rdf.type) {
        focus.set(t.subject.value, 'whole');
        retyped.add(t.subject.value);
      } else touch(t, isAdded ? t.object : undefined);
    }
  }
  if (retyped.size > 0)
    for (const t of triples) if (t.object.termType !== 'Literal' && retyped.has(t.object.value)) touch(t, t.object);
  return focus;
}

/** The rdf:type values of each subject, by `termKey`. */
function typesByNode(triples: readonly Quad[]): Map<string, Term[]> {
  const types = new Map<string, Term[]>();
  for (const t of triples) {
    if (t.predicate.value !== rdf.type) continue;
    const k = termKey(t.subject);
    const list = types.get(k);
    if (!list) types.set(k, [t.object]);
    else if (!list.some((v) => v.equals(t.object))) list.push(t.object);
  }
  return types;
}

/** Each node's triples (see `NodeTriples`), by `termKey` of the node; only the nodes `focus` names, when given. */
function nodesIn(triples: readonly Quad[], focus?: Focus): Map<string, Map<string, Map<string, Quad>>> {
  const nodes = new Map<string, Map<string, Map<string, Quad>>>();
  for (const t of triples) {
    if (focus && !focus.has(t.subject.value)) continue;
    const k = termKey(t.subject);
    let node = nodes.get(k);
    if (!node) {
      node = new Map();
      nodes.set(k, node);
    }
    let values = node.get(t.predicate.value);
    if (!values) {
      values = new Map();
      node.set(t.predicate.value, values);
    }
    // A graph is a set: a triple given twice counts once.
    values.set(rdfTermKey(t.object), t);
  }
  return nodes;
}

const objectsOf = (values: ReadonlyMap<string, Quad> | undefined): Term[] =>
  values ? [...values.values()].map((t) => t.object) : [];

type TypesOf = (t: Term) => Term[];
/** The predicates a change touched, with the values it added (see `Focus`); undefined: the whole node. */
type Changed = ReadonlyMap<string, ReadonlySet<string>> | undefined;
/** A property check a node fails: a value it refuses, or the count of values. */
interface Found {
  node: Term;
  check: PropertyCheck;
  value?: Term;
  count?: number;
}
/** A predicate a closed node shape (strict mode) does not allow. */
interface Closed {
  node: Term;
  check: NodeCheck;
  predicate: string;
  value: Term;
}
interface Findings {
  found: Found[];
  closed: Closed[];
}

/** The message of a failed property check, at `where` (the path from the node nothing points to). */
function foundMessage(where: string, { check, value, count }: Found): string {
  if (value !== undefined) return `${where} must be ${check.value!.expected}, got ${show(value)}`;
  if (check.max !== undefined && count! > check.max)
    return `${where} may appear at most ${times(check.max)}, got ${count} values`;
  return `${where} must appear at least ${times(check.min!)}, got ${count === 0 ? 'none' : count}`;
}

/**
 * Checks triples against the compiled shapes: the checks of the request path. The SHACL engine
 * (test/shapes-reference.test.ts) must find the same focus nodes and paths on any data.
 */
export class ShapeValidator {
  constructor(private readonly shapes: CompiledShapes) {}

  static fromFiles(options: ValidatorOptions = {}): ShapeValidator {
    return new ShapeValidator(
      compileShapes([
        readFileSync(SHAPES_FILE, 'utf8'),
        ...(options.strict ? [readFileSync(STRICT_SHAPES_FILE, 'utf8')] : []),
      ]),
    );
  }

  /**
   * The violations of `triples`; with `focus` (see `changeFocus`), of what it names only, so that a
   * caller that knows the data conformed before a change pays for the change, not the data. `byNode`:
   * the same triples by subject IRI (no blank nodes), so that only what the focus names is read.
   */
  validate(triples: readonly Quad[], focus?: Focus, byNode?: ReadonlyMap<string, NodeTriples>): Violation[] {
    const keyOf = byNode ? valueKey : termKey;
    const nodes: ReadonlyMap<string, NodeTriples> = byNode ?? nodesIn(triples, focus);
    // The types of the nodes outside the focus, for the class checks of values: found when first asked for.
    let otherTypes: Map<string, Term[]> | undefined;
    const typesOf = (t: Term) => {
      const node = nodes.get(keyOf(t));
      if (node || byNode || !focus) return objectsOf(node?.get(rdf.type));
      otherTypes ??= typesByNode(triples);
      return otherTypes.get(termKey(t)) ?? [];
    };
    const checked = byNode && focus ? [...focus.keys()].flatMap((iri) => byNode.get(iri) ?? []) : nodes.values();
    const findings: Findings = { found: [], closed: [] };
    for (const data of checked) {
      const term = data.values().next().value!.values().next().value!.subject;
      const scope = focus?.get(term.value);
      if (focus && !scope) continue;
      // Undefined: every check of the node; else only what concerns the changed predicates.
      this.checkNode(term, data, scope === 'whole' ? undefined : scope, typesOf, findings);
    }
    if (findings.found.length === 0 && findings.closed.length === 0) return [];
    return this.describe(triples, findings);
  }

  /**
   * The checks that apply to a node, by its classes and by the predicates it has; `brought`: those a
   * changed predicate brings, which may be new to the node, so they are run whole.
   */
  private checksOf(data: NodeTriples, changed: Changed): { checks: Set<NodeCheck>; brought: Set<NodeCheck> } {
    const checks = new Set<NodeCheck>();
    const brought = new Set<NodeCheck>();
    for (const type of objectsOf(data.get(rdf.type))) {
      for (const c of this.shapes.ancestors(type.value))
        for (const check of this.shapes.byClass.get(c) ?? []) checks.add(check);
    }
    for (const predicate of data.keys()) {
      for (const check of this.shapes.bySubjectOf.get(predicate) ?? []) {
        checks.add(check);
        if (changed?.has(predicate)) brought.add(check);
      }
    }
    return { checks, brought };
  }

  private checkNode(term: Term, data: NodeTriples, changed: Changed, typesOf: TypesOf, findings: Findings): void {
    const { checks, brought } = this.checksOf(data, changed);
    for (const check of checks) {
      const whole = !changed || brought.has(check);
      for (const property of check.properties) {
        const added = whole ? 'all' : changed.get(property.path);
        if (added) this.checkProperty(term, data, property, added, typesOf, findings.found);
      }
      if (!check.allowed) continue;
      for (const predicate of whole ? data.keys() : changed.keys()) {
        if (check.allowed.has(predicate)) continue;
        for (const { object } of data.get(predicate)?.values() ?? [])
          findings.closed.push({ node: term, check, predicate, value: object });
      }
    }
  }

  /** Checks one property of a node: its count, and its values (`added`: all, or the keys of those a change added). */
  private checkProperty(
    node: Term,
    data: NodeTriples,
    property: PropertyCheck,
    added: 'all' | ReadonlySet<string>,
    typesOf: TypesOf,
    found: Found[],
  ): void {
    const values = data.get(property.path);
    const count = values?.size ?? 0;
    if ((property.min !== undefined && count < property.min) || (property.max !== undefined && count > property.max))
      found.push({ node, check: property, count });
    if (!property.value || !values) return;
    // All: every value; else the values the change added (the others were checked before).
    const toCheck = added === 'all' ? values.values() : [...added].flatMap((id) => values.get(id) ?? []);
    for (const { object } of toCheck)
      if (!this.accepts(property.value, object, typesOf)) found.push({ node, check: property, value: object });
  }

  /** The findings as violations, each message saying where the value is from the node nothing points to. */
  private describe(triples: readonly Quad[], { found, closed }: Findings): Violation[] {
    const pathTo = this.pathsFromRoots(triples);
    const at = (node: Term, predicate: string) =>
      [...(pathTo.get(termKey(node))?.path ?? []), compactIri(predicate)].join('/');
    const resourceOf = (node: Term) => {
      const named = isNameable(node) ? node : pathTo.get(termKey(node))?.root;
      return named && isNameable(named) ? named.value : undefined;
    };
    return [
      ...found.map(
        (f): Violation => ({
          focusNode: f.node.value,
          resource: resourceOf(f.node),
          path: f.check.path,
          shape: f.check.shape,
          ...(f.value && { value: f.value }),
          message: foundMessage(at(f.node, f.check.path), f),
        }),
      ),
      ...closed.map(
        ({ node, check, predicate, value }): Violation => ({
          focusNode: node.value,
          resource: resourceOf(node),
          path: predicate,
          shape: check.shape,
          value,
          message: `${at(node, predicate)} is not a property of the ONE Record ontologies (strict mode)`,
        }),
      ),
    ];
  }

  private accepts(check: ValueCheck, value: Term, typesOf: (t: Term) => Term[]): boolean {
    switch (check.kind) {
      case 'in':
        return value.termType === 'NamedNode' && check.values.has(value.value);
      case 'class': {
        if (value.termType === 'Literal') return false;
        const types = typesOf(value);
        return (
          types.length === 0 || types.some((t) => check.classes.some((c) => this.shapes.ancestors(t.value).has(c)))
        );
      }
      case 'datatype': {
        if (value.termType === 'NamedNode') return check.iris === true;
        if (value.termType !== 'Literal') return false;
        const datatype = value.datatype.value;
        if (!check.accepted.has(datatype) || !isWellTyped(value.value, datatype)) return false;
        if (
          check.minInclusive !== undefined &&
          !((numericValue(value.value, datatype) ?? -Infinity) >= check.minInclusive)
        )
          return false;
        if (check.maxLength !== undefined && value.value.length > check.maxLength) return false;
        return check.pattern === undefined || check.pattern.test(value.value);
      }
    }
  }

  /** For each node, a node nothing points to and the predicates that lead from it to the node (for messages). */
  private pathsFromRoots(triples: readonly Quad[]): Map<string, { root: Term; path: string[] }> {
    const referenced = new Set(triples.filter((t) => t.predicate.value !== rdf.type).map((t) => termKey(t.object)));
    const paths = new Map<string, { root: Term; path: string[] }>();
    const todo: string[] = [];
    for (const t of triples) {
      const k = termKey(t.subject);
      if (referenced.has(k) || paths.has(k)) continue;
      paths.set(k, { root: t.subject, path: [] });
      todo.push(k);
    }
    while (todo.length > 0) {
      const k = todo.shift()!;
      const { root, path } = paths.get(k)!;
      for (const t of triples) {
        if (termKey(t.subject) !== k || t.predicate.value === rdf.type) continue;
        const child = termKey(t.object);
        if (!child || paths.has(child)) continue;
        paths.set(child, { root, path: [...path, compactIri(t.predicate.value)] });
        todo.push(child);
      }
    }
    return paths;
  }
}
