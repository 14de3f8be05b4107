import { expect } from 'chai';
import { add, change, patch, type Requester, str } from './changes.js';

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
