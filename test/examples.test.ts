import { expect } from 'chai';
import { CargoOntology } from '../src/rdf/ontology.js';
import { rdf } from '../src/rdf/vocab.js';
import { ONTOLOGY_FILE } from '../src/server/domain.js';
import { expectApiError } from './support/api-error.js';
import { readJson } from './support/changes.js';
import { KNOWN_DEFECTS, logisticsObjectExamples, readExample, rebase } from './support/examples.js';
import {
  canonicalForm,
  jsonLdToQuads,
  localIdsAsBlankNodes,
  ntLines,
  withoutServerManaged,
} from './support/rdf-compare.js';
import { postJsonLd, startTestServer, storedQuads, type TestServer } from './support/server.js';
import type { Quad } from '../src/rdf/terms.js';

const examples = await logisticsObjectExamples(CargoOntology.fromFile(ONTOLOGY_FILE));

const objectsPrefix = (server: TestServer) => `${server.url}/logistics-objects/`;

/** GETs an object as JSON-LD and reads it with jsonld.js; undefined if there is no such object. */
async function readObject(server: TestServer, iri: string): Promise<Quad[] | undefined> {
  const res = await server.request(iri, { headers: { Accept: 'application/ld+json' } });
  if (res.status === 404) return undefined;
  expect(res.status, `GET ${iri}`).to.equal(200);
  return jsonLdToQuads(await res.json());
}

/**
 * Reads back what one POST created: the object at `location` and every object of this server it
 * links to (nested Logistics Objects of the body became objects of their own).
 */
async function readCreated(server: TestServer, location: string): Promise<{ iris: string[]; triples: Quad[] }> {
  const iris: string[] = [];
  const triples: Quad[] = [];
  const seen = new Set<string>([location]);
  const todo = [location];
  while (todo.length > 0) {
    const iri = todo.shift()!;
    const read = await readObject(server, iri);
    if (!read) continue; // a link to an object that does not exist here
    iris.push(iri);
    triples.push(...read);
    for (const t of read) {
      const o = t.object;
      if (
        o.termType === 'NamedNode' &&
        t.predicate.value !== rdf.type &&
        o.value.startsWith(objectsPrefix(server)) &&
        !seen.has(o.value)
      ) {
        seen.add(o.value);
        todo.push(o.value);
      }
    }
  }
  return { iris, triples };
}

/**
 * POSTs an example and checks that the objects it created hold exactly the example's triples,
 * once the ids the server minted (internal: ids for blank nodes, new object IRIs for nested
 * objects without @id) are taken as the blank nodes they replace.
 */
async function expectAcceptedAndReadBack(server: TestServer, text: string, objectsCreated: number): Promise<void> {
  const expected = withoutServerManaged(await jsonLdToQuads(JSON.parse(text), objectsPrefix(server)));
  const objectCount = async () => (await readJson(server, '/internal/logistics-objects?limit=1')).total as number;
  const before = await objectCount();
  const res = await postJsonLd(server, '/logistics-objects', text);
  expect(res.status, await res.clone().text()).to.equal(201);
  expect((await objectCount()) - before).to.equal(objectsCreated);

  const created = await readCreated(server, res.headers.get('location')!);
  expect(created.iris).to.have.length(objectsCreated);
  const named = new Set(expected.flatMap((q) => [q.subject.value, q.object.value]));
  const minted = (iri: string) => iri.startsWith('internal:') || (created.iris.includes(iri) && !named.has(iri));
  const actual = localIdsAsBlankNodes(withoutServerManaged(created.triples), minted);
  expect(ntLines(actual)).to.have.length(ntLines(expected).length);
  expect(await canonicalForm(actual)).to.equal(await canonicalForm(expected));
}

/** How many objects each valid example creates: nested Logistics Objects with properties count too. */
const OBJECTS_CREATED: Readonly<Record<string, number>> = {
  'Company.json': 2, // the contact Person becomes an object of its own
  'Company_with_id.json': 2,
  'Shipment_with_Piece.embedded.json': 2,
};

describe('Official example payloads that are Logistics Objects', () => {
  // The examples put their objects under https://1r.example.com/logistics-objects/ (Sensor under
  // http://). This server only creates objects under its own base, so each payload is rebased to
  // the test server's base before it is posted. Every example gets a fresh server because some
  // share ids (the two Sensor files, the Piece of Shipment_with_Piece.embedded and Piece_with_id).
  let server: TestServer;
  beforeEach(async () => {
    server = await startTestServer();
  });
  afterEach(() => server.close());

  it('are the eleven Logistics Object examples of the API documentation', () => {
    expect(examples).to.have.length(11);
    expect(Object.keys(KNOWN_DEFECTS).every((name) => examples.includes(name))).to.equal(true);
  });

  for (const name of examples) {
    const defect = KNOWN_DEFECTS[name];
    if (!defect) {
      it(`accepts ${name} and reads back the same triples`, async () => {
        await expectAcceptedAndReadBack(
          server,
          rebase(readExample(name), objectsPrefix(server)),
          OBJECTS_CREATED[name] ?? 1,
        );
      });
      continue;
    }
    // We reject rather than trim: an @id with a leading space is not an IRI (JSON-LD resolves it as
    // a relative reference), and silently changing a client's identifiers hides its bug.
    it(`rejects ${name} with 400 because ${defect.reason}; nothing is stored`, async () => {
      const before = await storedQuads(server);
      const res = await postJsonLd(server, '/logistics-objects', rebase(readExample(name), objectsPrefix(server)));
      await expectApiError(res, 400, /Relative @id reference/);
      expect(await storedQuads(server)).to.equal(before);
    });
    it(`accepts ${name} once corrected, and reads back the same triples`, async () => {
      await expectAcceptedAndReadBack(
        server,
        rebase(defect.correct(readExample(name)), objectsPrefix(server)),
        OBJECTS_CREATED[name] ?? 1,
      );
    });
  }
});
