import sparqljs from 'sparqljs';
import { NO_GRAPH } from './engine-dataset.js';
import { invalidQuery } from '../query-errors.js';
import { inGraphSet, type GraphSet, type ViewGraphs } from './engine-views.js';
import { entryOf } from '../../map-entry.js';

/*
 * A query over a whole view, as the engine runs it without a dataset (a view of a large store has
 * more graphs than a query's FROM list takes): every triple pattern of the default graph becomes
 * `GRAPH ?g { … }` with ?g kept to the view's default graphs, every `GRAPH ?g` is kept to its named
 * graphs, and a `GRAPH <iri>` outside them matches nothing. The answer is the one the view's graphs
 * listed in FROM and FROM NAMED give: on the engine a default graph is its graphs side by side, each
 * triple pattern matched in each of them (docs/sparql-engine.md). The graph variables added are
 * hidden by a sub-select of the query's own variables, so `SELECT *`, `DISTINCT` and `COUNT(*)`
 * see what they would without them.
 */

type Pattern = sparqljs.Pattern;
type Triple = sparqljs.Triple;
type Node = Record<string, unknown>;
const variable = (value: string) => ({ termType: 'Variable', value }) as sparqljs.VariableTerm;
const namedNode = (value: string) => ({ termType: 'NamedNode', value }) as sparqljs.IriTerm;

const isVariable = (term: unknown): term is sparqljs.VariableTerm =>
  (term as { termType?: string } | undefined)?.termType === 'Variable';

/**
 * The variables in scope of a group's patterns (SPARQL 1.1, 18.2.1), in order of first appearance:
 * what `SELECT *` projects.
 */
export function inScopeVariables(patterns: readonly Pattern[], into: string[] = []): string[] {
  const add = (name: string) => {
    if (!into.includes(name)) into.push(name);
  };
  const terms = (triple: Triple) => [triple.subject, triple.predicate, triple.object];
  for (const pattern of patterns) {
    switch (pattern.type) {
      case 'bgp':
        for (const triple of pattern.triples) for (const term of terms(triple)) if (isVariable(term)) add(term.value);
        break;
      case 'graph':
        if (isVariable(pattern.name)) add(pattern.name.value);
        inScopeVariables(pattern.patterns, into);
        break;
      case 'group':
      case 'optional':
      case 'union':
        inScopeVariables(pattern.patterns, into);
        break;
      case 'bind':
        add(pattern.variable.value);
        break;
      case 'values':
        for (const row of pattern.values) for (const key of Object.keys(row)) add(key.replace(/^\?/, ''));
        break;
      case 'query':
        for (const name of projectedVariables(pattern)) add(name);
        break;
      // MINUS, FILTER and SERVICE bind nothing outside them.
    }
  }
  return into;
}

function projectedVariables(query: sparqljs.SelectQuery): string[] {
  if (query.variables.length === 1 && 'termType' in query.variables[0] && query.variables[0].termType === 'Wildcard')
    return inScopeVariables(query.where ?? []);
  return (query.variables as sparqljs.Variable[]).map((v) => ('variable' in v ? v.variable.value : v.value));
}

/** Rewrites queries over one view, with fresh variable names that the query does not use. */
class ViewRewriter {
  private fresh = 0;

  constructor(
    private readonly view: ViewGraphs,
    private readonly taken: string,
  ) {}

  query(query: sparqljs.Query): sparqljs.Query {
    const described = query.queryType === 'DESCRIBE' ? this.describedAsConstruct(query) : query;
    described.where = this.graphsHidden(described.where ?? []);
    described.from = undefined;
    return described;
  }

  /**
   * `where` over the view, behind a sub-select of its own variables that hides the graph variables (a group without
   * variables has none to show).
   */
  private graphsHidden(where: readonly Pattern[]): Pattern[] {
    const variables = inScopeVariables(where).map((name) => variable(name));
    const rewritten = this.group(where, false);
    return variables.length === 0
      ? rewritten
      : [{ type: 'query', queryType: 'SELECT', prefixes: {}, variables, where: rewritten } as sparqljs.SelectQuery];
  }

