import { Parser } from 'n3';
import type { Term } from '../rdf/terms.js';
import { ancestorLookup, GraphIndex } from '../rdf/graph-index.js';
import { RDF, RDFS } from '../rdf/vocab.js';
import { DATATYPE_FAMILIES, SH, UNTYPED_SHAPE } from './vocabulary.js';

/** What each value of a property must be. */
export type ValueCheck =
  | {
      kind: 'datatype';
      accepted: ReadonlySet<string>;
      iris?: true;
      expected: string;
      minInclusive?: number;
      maxLength?: number;
      pattern?: RegExp;
    }
  | { kind: 'in'; values: ReadonlySet<string>; expected: string }
  | { kind: 'class'; classes: readonly string[]; expected: string };

export interface PropertyCheck {
  shape: string;
  path: string;
  min?: number;
  max?: number;
  value?: ValueCheck;
}

export interface NodeCheck {
  shape: string;
  properties: PropertyCheck[];
  /** Closed shape: the only predicates allowed on a focus node. */
  allowed?: ReadonlySet<string>;
}

/**
 * The shapes as plain lookups for the request path. Built from the Turtle under shapes/, and only
 * from the patterns scripts/generate-shapes.ts writes: anything else in a shape stops the
 * compilation, so the compiled checks never silently skip a constraint the SHACL engine applies.
 */
export interface CompiledShapes {
  byClass: ReadonlyMap<string, NodeCheck[]>;
  bySubjectOf: ReadonlyMap<string, NodeCheck[]>;
  /** Every class a class is an instance of (itself included), from rdfs:subClassOf. */
  ancestors(iri: string): ReadonlySet<string>;
}

const SHAPE_PREDICATES = new Set([
  `${RDF}type`,
  `${RDFS}comment`,
  `${SH}targetClass`,
  `${SH}targetSubjectsOf`,
  `${SH}property`,
  `${SH}closed`,
  `${SH}ignoredProperties`,
]);
const PROPERTY_PREDICATES = new Set([
  `${SH}path`,
  `${SH}minCount`,
  `${SH}maxCount`,
  `${SH}defaultValue`,
  `${SH}datatype`,
  `${SH}or`,
  `${SH}nodeKind`,
  `${SH}in`,
  `${SH}minInclusive`,
  `${SH}maxLength`,
  `${SH}pattern`,
]);

const expectedFor = (datatypes: string[]) =>
  Object.values(DATATYPE_FAMILIES).find(
    (f) => f.accepted.length === datatypes.length && f.accepted.every((d) => datatypes.includes(d)),
  )?.expected ?? `of datatype ${datatypes.join(' or ')}`;

const refuse = (shape: Term, what: string): never => {
  throw new Error(`shape ${shape.value}: ${what} is not supported by the compiled checks`);
};

/** The facets of a datatype check: sh:minInclusive, sh:maxLength, sh:pattern. */
function facets(graph: GraphIndex, shape: Term) {
  const min = graph.one(shape, `${SH}minInclusive`);
  const maxLength = graph.one(shape, `${SH}maxLength`);
  const pattern = graph.one(shape, `${SH}pattern`);
  return {
    ...(min && { minInclusive: Number(min.value) }),
    ...(maxLength && { maxLength: Number(maxLength.value) }),
    ...(pattern && { pattern: new RegExp(pattern.value, 'u') }),
  };
}

/**
 * The check of an sh:or: `( [ sh:datatype D ] ... )`, with `[ sh:nodeKind sh:IRI ]` where a link is
 * accepted too; or `( [ sh:class A ] ... shapes:Untyped )` together with sh:nodeKind sh:BlankNodeOrIRI.
 */
function alternativesCheck(graph: GraphIndex, shape: Term, alternatives: Term[]): ValueCheck {
  const isIriAlternative = (a: Term) => graph.one(a, `${SH}nodeKind`)?.value === `${SH}IRI`;
  const datatypes = alternatives.filter((a) => !isIriAlternative(a)).map((a) => graph.one(a, `${SH}datatype`)?.value);
  if (datatypes.length > 0 && datatypes.every((d) => d !== undefined)) {
    const iris = alternatives.some(isIriAlternative);
    return {
      kind: 'datatype',
      accepted: new Set(datatypes),
      ...(iris && { iris: true as const }),
      expected: expectedFor(datatypes),
      ...facets(graph, shape),
    };
  }
  const nodeKind = graph.one(shape, `${SH}nodeKind`)?.value;
  if (nodeKind !== `${SH}BlankNodeOrIRI` || alternatives.at(-1)?.value !== UNTYPED_SHAPE) refuse(shape, 'this sh:or');
  const classes = alternatives
    .slice(0, -1)
    .map((a) => graph.one(a, `${SH}class`)?.value ?? refuse(shape, 'an sh:or member'));
  return { kind: 'class', classes, expected: `a node of class ${classes.map(compactIri).join(' or ')}, or a link` };
}

