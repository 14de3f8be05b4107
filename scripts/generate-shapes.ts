/**
 * Derives the SHACL shapes under shapes/ from the ontologies under ontology/ (cargo data model,
 * code lists, API). Rerun with `npm run shapes` when IATA publishes a new version; a test fails
 * while the committed shapes differ from what this script writes.
 *
 * The shapes use a small, fixed part of SHACL Core (see README "Data-model validation") because
 * src/shapes/compile.ts turns exactly these patterns into the checks of the request path.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Parser } from 'n3';
import { ancestorLookup, GraphIndex } from '../src/rdf/graph-index.js';
import { namedNode, type Term } from '../src/rdf/terms.js';
import { API, CARGO, CODE_LISTS, OWL, RDF, RDFS, XSD } from '../src/rdf/vocab.js';
import { SH, SHAPES, DATATYPE_FAMILIES, UNTYPED_SHAPE } from '../src/shapes/vocabulary.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const ONTOLOGY_FILES = [
  'ontology/IATA-1R-DM-Ontology.ttl',
  'ontology/IATA-1R-CL-Ontology.ttl',
  'ontology/ONE-Record-API-Ontology.ttl',
];
export const SHAPES_FILE = 'shapes/onerecord-shapes.ttl';
export const STRICT_SHAPES_FILE = 'shapes/strict-shapes.ttl';

/** Properties whose "exactly once" the spec turns into "at most once, default false" (the ONE Record API specification). */
const SPEC_DEFAULTS: Readonly<Record<string, string>> = { [`${API}notifyRequestStatusChange`]: 'false' };
/** Properties whose values the spec widens beyond the ontology: only their presence is checked. */
const SPEC_WIDENED: Readonly<Record<string, string>> = {
  [`${API}o`]: 'the spec allows a list of OperationObjects or strings',
};
/** xsd:pattern facets published with a typo: reported, never enforced as written. */
const DEFECTIVE_PATTERNS = new Set(['[-9]+']);

/** What a property's values must be. */
export type ValueRule =
  | { kind: 'datatype'; datatype: string; maxLength?: number; pattern?: string }
  | { kind: 'class'; classes: string[] }
  | { kind: 'codeList'; classes: string[] }
  | { kind: 'enumeration'; values: string[] };

interface PropertyRule {
  path: string;
  min?: number;
  max?: number;
  value?: ValueRule;
  defaultValue?: string;
}

export interface GeneratedShapes {
  /** File path (relative to the repository) -> Turtle text. */
  files: Record<string, string>;
  /** What the generator could not map, or mapped differently from the ontology's letter. */
  reports: string[];
}

/** The class hierarchy and enumerations of the ontologies, and the reports collected while reading them. */
interface Ontology {
  graph: GraphIndex;
  classes: Set<string>;
  superClasses: Map<string, string[]>;
  ancestors: (iri: string) => Set<string>;
  enumerations: Map<string, string[]>;
  reports: string[];
}

export function generateShapes(ontologies: string[]): GeneratedShapes {
  const ontology = readOntology(new GraphIndex(ontologies.flatMap((text) => new Parser().parse(text))));
  const properties = declaredProperties(ontology.graph);
  const ranges = propertyRanges(ontology, properties);
  const classRules = classRestrictions(ontology, ranges);
  const { reports } = ontology;
  for (const r of reports) if (!r.includes(': ')) throw new Error(r);
  return {
    files: {
      [SHAPES_FILE]: shapesTurtle(ontology.superClasses, ranges, classRules),
      [STRICT_SHAPES_FILE]: strictShapesTurtle(properties),
    },
    reports: [...new Set(reports)].sort(),
  };
}

const named = (t: Term | undefined) => (t && t.termType === 'NamedNode' ? t.value : undefined);