  /**
   * DESCRIBE as the engine would answer it from every graph it holds, so as a CONSTRUCT of the described resources'
   * triples in the view.
   */
  private describedAsConstruct(query: sparqljs.DescribeQuery): sparqljs.ConstructQuery {
    const wildcard = query.variables.length === 1 && query.variables[0].termType === 'Wildcard';
    const resources = wildcard
      ? inScopeVariables(query.where ?? []).map((name) => variable(name))
      : (query.variables as (sparqljs.VariableTerm | sparqljs.IriTerm)[]);
    const template = resources.map((subject) => ({
      subject,
      predicate: this.freshVariable(),
      object: this.freshVariable(),
    }));
    const each: Pattern[] = template.map((triple) => ({ type: 'bgp', triples: [triple] }));
    const described: Pattern =
      each.length === 1 ? each[0] : { type: 'union', patterns: each.map((p) => ({ type: 'group', patterns: [p] })) };
    const { variables: _described, queryType: _form, ...rest } = query;
    return { ...rest, queryType: 'CONSTRUCT', template, where: [...(query.where ?? []), described] };
  }

  private freshVariable(): sparqljs.VariableTerm {
    for (;;) {
      const name = `view_${++this.fresh}`;
      if (!this.taken.includes(name)) return variable(name);
    }
  }

  /** A group's patterns; `inGraph`: inside `GRAPH`, where triple patterns are the named graph's. */
  private group(patterns: readonly Pattern[], inGraph: boolean): Pattern[] {
    const out: Pattern[] = [];
    const filters: Pattern[] = [];
    for (const pattern of patterns) {
      switch (pattern.type) {
        case 'bgp':
          if (inGraph) out.push(pattern);
          else for (const triple of pattern.triples) out.push(...this.triple(this.withoutBlankNodes(triple), filters));
          break;
        case 'graph':
          out.push({
            ...pattern,
            name: this.graphName(pattern.name, filters),
            patterns: this.group(pattern.patterns, true),
          });
          break;
        case 'group':
        case 'optional':
        case 'minus':
          out.push({ ...pattern, patterns: this.group(pattern.patterns, inGraph) });
          break;
        case 'union':
          out.push({
            ...pattern,
            patterns: pattern.patterns.map((branch) => ({
              type: 'group',
              patterns: this.group(branch.type === 'group' ? branch.patterns : [branch], inGraph),
            })),
          });
          break;
        case 'filter':
        case 'bind':
          out.push({ ...pattern, expression: this.expression(pattern.expression, inGraph) as sparqljs.Expression });
          break;
        case 'query':
          out.push(this.subquery(pattern, inGraph));
          break;
        default:
          out.push(pattern);
      }
    }
    return [...out, ...filters];
  }

  private subquery(query: sparqljs.SelectQuery, inGraph: boolean): sparqljs.SelectQuery {
    return { ...query, where: inGraph ? this.group(query.where ?? [], true) : this.graphsHidden(query.where ?? []) };
  }

  /** EXISTS and NOT EXISTS hold patterns. */
  private expression(expression: unknown, inGraph: boolean): unknown {
    if (Array.isArray(expression)) return expression.map((e) => this.expression(e, inGraph));
    if (typeof expression !== 'object' || expression === null || 'termType' in expression) return expression;
    const node = expression as Node;
    if (node.type === 'operation' && (node.operator === 'exists' || node.operator === 'notexists')) {
      return {
        ...node,
        args: (node.args as Pattern[]).map((group) => ({
          type: 'group',
          patterns: this.group(group.type === 'group' ? group.patterns : [group], inGraph),
        })),
      };
    }
    if (node.type === 'operation' || node.type === 'functionCall')
      return { ...node, args: this.expression(node.args, inGraph) };
    if (node.type === 'aggregate') return { ...node, expression: this.expression(node.expression, inGraph) };
    return expression;
  }

