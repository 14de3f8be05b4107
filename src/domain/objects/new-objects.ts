import { randomUUID } from 'node:crypto';
import { badRequest, HttpError } from '../../errors.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { defaultGraph, namedNode, quad, type Quad, type Term } from '../../rdf/terms.js';
import { groupBySubject, reachable, termKey as key } from '../../rdf/triples.js';
import { api, INTERNAL_SCHEME, rdf } from '../../rdf/vocab.js';

/** A Logistics Object to be created: its IRI and the triples of its first revision. */
export interface NewObject {
  iri: string;
  types: string[];
  triples: Quad[];
}

export interface SplitContext {
  ontology: CargoOntology;
  /** `{base}/logistics-objects/` */
  objectsPrefix: string;
  /** Whether an IRI already names a Logistics Object here (or one being created). */
  exists: (iri: string) => boolean;
}

/** Server-managed properties that a client may echo back but never sets. */
export const SERVER_MANAGED: ReadonlySet<string> = new Set([api.hasRevision, api.hasLatestRevision]);
const OBJECT_ID = /^[A-Za-z0-9._~-]{1,200}$/;

export const newEmbeddedIri = () => `${INTERNAL_SCHEME}${randomUUID()}`;
export const newObjectIri = (objectsPrefix: string) => `${objectsPrefix}${randomUUID()}`;

/** A parsed body: its quads by subject, and the nodes some quad refers to (so not top-level). */
interface Body {
  bySubject: Map<string, Quad[]>;
  referenced: Set<string>;
}

const typesOf = (body: Body, k: string) =>
  (body.bySubject.get(k) ?? []).filter((q) => q.predicate.value === rdf.type).map((q) => q.object.value);
const hasProperties = (body: Body, k: string) =>
  (body.bySubject.get(k) ?? []).some((q) => q.predicate.value !== rdf.type);

/** The nodes the body refers to; 400 for an `internal:` id, which only the server gives. */
function referencedNodes(quads: readonly Quad[]): Set<string> {
  const referenced = new Set<string>();
  for (const q of quads) {
    for (const t of [q.subject, q.object]) {
      if (t.termType === 'NamedNode' && t.value.startsWith(INTERNAL_SCHEME)) {
        throw badRequest(
          'client_internal_id',
          `${t.value}: internal: ids are given by the server; ` +
            'describe an embedded object without @id (or with a blank node _:label)',
        );
      }
    }
    if (q.object.termType !== 'Literal') referenced.add(key(q.object));
  }
  return referenced;
}

/** 400 for a top-level node that is not a Logistics Object. */
function notALogisticsObject(types: readonly string[]): HttpError {
  return badRequest(
    'not_a_logistics_object',
    types.length === 0
      ? 'the body has no @type; a Logistics Object needs a type that is a subclass of cargo:LogisticsObject'
      : `type ${types.join(', ')} is not a subclass of cargo:LogisticsObject in the cargo ontology`,
    rdf.type,
  );
}

/** The IRI a described object of this server is created under: 400 for another's, 409 for an existing one. */
function ownObjectIri(iri: string, ctx: SplitContext): string {
  if (!iri.startsWith(ctx.objectsPrefix) || !OBJECT_ID.test(iri.slice(ctx.objectsPrefix.length))) {
    throw badRequest(
      'foreign_id',
      `@id ${iri} is not of the form ${ctx.objectsPrefix}<id>: only objects of this server can be created here`,
    );
  }
  if (ctx.exists(iri))
    throw new HttpError(409, 'object_exists', {
      message: `a Logistics Object with @id ${iri} already exists`,
      resource: iri,
    });
  return iri;
}