function readOntology(graph: GraphIndex): Ontology {
  const classes = new Set(
    graph
      .subjectsOfType(`${OWL}Class`)
      .filter((s) => s.termType === 'NamedNode')
      .map((s) => s.value),
  );
  const superClasses = new Map<string, string[]>();
  for (const c of classes) {
    const parents = graph
      .objects(namedNode(c), `${RDFS}subClassOf`)
      .map(named)
      .filter((p): p is string => !!p);
    if (parents.length > 0) superClasses.set(c, parents);
  }
  const enumerations = new Map<string, string[]>();
  for (const c of classes) {
    for (const eq of graph.objects(namedNode(c), `${OWL}equivalentClass`)) {
      const oneOf = graph.one(eq, `${OWL}oneOf`);
      if (oneOf)
        enumerations.set(
          c,
          graph
            .list(oneOf)
            .map((v) => v.value)
            .sort(),
        );
    }
  }
  return { graph, classes, superClasses, ancestors: ancestorLookup(superClasses), enumerations, reports: [] };
}

/** The rule for values of class or datatype `range` (a named IRI or a restricted datatype node). */
function valueRule(ontology: Ontology, range: Term, where: string): ValueRule | undefined {
  const { graph, reports } = ontology;
  if (range.termType === 'NamedNode') return namedValueRule(ontology, range.value, where);
  const base = named(graph.one(range, `${OWL}onDatatype`));
  const restrictions = graph.list(graph.one(range, `${OWL}withRestrictions`));
  if (!base || !DATATYPE_FAMILIES[base]) {
    reports.push(`${where}: a range that is not a restricted datatype; not checked`);
    return undefined;
  }
  const rule: ValueRule = { kind: 'datatype', datatype: base };
  for (const facet of restrictions) {
    const maxLength = graph.one(facet, `${XSD}maxLength`);
    const pattern = graph.one(facet, `${XSD}pattern`);
    if (maxLength) rule.maxLength = Number(maxLength.value);
    if (pattern && DEFECTIVE_PATTERNS.has(pattern.value)) {
      reports.push(`${where}: xsd:pattern "${pattern.value}" looks like a typo (for "[0-9]+"?); not enforced`);
    } else if (pattern) {
      // XSD patterns match the whole value; SHACL's sh:pattern (SPARQL REGEX) matches anywhere.
      rule.pattern = `^(?:${pattern.value})$`;
    }
  }
  return rule;
}

function namedValueRule(ontology: Ontology, iri: string, where: string): ValueRule | undefined {
  const { classes, enumerations, ancestors, reports } = ontology;
  if (DATATYPE_FAMILIES[iri]) return { kind: 'datatype', datatype: iri };
  if (iri === `${OWL}Thing` || iri === `${RDFS}Literal` || iri === `${OWL}thing`) return undefined;
  if (iri.startsWith(CODE_LISTS)) return { kind: 'codeList', classes: [iri] };
  if (enumerations.has(iri) && (iri.startsWith(CARGO) || iri.startsWith(API)))
    return { kind: 'enumeration', values: enumerations.get(iri)! };
  if (ancestors(iri).has(`${CARGO}CodeListElement`)) return { kind: 'codeList', classes: [iri] };
  if (classes.has(iri)) return { kind: 'class', classes: [iri] };
  reports.push(`${where}: range ${iri} is neither a known class nor a supported datatype; not checked`);
  return undefined;
}

/** Several rdfs:range values (the same property restricted twice) combine into one rule. */
function combine(rules: ValueRule[], reports: string[]): ValueRule | undefined {
  if (rules.length <= 1) return rules[0];
  if (rules.every((r) => r.kind === 'datatype' && r.datatype === (rules[0] as { datatype: string }).datatype)) {
    return Object.assign({}, ...rules) as ValueRule;
  }
  reports.push(`ranges of different kinds cannot be combined; only the first is checked`);
  return rules[0];
}

function declaredProperties(graph: GraphIndex): string[] {
  return [
    ...new Set(
      [...graph.subjectsOfType(`${OWL}ObjectProperty`), ...graph.subjectsOfType(`${OWL}DatatypeProperty`)]
        .filter((s) => s.termType === 'NamedNode')
        .map((s) => s.value),
    ),
  ].sort();
}

