import { expect } from 'chai';
import type { Caller } from '../src/domain/access/authorizer.js';
import { Representations } from '../src/http/representations.js';
import { add, change, createObject, patch, str } from './support/changes.js';
import { startTestServer, type TestServer } from './support/server.js';

const PLAIN = { embedded: false };

describe('serialised bodies: kept while they can be asked for, within a byte budget', () => {
  let server: TestServer;
  let caller: Caller;

  before(async () => {
    server = await startTestServer();
    caller = { agent: server.running.services.holder, internal: true };
  });
  after(() => server.close());

  const objects = () => server.running.services.objects;
  /** The latest revision as the index holds it (the embedded store's holds every object: at once). */
  const latestView = (object: string) => {
    const view = objects().readLatest(object, caller);
    if ('then' in view) throw new Error(`${object} is not held in memory`);
    return view;
  };
  const render = (representations: Representations, object: string) =>
    representations.render(latestView(object), 'jsonld', caller, PLAIN);
  /** Adds a remark to the object's latest revision, accepted at once (the holder's, `auto` policy). */
  const changed = async (object: string, remark: string) => {
    const latest = latestView(object).latest.number;
    expect(
      (await patch(server, object, change(object, latest, [add(object, 'remarks', str(remark))]))).status,
    ).to.equal(201);
    expect(latestView(object).latest.number).to.equal(latest + 1);
  };

  it("forgets an object's bodies, of its latest and earlier revisions, once it gets a new revision", async () => {
    const representations = new Representations(objects(), 1 << 20);
    const object = await createObject(server);
    await changed(object, 'second');
    const first = await objects().read(object, caller, { revision: 1 });
    await render(representations, object);
    await representations.render(first, 'turtle', caller, PLAIN);
    expect(representations.cached(first, 'turtle')?.toString()).to.include('hasLatestRevision');
    expect(representations.held.objects).to.equal(1);

    await changed(object, 'third');
    expect(representations.held).to.deep.equal({ objects: 0, bytes: 0 });
    expect(representations.cached(first, 'turtle')).to.equal(undefined);
    const body = JSON.parse((await render(representations, object)).toString());
    expect(body['api:hasLatestRevision']).to.equal(3);
  });

  it('keeps each body in memory of its own size, counted as it is (not a slice of a larger pool it would keep)', async () => {
    const representations = new Representations(objects(), 1 << 20);
    const object = await createObject(server);
    const body = await render(representations, object);
    expect(body.length).to.be.below(Buffer.poolSize / 2);
    expect(body.buffer.byteLength).to.equal(body.length);
    expect(representations.held.bytes).to.equal(body.length);
  });

  it('does not keep a body built for a revision that was superseded meanwhile', async () => {
    const representations = new Representations(objects(), 1 << 20);
    const object = await createObject(server);
    const before = latestView(object);
    await changed(object, 'meanwhile');
    await representations.render(before, 'jsonld', caller, PLAIN);
    expect(representations.held).to.deep.equal({ objects: 0, bytes: 0 });
  });

  it('holds at most its byte budget, forgetting the bodies kept longest ago', async () => {
    const made = await Promise.all([1, 2, 3, 4, 5].map(() => createObject(server)));
    const sizes = await Promise.all(made.map((o) => render(new Representations(objects(), 1 << 20), o)));
    const budget = sizes[3]!.length + sizes[4]!.length;
    const representations = new Representations(objects(), budget);
    for (const object of made) await render(representations, object);
    expect(representations.held).to.deep.equal({ objects: 2, bytes: budget });
    expect(representations.cached(latestView(made[0]!), 'jsonld')).to.equal(undefined);
    expect(representations.cached(latestView(made[4]!), 'jsonld')).to.deep.equal(sizes[4]);
  });
});
