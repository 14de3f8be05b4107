import { expect } from 'chai';
import { Parser } from 'n3';
import { quadToNq, type Quad } from '../src/rdf/terms.js';
import { ACL, permission } from '../src/rdf/vocab.js';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import {
  accessToQuads,
  grantQuads,
  readGrants,
  withdrawalQuads,
  type GrantRecord,
} from '../src/store/schema/grants.js';
import { readRevisions } from '../src/store/schema/revisions.js';
import { storedDomainEvents } from '../src/store/schema/stored-events.js';
import type { GraphReader, SparqlReader } from '../src/store/readers.js';

const BASE = 'http://localhost:8080';
const object = (n: number) => `${BASE}/logistics-objects/o${n}`;
const HOLDER = `${BASE}/logistics-objects/data-holder`;

function storeWith(quads: Quad[]): OxigraphIndex {
  const index = new OxigraphIndex();
  index.loadTrusted(quads.map(quadToNq).join(''));
  return index;
}

/** The index as the schema readers read a store: asynchronously. */
function readerOf(index: OxigraphIndex): SparqlReader & GraphReader {
  return {
    select: async (sparql) => index.select(sparql),
    graphTriples: async (graph) => new Parser({ format: 'application/n-triples' }).parse(index.graphNTriples(graph)),
  };
}

const delegated: GrantRecord = {
  iri: `${BASE}/internal/acl/g2`,
  agent: 'https://airline.example.com/org',
  objects: [object(1), object(2)],
  permissions: [
    permission.GET_LOGISTICS_OBJECT,
    permission.PATCH_LOGISTICS_OBJECT,
    permission.POST_LOGISTICS_EVENT,
    permission.GET_LOGISTICS_EVENT,
  ],
  grantedBy: HOLDER,
  grantedAt: new Date(1_700_000_000_120),
  delegation: `${BASE}/action-requests/r1`,
  derivedFrom: [`${BASE}/internal/acl/a`, `${BASE}/internal/acl/b`],
  expiresAt: new Date(1_800_000_000_000),
};
const publicRead: GrantRecord = {
  iri: `${BASE}/internal/acl/g1`,
  objects: [object(3)],
  permissions: [permission.GET_LOGISTICS_OBJECT],
  grantedBy: HOLDER,
  grantedAt: new Date(1_700_000_000_000),
  derivedFrom: [],
};
const eventsOnly: GrantRecord = {
  ...publicRead,
  iri: `${BASE}/internal/acl/g3`,
  agent: 'https://gha.example.com/org',
  permissions: [permission.GET_LOGISTICS_EVENT],
  grantedAt: new Date(1_700_000_000_500),
};

describe('store schema: grants (W3C Web Access Control) read back what was written', () => {
  it('every field, public and agent grants, object and events permissions, oldest first', async () => {
    const index = storeWith([delegated, publicRead, eventsOnly].flatMap(grantQuads));
    expect(await readGrants(readerOf(index))).to.deep.equal([publicRead, delegated, eventsOnly]);
  });

  it('is stored as acl:Authorization nodes: object modes on the object, event modes on its logistics-events', () => {
    const nt = storeWith(grantQuads(delegated)).graphNTriples(delegated.iri);
    expect(nt).to.include(`<${delegated.iri}> <${ACL}accessTo> <${object(1)}>`);
    expect(nt).to.include(`<${delegated.iri}> <${ACL}mode> <${ACL}Write>`);
    expect(nt).to.include(`<${delegated.iri}#events> <${ACL}accessTo> <${object(1)}/logistics-events>`);
    expect(nt).to.include(`<${delegated.iri}#events> <${ACL}mode> <${ACL}Append>`);
    expect(storeWith(grantQuads(publicRead)).graphNTriples(publicRead.iri)).to.include(
      `<${ACL}agentClass> <${ACL}AuthenticatedAgent>`,
    );
  });

  it('withdrawing one object deletes exactly its accessTo quads; a withdrawn grant is no authorisation any more and is not read back', async () => {
    const index = storeWith([...grantQuads(delegated), ...grantQuads(publicRead)]);
    index.apply({
      delete: accessToQuads(delegated, [object(1)])
        .map(quadToNq)
        .join(''),
      insert: '',
    });
    expect(await readGrants(readerOf(index))).to.deep.equal([publicRead, { ...delegated, objects: [object(2)] }]);
    const withdrawal = withdrawalQuads({ ...delegated, objects: [object(2)] }, new Date(1_700_000_001_000), HOLDER);
    index.apply({ delete: withdrawal.delete.map(quadToNq).join(''), insert: withdrawal.insert.map(quadToNq).join('') });
    expect(await readGrants(readerOf(index))).to.deep.equal([publicRead]);
    const history = index.graphNTriples(delegated.iri);
    expect(history).not.to.include(`<${ACL}Authorization>`);
    expect(history)
      .to.include(`<${object(2)}>`)
      .and.include('withdrawnBy');
  });

  it('replay publishes one grant-added per stored grant', async () => {
    const index = storeWith([...grantQuads(publicRead), ...grantQuads(delegated)]);
    const events = await storedDomainEvents(readerOf(index), readRevisions(index));
    expect(events).to.deep.equal([
      { kind: 'grant-added', grant: publicRead },
      { kind: 'grant-added', grant: delegated },
    ]);
  });
});
