import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import { authorization, grant, PARTNER_CLIENTS, partner, partnerToken } from '../support/access.js';
import { startBalancer, type Balancer } from '../support/balancer.js';
import { createObject, type Requester, statusOf } from '../support/changes.js';
import { direct, holdPort } from '../support/cluster.js';
import { noteSecret } from '../support/log-sink.js';
import { METRICS_TOKEN, scrapeMetrics } from '../support/metrics.js';
import { ServerProcess } from '../support/server-process.js';
import { freePort } from '../support/server.js';
import {
  type ChangeLoad,
  changeOnRead,
  expectEachAppliedOnceEverywhere,
  remarksOf,
  type Sent,
  startChangeLoad,
  acceptedChanges,
} from '../support/soak-history.js';
import { type EngineConnection, engineSettings } from '../support/virtuoso.js';
import { runWithEngineUp } from '../support/engine-processes.js';

// A third server process joins two over one Virtuoso (store.sparql.sharedWriters) while 20 clients change objects
// through nginx. Asked directly from its first request on, it answers what the others acknowledged before (objects
// and access decisions alike); a change through it is seen by the others; nginx, reloaded with it among its
// upstreams, goes on answering. Whatever TEST_STORE_BACKEND says.

const CLIENTS = 20;
const OBJECTS = 30;
/** The first objects, each granted to the partner by a grant of its own, withdrawn while the load runs. */
const GRANTED = 4;
/** The load runs at least this long, and until the checks of the added process are done. */
const LOAD_MS = 12_000;
/** The third process is started this far into the load. */
const JOIN_AFTER_MS = 3_000;
/** Changes through the added process add a remark "client JOINED change N", as the clients' do. */
const JOINED = CLIENTS;
/** Objects read through the added process between its other checks, each the one a client changed last. */
const PROBES_PER_ROUND = 10;
const PARTNER = 'airline';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const NTRIPLES = { headers: { Accept: 'application/n-triples' } };

/** What undici says when the server closed a kept-alive connection under a request sent on it: no answer came. */
const CLOSED_UNDER_REQUEST = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
const RESENDS = 3;

/**
 * `server`, a request resent when its connection was closed before any answer. nginx, reloaded, closes its old
 * workers' idle kept-alive connections, and a request sent on one in that instant meets the close: an HTTP/1.1
 * client resends it (RFC 9112 section 9.3.1). Safe for a PATCH too: a Change names the revision it is built on,
 * so a resent one applies at most once.
 */
const resending = (server: Requester): Requester => ({
  request: async (path, init) => {
    for (let sent = 1; ; sent++) {
      try {
        return await server.request(path, init);
      } catch (err) {
        const code = ((err as Error).cause as { code?: string } | undefined)?.code;
        if (sent > RESENDS || code === undefined || !CLOSED_UNDER_REQUEST.has(code))
          throw new Error(`${(err as Error).message} (${code}, sent ${sent} time(s))`);
      }
    }
  },
});

/** The status of a GET of `path`, its body read. */
async function statusOfGet(server: Requester, path: string): Promise<number> {
  const res = await server.request(path);
  await res.arrayBuffer();
  return res.status;
}

/** An object read through the added process: when the request was sent and what it answered. */
interface Probe {
  object: string;
  sentAt: number;
  status: number;
  latest: number;
  remarks: string[];
}

async function probe(server: Requester, object: string): Promise<Probe> {
  const sentAt = Date.now();
  const res = await server.request(object, NTRIPLES);
  const remarks = remarksOf(await res.text());
  return { object, sentAt, status: res.status, latest: Number(res.headers.get('latest-revision')), remarks };
}

interface Outcomes {
  accepted: ReadonlySet<string>;
  unanswered: ReadonlySet<string>;
}

/**
 * What a probe tells wrong: not 200, behind a change accepted and acknowledged before it was sent, holding a change
 * never accepted, or not a revision as written (revision n holds n - 1 changes).
 */