/** Ranges of declared properties: checked wherever the property is used (the ontology has no domains). */
function propertyRanges(ontology: Ontology, properties: string[]): Map<string, ValueRule> {
  const ranges = new Map<string, ValueRule>();
  for (const p of properties) {
    if (SPEC_WIDENED[p]) {
      ontology.reports.push(`${compact(p)}: ${SPEC_WIDENED[p]}; its range and maximum count are not checked`);
      continue;
    }
    const rule = combine(
      ontology.graph
        .objects(namedNode(p), `${RDFS}range`)
        .map((r) => valueRule(ontology, r, compact(p)))
        .filter((r): r is ValueRule => !!r),
      ontology.reports,
    );
    if (rule) ranges.set(p, rule);
  }
  return ranges;
}

/** Restrictions of classes: cardinalities and value rules narrower than the property's range. */
function classRestrictions(ontology: Ontology, ranges: Map<string, ValueRule>): Map<string, Map<string, PropertyRule>> {
  const { graph } = ontology;
  const classRules = new Map<string, Map<string, PropertyRule>>();
  for (const c of [...ontology.classes].sort()) {
    const rules = new Map<string, PropertyRule>();
    for (const r of graph.objects(namedNode(c), `${RDFS}subClassOf`)) {
      if (r.termType !== 'BlankNode') continue;
      const p = named(graph.one(r, `${OWL}onProperty`));
      if (!p) continue;
      const rule = rules.get(p) ?? { path: p };
      rules.set(p, rule);
      applyRestriction(ontology, c, r, rule, ranges.get(p));
    }
    const kept = [...rules.values()].filter(
      (r) => r.min !== undefined || r.max !== undefined || r.value || r.defaultValue,
    );
    if (kept.length > 0) classRules.set(c, new Map(kept.map((r) => [r.path, r])));
  }
  return classRules;
}

/** Narrows `rule` (property `rule.path` of class `c`) by the owl:Restriction node `restriction`. */
function applyRestriction(
  ontology: Ontology,
  c: string,
  restriction: Term,
  rule: PropertyRule,
  range: ValueRule | undefined,
): void {
  const { graph, reports } = ontology;
  const p = rule.path;
  const count = (predicate: string) => {
    const v = graph.one(restriction, `${OWL}${predicate}`);
    return v ? Number(v.value) : undefined;
  };
  const tighterMax = (n: number | undefined) => {
    if (n !== undefined) rule.max = Math.min(rule.max ?? n, n);
  };
  const tighterMin = (n: number | undefined) => {
    if (n !== undefined && n > 0) rule.min = Math.max(rule.min ?? n, n);
  };
  if (SPEC_WIDENED[p]) {
    tighterMin(
      count('minCardinality') ??
        count('minQualifiedCardinality') ??
        count('qualifiedCardinality') ??
        count('cardinality'),
    );
    return;
  }
  tighterMax(count('maxCardinality'));
  tighterMax(count('maxQualifiedCardinality'));
  tighterMin(count('minCardinality'));
  tighterMin(count('minQualifiedCardinality'));
  const exactly = count('qualifiedCardinality') ?? count('cardinality');
  if (exactly !== undefined) {
    tighterMax(exactly);
    if (SPEC_DEFAULTS[p] !== undefined) {
      rule.defaultValue = SPEC_DEFAULTS[p];
      reports.push(
        `${compact(c)} ${compact(p)}: the ontology requires it exactly once; the spec gives a default ` +
          `(${SPEC_DEFAULTS[p]}), so only "at most once" is checked`,
      );
    } else {
      tighterMin(exactly);
    }
  }
  if (graph.one(restriction, `${OWL}someValuesFrom`)) tighterMin(1);
  const allValuesFrom =
    graph.one(restriction, `${OWL}allValuesFrom`) ??
    graph.one(restriction, `${OWL}onClass`) ??
    graph.one(restriction, `${OWL}onDataRange`);
  if (allValuesFrom) {
    const value = valueRule(ontology, allValuesFrom, `${compact(c)} ${compact(p)}`);
    if (value && !sameRule(value, range)) rule.value = value;
  }
}