/** Which subjects become new Logistics Objects, and under which IRI. */
function objectIrisOf(body: Body, ctx: SplitContext): Map<string, string> {
  const objectIris = new Map<string, string>();
  for (const [k, list] of body.bySubject) {
    const subject = list[0].subject;
    const topLevel = !body.referenced.has(k);
    if (subject.termType === 'NamedNode' && !topLevel && hasProperties(body, k) && ctx.exists(subject.value)) {
      // Whatever its type: the properties would land in the new object's graph, not in that object.
      throw badRequest(
        'nested_existing_object',
        `${subject.value} already exists; change it with PATCH instead of nesting its properties`,
      );
    }
    if (!typesOf(body, k).some((t) => ctx.ontology.isLogisticsObjectClass(t))) {
      if (topLevel) throw notALogisticsObject(typesOf(body, k));
    } else if (subject.termType === 'BlankNode') {
      objectIris.set(k, newObjectIri(ctx.objectsPrefix));
    } else if (hasProperties(body, k) || topLevel) {
      // A nested named object without properties is a typed link, not a new object.
      objectIris.set(k, ownObjectIri(subject.value, ctx));
    }
  }
  return objectIris;
}

/** The one top-level object of the body: 400 for none or several. */
function onlyRoot(objectIris: ReadonlyMap<string, string>, body: Body): string {
  const roots = [...objectIris.keys()].filter((k) => !body.referenced.has(k));
  if (roots.length !== 1) {
    throw badRequest(
      'one_root',
      roots.length === 0
        ? 'the body holds no Logistics Object'
        : 'the body must describe exactly one top-level Logistics Object',
    );
  }
  return objectIris.get(roots[0])!;
}

/** Each object with the triples of the nodes it reaches, blank nodes named; 400 for a node no object reaches. */
function objectsOf(body: Body, objectIris: ReadonlyMap<string, string>): NewObject[] {
  const { bySubject } = body;
  const embeddedIris = new Map<string, string>();
  const rename = (t: Term): Term => {
    const k = key(t);
    const asObject = objectIris.get(k);
    if (asObject) return namedNode(asObject);
    if (t.termType !== 'BlankNode') return t;
    let iri = embeddedIris.get(k);
    if (!iri) {
      iri = newEmbeddedIri();
      embeddedIris.set(k, iri);
    }
    return namedNode(iri);
  };

  const claimed = new Set<string>();
  const objects: NewObject[] = [];
  for (const [k, iri] of objectIris) {
    // Embedded nodes belong to the object that reaches them; other objects of the body are links.
    const seen = reachable(k, bySubject, { follow: (_, child) => !objectIris.has(child) });
    const triples = [...seen].flatMap((s) =>
      bySubject
        .get(s)!
        .map((q) =>
          quad(rename(q.subject) as Quad['subject'], q.predicate, rename(q.object) as Quad['object'], defaultGraph()),
        ),
    );
    for (const s of seen) claimed.add(s);
    objects.push({ iri, types: typesOf(body, k), triples });
  }
  for (const k of bySubject.keys()) {
    if (!claimed.has(k))
      throw badRequest(
        'disconnected_node',
        `node ${k.split(':').slice(1).join(':')} is not part of any Logistics Object in the body`,
      );
  }
  return objects;
}

/**
 * Splits a parsed body into the Logistics Objects it creates (docs/behaviour.md, "Logistics Objects"):
 * the top node and every nested LO-typed node with properties become objects of their own;
 * other blank nodes become `internal:` embedded objects inside the object that holds them;
 * `{ "@id" }`-only nodes are links.
 */
export function splitIntoObjects(input: Quad[], ctx: SplitContext): NewObject[] {
  const quads = input.filter((q) => !SERVER_MANAGED.has(q.predicate.value));
  const body: Body = { bySubject: groupBySubject(quads), referenced: referencedNodes(quads) };
  const objectIris = objectIrisOf(body, ctx);
  const root = onlyRoot(objectIris, body);
  const objects = objectsOf(body, objectIris);
  // The top-level object first: it answers the request.
  return objects.sort((a, b) => (a.iri === root ? -1 : b.iri === root ? 1 : 0));
}