function probeFaults(p: Probe, sent: readonly Sent[], { accepted, unanswered }: Outcomes): string[] {
  const read = `${p.object} read at ${p.sentAt} (revision ${p.latest})`;
  if (p.status !== 200) return [`${read}: ${p.status}`];
  const missing = sent
    .filter((s) => s.object === p.object && s.at < p.sentAt && accepted.has(s.remark) && !p.remarks.includes(s.remark))
    .map((s) => `${s.remark} acknowledged at ${s.at}`);
  const unknown = p.remarks.filter((r) => !accepted.has(r) && !unanswered.has(r));
  return [
    ...(missing.length > 0 ? [`${read} misses ${missing.join(', ')}`] : []),
    ...(unknown.length > 0 ? [`${read} holds changes never accepted: ${unknown.join(', ')}`] : []),
    ...(p.latest !== p.remarks.length + 1 ? [`${read} holds ${p.remarks.length} changes`] : []),
  ];
}

/**
 * Starts two processes over `engine`, 20 clients changing objects through nginx, adds a third
 * and checks what it answers; throws what it found wrong.
 */
async function addProcessUnderLoad(dataDir: string, engine: EngineConnection): Promise<void> {
  const held = await holdPort();
  const baseUrl = `http://127.0.0.1:${held.port}`;
  const config = {
    baseUrl,
    identityProvider: { clients: PARTNER_CLIENTS },
    metrics: { token: METRICS_TOKEN },
    store: {
      backend: 'sparql' as const,
      sparql: {
        ...engineSettings(engine),
        sharedWriters: true,
      },
    },
  };
  const dirs = [1, 2, 3].map((i) => join(dataDir, `process-${i}`));
  const ports = await Promise.all(dirs.map(() => freePort()));
  const upstreams = ports.map((port) => `127.0.0.1:${port}`);
  const processes: ServerProcess[] = [];
  const start = async (i: number) => {
    // One token issuer key for all.
    if (i === 0) await mkdir(dirs[0], { recursive: true });
    else await shareIdentityProvider(dirs[0], dirs[i]);
    const started = new ServerProcess({ dataDir: dirs[i], port: ports[i], config });
    processes.push(started);
    return started.ready;
  };
  let balancer: Balancer | undefined;
  let load: ChangeLoad | undefined;
  try {
    const { token } = await start(0);
    await start(1);
    await held.release();
    balancer = await startBalancer({ port: held.port, upstreams: upstreams.slice(0, 2) });
    const [first, second, added] = upstreams.map((upstream) => direct(`http://${upstream}`, token));
    const balanced = resending(direct(baseUrl, token));
    const partnerTokenOf = await partnerToken({ url: `http://${upstreams[0]}` }, PARTNER);
    noteSecret(partnerTokenOf);
    const [firstAsPartner, secondAsPartner, addedAsPartner] = upstreams.map((upstream) =>
      direct(`http://${upstream}`, partnerTokenOf),
    );

    const objects = await Promise.all(Array.from({ length: OBJECTS }, () => createObject(balanced)));
    const grants = [];
    for (const object of objects.slice(0, GRANTED))
      grants.push(await grant(first, authorization(partner(PARTNER), [object], ['Read'])));
    /** Access decisions that were not the one expected. */
    const refusals: string[] = [];
    const expectStatus = (what: string, status: number, wanted: number) => {
      if (status !== wanted) refusals.push(`${what}: ${status}, not ${wanted}`);
    };
    expectStatus('granted, through process 1', await statusOfGet(firstAsPartner, objects[0]), 200);
    expectStatus('not granted, through process 1', await statusOfGet(firstAsPartner, objects[GRANTED]), 403);

    load = startChangeLoad(() => balanced, objects, CLIENTS);
    const loadStarted = Date.now();
    await sleep(JOIN_AFTER_MS);
    const launched = Date.now();
    await start(2);
    const startMs = Date.now() - launched;

    // Its first requests, at once: every object, a granted one and one not granted to the partner.
    const reloaded = balancer.reload(upstreams);
    const probes: Probe[] = [];
    const [granted, notGranted, ...firstProbes] = await Promise.all([
      statusOfGet(addedAsPartner, objects[0]),
      statusOfGet(addedAsPartner, objects[GRANTED]),
      ...objects.map((object) => probe(added, object)),
    ]);
    probes.push(...(firstProbes as Probe[]));
    expectStatus('granted, its first request', granted as number, 200);
    expectStatus('not granted, its first request', notGranted as number, 403);

    /** The object of the change acknowledged last: a process behind the others would miss it. */
    const lastChanged = () => {
      const { sent } = load!;
      for (let i = sent.length - 1; i >= 0; i--) if (sent[i].status === 201) return sent[i].object;
      return objects[0];
    };
    /** Changes through the added process, each then read through the other two. */
    const seenByOthers: string[] = [];
    let joinedChanges = 0;
    let joinedPatches = 0;
    const changeThroughAdded = async () => {
      const read = (path: string) => added.request(path, NTRIPLES);
      for (let attempt = 0; attempt < 20; attempt++) {
        const object = objects[Math.floor(Math.random() * OBJECTS)];
        const { sent } = await changeOnRead(added, read, object, `client ${JOINED} change ${joinedChanges++}`);
        joinedPatches += 1;
        load!.sent.push(sent);
        expect(sent.status, `a change through the added process: ${sent.message}`).to.be.oneOf([201, 409]);
        // Lost a race: answered 409, or created and rejected (the revision it was built on was replaced meanwhile).
        if (sent.status === 409 || (await statusOf(added, sent.request!)) !== 'REQUEST_ACCEPTED') continue;
        for (const [name, other] of [
          ['process 1', first],
          ['process 2', second],
        ] as const) {
          const seen = await probe(other, object);
          if (seen.latest <= sent.revision || !seen.remarks.includes(sent.remark))
            seenByOthers.push(`${sent.remark} (on revision ${sent.revision}) not in ${name}'s revision ${seen.latest}`);
        }
        return;
      }
      throw new Error('20 changes through the added process lost the race');
    };

    for (let i = 0; i < GRANTED; i++) {
      // Withdrawn through process 1: refused by the added process right after (and by process 2).
      expectStatus(`granted ${i}, before its withdrawal`, await statusOfGet(addedAsPartner, objects[i]), 200);
      const withdrawn = await first.request(grants[i], { method: 'DELETE' });
      expectStatus(`withdrawal ${i}`, withdrawn.status, 204);
      expectStatus(`granted ${i}, right after its withdrawal`, await statusOfGet(addedAsPartner, objects[i]), 403);
      expectStatus(
        `granted ${i}, after its withdrawal, process 2`,
        await statusOfGet(secondAsPartner, objects[i]),
        403,
      );
      // Granted through process 1: read through the added process right after.
      const object = objects[GRANTED + 1 + i];
      await grant(first, authorization(partner(PARTNER), [object], ['Read']));
      expectStatus(`newly granted ${i}, right after`, await statusOfGet(addedAsPartner, object), 200);
      await changeThroughAdded();
      for (let n = 0; n < PROBES_PER_ROUND; n++) probes.push(await probe(added, lastChanged()));
    }
    while (Date.now() < loadStarted + LOAD_MS) probes.push(await probe(added, lastChanged()));
    await reloaded;
    await load.stop();

    expect(startMs, 'the added process listened within').to.be.below(20_000);
    expect(refusals, 'access decisions').to.deep.equal([]);
    expect(seenByOthers, 'changes through the added process seen by the others').to.deep.equal([]);
    // nginx went on answering while it reloaded: every request through it was answered, as a client expects.
    expect(load.faults, 'answers through the balancer').to.deep.equal([]);
    // And the added process took its share of the clients' changes through nginx.
    const metrics = await scrapeMetrics(`http://${upstreams[2]}/metrics`);
    const patches = metrics
      .split('\n')
      .filter((l) => l.startsWith('onerecord_http_request_duration_seconds_count{') && l.includes('method="PATCH"'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(patches, 'changes the added process took from nginx').to.be.greaterThan(joinedPatches);

    const accepted = await acceptedChanges(first, load.sent);
    const outcomes = { accepted, unanswered: load.unanswered };
    expect(accepted.size).to.be.greaterThan(CLIENTS);
    expect(
      probes.flatMap((p) => probeFaults(p, load!.sent, outcomes)),
      'objects read through the added process',
    ).to.deep.equal([]);

    // Every accepted change applied once, with a revision each, through each process, which tell the same trail.
    await expectEachAppliedOnceEverywhere([first, second, added], objects, load.sent, outcomes);
  } finally {
    await load?.stop();
    await balancer?.stop();
    for (const p of processes) await p.stop('SIGTERM');
  }
}

describe('a process added to a running cluster under load', function () {
  this.timeout(480_000);

  it('answers, asked directly from its first request on, every change and grant withdrawal acknowledged before; a change through it is seen by the others; nginx reloaded with it goes on answering; every accepted change is applied once, as each process tells', () =>
    runWithEngineUp(addProcessUnderLoad));
});