function shapesTurtle(
  superClasses: Map<string, string[]>,
  ranges: Map<string, ValueRule>,
  classRules: Map<string, Map<string, PropertyRule>>,
): string {
  const writer = new TurtleWriter();
  writer.comment(
    `SHACL shapes generated by scripts/generate-shapes.ts from ${ONTOLOGY_FILES.join(', ')}.\n` +
      'Do not edit: rerun `npm run shapes`.',
  );
  writer.blank();
  writer.line(UNTYPED_SHAPE, [
    [`${RDF}type`, iri(`${SH}NodeShape`)],
    [
      `${RDFS}comment`,
      str(
        'A node whose type the data does not say (a link to an object described elsewhere, an untyped embedded node).',
      ),
    ],
    [`${SH}property`, `[ ${compact(`${SH}path`)} ${compact(`${RDF}type`)} ; ${compact(`${SH}maxCount`)} 0 ]`],
  ]);
  writer.comment('Class hierarchy: sh:targetClass and sh:class follow rdfs:subClassOf.');
  for (const c of [...superClasses.keys()].sort()) {
    writer.line(c, [[`${RDFS}subClassOf`, superClasses.get(c)!.slice().sort().map(iri).join(' , ')]]);
  }
  writer.blank();
  writer.comment('Ranges: checked wherever a property is used, whatever the class of its subject.');
  for (const [p, rule] of ranges) writeRangeShape(writer, p, rule);
  writer.blank();
  writer.comment('Classes: cardinalities and value rules narrower than the range, from owl:Restriction.');
  for (const [c, rules] of classRules) writeClassShape(writer, c, rules);
  return writer.text();
}

function writeRangeShape(writer: TurtleWriter, p: string, rule: ValueRule): void {
  const shape = `${SHAPES}range-${localName(p)}`;
  writer.line(shape, [
    [`${RDF}type`, iri(`${SH}NodeShape`)],
    [`${SH}targetSubjectsOf`, iri(p)],
    [`${SH}property`, iri(`${shape}-value`)],
  ]);
  writer.line(`${shape}-value`, [[`${SH}path`, iri(p)], ...valueTurtle(rule)]);
}

function writeClassShape(writer: TurtleWriter, c: string, rules: Map<string, PropertyRule>): void {
  const shape = `${SHAPES}${localName(c)}`;
  writer.line(shape, [
    [`${RDF}type`, iri(`${SH}NodeShape`)],
    [`${SH}targetClass`, iri(c)],
    [`${SH}property`, [...rules.keys()].map((p) => iri(`${shape}-${localName(p)}`)).join(' , ')],
  ]);
  for (const [p, rule] of rules) {
    const props: [string, string][] = [[`${SH}path`, iri(p)]];
    if (rule.min !== undefined) props.push([`${SH}minCount`, String(rule.min)]);
    if (rule.max !== undefined) props.push([`${SH}maxCount`, String(rule.max)]);
    if (rule.defaultValue !== undefined) props.push([`${SH}defaultValue`, rule.defaultValue]);
    if (rule.value) props.push(...valueTurtle(rule.value));
    writer.line(`${shape}-${localName(p)}`, props);
  }
}

function strictShapesTurtle(properties: string[]): string {
  const strict = new TurtleWriter();
  strict.comment(
    'Strict mode (config `validation.strict`): properties unknown to the ontologies are refused.\n' +
      'Generated by scripts/generate-shapes.ts; do not edit.',
  );
  strict.blank();
  strict.line(`${SHAPES}KnownPropertiesOnly`, [
    [`${RDF}type`, iri(`${SH}NodeShape`)],
    [`${SH}targetSubjectsOf`, [`${RDF}type`, ...properties].map(iri).join(' , ')],
    [`${SH}closed`, 'true'],
    [`${SH}ignoredProperties`, `( ${[`${RDF}type`, ...properties].map(iri).join(' ')} )`],
  ]);
  return strict.text();
}