/** What each value of a property shape must be: sh:in, sh:datatype or sh:or; undefined: anything. */
function valueCheck(graph: GraphIndex, shape: Term): ValueCheck | undefined {
  const enumeration = graph.one(shape, `${SH}in`);
  if (enumeration) {
    const values = graph.list(enumeration).map((v) => v.value);
    return { kind: 'in', values: new Set(values), expected: `one of ${values.map(compactIri).join(', ')}` };
  }
  const datatype = graph.one(shape, `${SH}datatype`);
  if (datatype)
    return {
      kind: 'datatype',
      accepted: new Set([datatype.value]),
      expected: expectedFor([datatype.value]),
      ...facets(graph, shape),
    };
  const alternatives = graph.list(graph.one(shape, `${SH}or`));
  return alternatives.length === 0 ? undefined : alternativesCheck(graph, shape, alternatives);
}

function propertyCheck(graph: GraphIndex, shape: Term): PropertyCheck {
  for (const q of graph.triplesOf(shape))
    if (!PROPERTY_PREDICATES.has(q.predicate.value)) refuse(shape, q.predicate.value);
  const path = graph.one(shape, `${SH}path`);
  if (path?.termType !== 'NamedNode') return refuse(shape, 'a path that is not one IRI');
  const min = graph.one(shape, `${SH}minCount`);
  const max = graph.one(shape, `${SH}maxCount`);
  const value = valueCheck(graph, shape);
  return {
    shape: shape.value,
    path: path.value,
    ...(min && { min: Number(min.value) }),
    ...(max && { max: Number(max.value) }),
    ...(value && { value }),
  };
}

function nodeCheck(graph: GraphIndex, shape: Term): NodeCheck {
  for (const p of graph.triplesOf(shape))
    if (!SHAPE_PREDICATES.has(p.predicate.value)) refuse(shape, p.predicate.value);
  return {
    shape: shape.value,
    properties: graph.objects(shape, `${SH}property`).map((p) => propertyCheck(graph, p)),
    ...(graph.one(shape, `${SH}closed`)?.value === 'true' && {
      allowed: new Set(graph.list(graph.one(shape, `${SH}ignoredProperties`)).map((t) => t.value)),
    }),
  };
}

/** Every class a class is an instance of, from the rdfs:subClassOf triples next to the shapes. */
function classAncestors(graph: GraphIndex): (iri: string) => ReadonlySet<string> {
  const superClasses = new Map<string, string[]>();
  for (const q of graph.quads) {
    if (q.predicate.value !== `${RDFS}subClassOf`) continue;
    superClasses.set(q.subject.value, [...(superClasses.get(q.subject.value) ?? []), q.object.value]);
  }
  return ancestorLookup(superClasses);
}

export function compileShapes(turtles: string[]): CompiledShapes {
  const graph = new GraphIndex(turtles.flatMap((t) => new Parser().parse(t)));
  const byClass = new Map<string, NodeCheck[]>();
  const bySubjectOf = new Map<string, NodeCheck[]>();
  const add = (map: Map<string, NodeCheck[]>, k: string, v: NodeCheck) => map.set(k, [...(map.get(k) ?? []), v]);
  for (const shape of graph.subjectsOfType(`${SH}NodeShape`)) {
    if (shape.value === UNTYPED_SHAPE) continue;
    const check = nodeCheck(graph, shape);
    for (const c of graph.objects(shape, `${SH}targetClass`)) add(byClass, c.value, check);
    for (const p of graph.objects(shape, `${SH}targetSubjectsOf`)) add(bySubjectOf, p.value, check);
  }
  return { byClass, bySubjectOf, ancestors: classAncestors(graph) };
}

const PREFIXES: [string, string][] = [
  ['cargo:', 'https://onerecord.iata.org/ns/cargo#'],
  ['api:', 'https://onerecord.iata.org/ns/api#'],
  ['xsd:', 'http://www.w3.org/2001/XMLSchema#'],
  ['rdf:', RDF],
];

/** `cargo:grossWeight` for the cargo, API, XSD and RDF vocabularies; the full IRI otherwise. */
export function compactIri(iri: string): string {
  for (const [prefix, ns] of PREFIXES) if (iri.startsWith(ns)) return `${prefix}${iri.slice(ns.length)}`;
  return `<${iri}>`;
}