  /**
   * Blank nodes of a triple pattern as variables: the pattern's triples land in separate GRAPH patterns, and a blank
   * node label may not span them.
   */
  private blankNodes = new Map<string, sparqljs.VariableTerm>();
  private withoutBlankNodes(triple: Triple): Triple {
    const term = <T>(t: T): T => {
      const blank = t as { termType?: string; value: string };
      if (blank.termType !== 'BlankNode') return t;
      return entryOf(this.blankNodes, blank.value, () => this.freshVariable()) as T;
    };
    return { subject: term(triple.subject), predicate: triple.predicate, object: term(triple.object) };
  }

  /**
   * A triple pattern of the default graph as patterns over the view's default graphs: a path of
   * steps (`/`, `^`, `|`) split into its steps, each step in the graph that holds it, since a
   * path of the default graph crosses from one object's graph to the next.
   */
  private triple(triple: Triple, filters: Pattern[]): Pattern[] {
    const { subject, predicate, object } = triple;
    if (!('type' in predicate) || predicate.pathType === '!') return [this.inDefaultGraph(triple, filters)];
    switch (predicate.pathType) {
      case '/': {
        const out: Pattern[] = [];
        let from = subject;
        predicate.items.forEach((step, i) => {
          const to = i === predicate.items.length - 1 ? object : this.freshVariable();
          out.push(...this.triple({ subject: from, predicate: step, object: to }, filters));
          from = to as typeof from;
        });
        return out;
      }
      case '^':
        return this.triple(
          { subject: object as Triple['subject'], predicate: predicate.items[0], object: subject },
          filters,
        );
      case '|':
        return [
          {
            type: 'union',
            patterns: predicate.items.map((step) => ({
              type: 'group',
              patterns: this.group([{ type: 'bgp', triples: [{ subject, predicate: step, object }] }], false),
            })),
          },
        ];
      default:
        // `*`, `+` and `?` repeat a step any number of times, and the steps of one path may lie in different graphs.
        throw invalidQuery(
          `a property path with ${predicate.pathType} over the whole view is not available on this server ` +
            `(store.backend sparql): name the graphs (FROM, default-graph-uri) or use GRAPH ?g { … }`,
        );
    }
  }

  private inDefaultGraph(triple: Triple, filters: Pattern[]): Pattern {
    const set = this.view.default;
    if ('iri' in set)
      return { type: 'graph', name: namedNode(set.iri), patterns: [{ type: 'bgp', triples: [triple] }] };
    const graph = this.freshVariable();
    filters.push(memberFilter(graph, set));
    return { type: 'graph', name: graph, patterns: [{ type: 'bgp', triples: [triple] }] };
  }

  /** The name of a GRAPH pattern kept to the view's named graphs. */
  private graphName(
    name: sparqljs.IriTerm | sparqljs.VariableTerm,
    filters: Pattern[],
  ): sparqljs.IriTerm | sparqljs.VariableTerm {
    const set = this.view.named;
    if (!isVariable(name)) return inGraphSet(set, name.value) ? name : namedNode(NO_GRAPH);
    filters.push(memberFilter(name, set));
    return name;
  }
}

function memberFilter(graph: sparqljs.VariableTerm, set: GraphSet): sparqljs.FilterPattern {
  const literal = (value: string) =>
    ({
      termType: 'Literal',
      value,
      language: '',
      datatype: namedNode('http://www.w3.org/2001/XMLSchema#string'),
    }) as unknown as sparqljs.LiteralTerm;
  const str: sparqljs.OperationExpression = { type: 'operation', operator: 'str', args: [graph] };
  const expression: sparqljs.OperationExpression =
    'iri' in set
      ? { type: 'operation', operator: '=', args: [graph, namedNode(set.iri)] }
      : { type: 'operation', operator: 'regex', args: [str, literal(set.pattern)] };
  return { type: 'filter', expression };
}

/** `text` (a parsed, checked query) over the whole of `view`, without a dataset. */
export function overWholeView(text: string, view: ViewGraphs): string {
  const query = new sparqljs.Parser().parse(text) as sparqljs.Query;
  return new sparqljs.Generator().stringify(new ViewRewriter(view, text).query(query));
}