const sameRule = (a: ValueRule, b: ValueRule | undefined) => !!b && JSON.stringify(a) === JSON.stringify(b);

function valueTurtle(rule: ValueRule): [string, string][] {
  switch (rule.kind) {
    case 'datatype': {
      const family = DATATYPE_FAMILIES[rule.datatype];
      const out: [string, string][] = [];
      const alternatives = family.accepted.map((d) => `[ ${compact(`${SH}datatype`)} ${iri(d)} ]`);
      if (family.iris) alternatives.push(`[ ${compact(`${SH}nodeKind`)} ${iri(`${SH}IRI`)} ]`);
      out.push(
        alternatives.length === 1
          ? [`${SH}datatype`, iri(family.accepted[0])]
          : [`${SH}or`, `( ${alternatives.join(' ')} )`],
      );
      if (family.minInclusive !== undefined) out.push([`${SH}minInclusive`, String(family.minInclusive)]);
      if (rule.maxLength !== undefined) out.push([`${SH}maxLength`, String(rule.maxLength)]);
      if (rule.pattern !== undefined) out.push([`${SH}pattern`, str(rule.pattern)]);
      return out;
    }
    case 'enumeration':
      return [[`${SH}in`, `( ${rule.values.map(iri).join(' ')} )`]];
    case 'class':
    case 'codeList': {
      const accepted =
        rule.kind === 'codeList' ? [...new Set([`${CARGO}CodeListElement`, ...rule.classes])] : rule.classes;
      return [
        [`${SH}nodeKind`, iri(`${SH}BlankNodeOrIRI`)],
        [
          `${SH}or`,
          `( ${accepted.map((c) => `[ ${compact(`${SH}class`)} ${iri(c)} ]`).join(' ')} ${iri(UNTYPED_SHAPE)} )`,
        ],
      ];
    }
  }
}

const PREFIXES: [string, string][] = [
  ['sh', SH],
  ['shapes', SHAPES],
  ['cargo', CARGO],
  ['api', API],
  ['rdf', RDF],
  ['rdfs', RDFS],
  ['xsd', XSD],
];

function localName(iri: string): string {
  for (const [prefix, ns] of PREFIXES) if (iri.startsWith(ns)) return `${prefix}-${iri.slice(ns.length)}`;
  return iri.replace(/^.*[/#]/, '');
}

const PN_LOCAL = /^[A-Za-z_][A-Za-z0-9_-]*$/;
function compact(iriValue: string): string {
  for (const [prefix, ns] of PREFIXES) {
    if (iriValue.startsWith(ns) && PN_LOCAL.test(iriValue.slice(ns.length)))
      return `${prefix}:${iriValue.slice(ns.length)}`;
  }
  return `<${iriValue}>`;
}
const iri = compact;
const str = (s: string) => JSON.stringify(s);

class TurtleWriter {
  private readonly out: string[] = PREFIXES.map(([p, ns]) => `@prefix ${p}: <${ns}> .`).concat(['']);
  comment(text: string): void {
    for (const l of text.split('\n')) this.out.push(`# ${l}`);
  }
  blank(): void {
    this.out.push('');
  }
  line(subject: string, predicates: [string, string][]): void {
    const body = predicates.map(([p, o]) => `${p === `${RDF}type` ? 'a' : compact(p)} ${o}`).join(' ;\n    ');
    this.out.push(`${compact(subject)} ${body} .`);
  }
  text(): string {
    return `${this.out.join('\n')}\n`;
  }
}

export function readOntologies(): string[] {
  return ONTOLOGY_FILES.map((f) => readFileSync(`${REPO}${f}`, 'utf8'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { files, reports } = generateShapes(readOntologies());
  mkdirSync(`${REPO}shapes`, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    writeFileSync(`${REPO}${path}`, text);
    console.log(`wrote ${path} (${text.split('\n').length} lines)`);
  }
  for (const r of reports) console.log(`note: ${r}`);
}
