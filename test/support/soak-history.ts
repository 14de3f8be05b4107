import { expect } from 'chai';
import { add, change, patch, type Requester, statusOf, str } from './changes.js';

// What the cluster tests check of an object's history after many clients changed it at once, each change adding
// one remark "client N change M".

/** The remarks the clients' changes added, in the order a body holds them. */
export const remarksOf = (text: string) => [...text.matchAll(/client \d+ change \d+/g)].map((m) => m[0]);

export interface Outcomes {
  /** The remarks of the changes accepted (201, then REQUEST_ACCEPTED), of every object. */
  accepted: ReadonlySet<string>;
  /** The remarks of the changes whose outcome the client did not learn (503): applied or not. */
  unanswered: ReadonlySet<string>;
}

/**
 * The history of `object` read through `read`: each accepted change of it (`expected`) applied once, besides them
 * only unanswered ones, and one revision per applied change, numbered without gaps (revision n + 1 holds one remark
 * more than revision n). `detail` explains a mismatch of the latest revision.
 */
export async function expectAppliedOnce(
  read: (path: string) => Promise<Response>,
  object: string,
  expected: readonly string[],
  { accepted, unanswered }: Outcomes,
  detail: () => Promise<string>,
): Promise<void> {
  const latest = await read(object);
  const stored = remarksOf(await latest.text());
  // Applied once each: a remark is in the latest revision once.
  expect(new Set(stored).size, object).to.equal(stored.length);
  // Every accepted change is there; besides them only changes answered 503, whose outcome the client did not learn.
  const matches =
    expected.every((r) => stored.includes(r)) && stored.every((r) => accepted.has(r) || unanswered.has(r));
  expect([...stored].filter((r) => !unanswered.has(r)).sort(), matches ? object : await detail()).to.deep.equal(
    [...expected].sort(),
  );
  const latestRevision = Number(latest.headers.get('latest-revision'));
  expect(latestRevision, object).to.equal(stored.length + 1);
  for (let n = 1; n <= latestRevision; n++) {
    const res = await read(`${object}?revision=${n}`);
    expect(res.status, `${object} revision ${n}`).to.equal(200);
    expect(remarksOf(await res.text()), `${object} revision ${n}`).to.have.length(n - 1);
  }
}

/** The remarks of the changes of `sent` answered 201 whose request `server` tells accepted. */
export async function acceptedChanges(server: Requester, sent: readonly Sent[]): Promise<Set<string>> {
  const accepted = new Set<string>();
  for (const s of sent.filter((x) => x.status === 201))
    if ((await statusOf(server, s.request!)) === 'REQUEST_ACCEPTED') accepted.add(s.remark);
  return accepted;
}

/** A change a client sent, and what it was answered. */
export interface Sent {
  /** When the answer came. */
  at: number;
  /** The revision the change was built on. */
  revision: number;
  object: string;
  remark: string;
  status: number;
  /** The ChangeRequest a 201 created. */
  request?: string;
  /** A 409's error messages. */
  message?: string;
}

/**
 * Reads `object` (200 expected) and changes it on the revision read, adding `remark`, through `server`: what was
 * sent and answered, and the answer (its body read).
 */
export async function changeOnRead(
  server: Requester,
  read: (path: string) => Promise<Response>,
  object: string,
  remark: string,
): Promise<{ sent: Sent; answer: Response }> {
  const current = await read(object);
  expect(current.status).to.equal(200);
  await current.arrayBuffer();
  const revision = Number(current.headers.get('latest-revision'));
  const answer = await patch(server, object, change(object, revision, [add(object, 'remarks', str(remark))]));
  const body = await answer.text();
  const sent = {
    at: Date.now(),
    revision,
    object,
    remark,
    status: answer.status,
    request: answer.headers.get('location') ?? undefined,
    message: [...body.matchAll(/"api:hasMessage":\s*"([^"]+)"/g)].map((m) => m[1]).join('; '),
  };
  return { sent, answer };
}

/** Clients changing objects at once, until stopped: what they sent and were answered. */
export interface ChangeLoad {
  sent: Sent[];
  /** Answers no client expects (a 503 says when to try again: no fault), and requests that got no answer. */
  faults: string[];
  /** Changes whose outcome the client did not learn. */
  unanswered: Set<string>;
  stop(): Promise<void>;
}

const NTRIPLES = { headers: { Accept: 'application/n-triples' } };

/** Waits as a 503's Retry-After says; false for any other answer. */
async function waitedRetryAfter(res: Response): Promise<boolean> {
  const seconds = res.headers.get('retry-after');
  if (res.status !== 503 || seconds === null) return false;
  await new Promise((resolve) => setTimeout(resolve, Number(seconds) * 1000));
  return true;
}

/**
 * `clients` clients, each changing a random one of `objects` through `serverFor(client, change)`, each change built on
 * the revision just read through the same server, until stopped.
 */
export function startChangeLoad(
  serverFor: (client: number, change: number) => Requester,
  objects: readonly string[],
  clients: number,
): ChangeLoad {
  const load: Omit<ChangeLoad, 'stop'> = { sent: [], faults: [], unanswered: new Set() };
  let running = true;
  const client = async (i: number) => {
    for (let n = 0; running; n++) {
      const server = serverFor(i, n);
      const read = async (path: string): Promise<Response> => {
        for (;;) {
          const res = await server.request(path, NTRIPLES);
          if (res.status === 200) return res;
          await res.arrayBuffer();
          if (!(await waitedRetryAfter(res))) return res;
        }
      };
      const object = objects[Math.floor(Math.random() * objects.length)];
      const remark = `client ${i} change ${n}`;
      try {
        const { sent: outcome, answer } = await changeOnRead(server, read, object, remark);
        load.sent.push(outcome);
        if (await waitedRetryAfter(answer)) load.unanswered.add(remark);
        // A 409 is a lost race: the revision built on was replaced, or another change of it is under way.
        else if (outcome.status !== 201 && !(outcome.status === 409 && /revision/.test(outcome.message ?? '')))
          load.faults.push(`${remark} of ${object}: ${outcome.status} ${outcome.message}`);
      } catch (err) {
        load.unanswered.add(remark);
        load.faults.push(`${remark} of ${object}: ${(err as Error).message}`);
      }
    }
  };
  const all = Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
  return {
    ...load,
    async stop() {
      running = false;
      await all;
    },
  };
}

/**
 * Every accepted change of each of `objects` applied once, with a revision each, through each of `servers`, which tell
 * the same audit trail.
 */
export async function expectEachAppliedOnceEverywhere(
  servers: readonly Requester[],
  objects: readonly string[],
  sent: readonly Sent[],
  outcomes: Outcomes,
): Promise<void> {
  for (const object of objects) {
    const expected = sent.filter((s) => s.object === object && outcomes.accepted.has(s.remark)).map((s) => s.remark);
    const detail = async () =>
      [object, ...sent.filter((s) => s.object === object).map((s) => `${s.remark}: ${s.status} at ${s.at}`)].join('\n');
    const trails = new Set<string>();
    for (const server of servers) {
      await expectAppliedOnce((path) => server.request(path, NTRIPLES), object, expected, outcomes, detail);
      trails.add(await (await server.request(`${object}/audit-trail`, NTRIPLES)).text());
    }
    expect(trails.size, `${object}/audit-trail`).to.equal(1);
  }
}
