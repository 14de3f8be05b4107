/**
 * Fair share under one partner's flood (own server process, loopback): the data holder's GET of a
 * Logistics Object, one sequential client, idle and while one partner keeps FLOOD requests in flight,
 * each a PATCH whose body is slow to parse (a type-scoped context over `nodes` nodes, which the fast
 * reader leaves to jsonld.js on its worker, where 12,000 take seconds and end past `limits.triples`)
 * trickled in pieces over about a second; a refused one (429, 503) waits its Retry-After, then
 * comes again. The flood is sent from a thread of its own, so its work does not delay the timed
 * GETs' client. Run against the server with its default per-caller
 * budget (limits.perCaller) and with the budget lifted, in one run: the p99 ratio to idle, the
 * flood's answers and the server's peak RSS.
 *   npm run build && node dist/scripts/bench/fair-share.js [seconds=8] [flood=80] [nodes=12000]
 */
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { typeScopedNodes } from './fixtures.js';
import { fmt, LoadClient, machine, percentile, startTarget, type OneRecordTarget } from './harness.js';

const seconds = Number(process.argv[2] ?? 8);
const flood = Number(process.argv[3] ?? 80);
const nodes = Number(process.argv[4] ?? 12_000);
/** Goal of issue 51: the holder's GET p99 under the flood at most this multiple of idle. */
const GOAL = 2;
const TRICKLE_PIECES = 10;
const TRICKLE_PAUSE_MS = 100;

/** Sends `body` in TRICKLE_PIECES pieces, TRICKLE_PAUSE_MS apart; the answer's status and Retry-After (s). */
function trickle(url: string, token: string, body: Buffer): Promise<{ status: number; retryAfter: number }> {
  return new Promise((resolve) => {
    const headers = {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/ld+json',
      'Content-Length': body.length,
    };
    const req = request(url, { method: 'PATCH', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, retryAfter: Number(res.headers['retry-after'] ?? 0) }),
      );
    });
    // A connection the server closes while the body still comes (an answer before the body's end) counts as its answer.
    req.on('error', () => resolve({ status: 0, retryAfter: 1 }));
    const piece = Math.ceil(body.length / TRICKLE_PIECES);
    let sent = 0;
    const next = () => {
      if (req.destroyed) return;
      const end = Math.min(body.length, sent + piece);
      req.write(body.subarray(sent, end));
      sent = end;
      if (sent < body.length) setTimeout(next, TRICKLE_PAUSE_MS);
      else req.end();
    };
    next();
  });
}

/** GET `url` one after another for `seconds`: latencies in ms, sorted. */
async function latencies(client: LoadClient, url: string): Promise<number[]> {
  const out: number[] = [];
  for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
    const started = process.hrtime.bigint();
    const res = await client.send(url, 'GET');
    if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
    out.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return out.sort((a, b) => a - b);
}

const rssBytes = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

interface Run {
  idle: number[];
  flooded: number[];
  statuses: Map<number, number>;
  peakRss: number;
}

interface FloodOrders {
  url: string;
  token: string;
  body: Uint8Array;
  flood: number;
}

/** The flood's thread: `flood` loops of trickled bodies until told to stop, then the count of each status. */
async function floodThread({ url, token, body, flood: loops }: FloodOrders): Promise<void> {
  const statuses = new Map<number, number>();
  let stop = false;
  parentPort!.once('message', () => (stop = true));
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (!stop) {
        const { status, retryAfter } = await trickle(url, token, Buffer.from(body));
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (retryAfter > 0 && !stop) await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
      }
    }),
  );
  parentPort!.postMessage([...statuses]);
}

async function run(overrides: Record<string, unknown>): Promise<Run> {
  const target = await startTarget<OneRecordTarget>('onerecord', [], {
    BENCH_REVISIONS: '1',
    BENCH_PARTNERS: '1',
    BENCH_OVERRIDES: JSON.stringify(overrides),
  });
  try {
    const { token, oneRevision, partners } = target.info;
    const holder = new LoadClient({ Authorization: `Bearer ${token}` });
    await latencies(holder, oneRevision); // warm-up, discarded
    const idle = await latencies(holder, oneRevision);
    const body = Buffer.from(JSON.stringify(typeScopedNodes(nodes)));
    let peakRss = 0;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssBytes(target.process.pid!))), 100);
    const orders: FloodOrders = { url: oneRevision, token: partners[0].token, body, flood };
    const flooding = new Worker(new URL(import.meta.url), { workerData: orders });
    const counted = new Promise<[number, number][]>((resolve) => flooding.once('message', resolve));
    // The flood fills up before the holder's GETs are timed.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const flooded = await latencies(holder, oneRevision);
    flooding.postMessage('stop');
    const statuses = new Map(await counted);
    await flooding.terminate();
    clearInterval(sampler);
    holder.close();
    return { idle, flooded, statuses, peakRss };
  } finally {
    await target.stop();
  }
}

/** Both servers, one after the other, and the table. */
async function compare(): Promise<void> {
  const budgeted = await run({});
  const unbounded = await run({
    limits: { perCaller: { requestsInFlight: 1_000_000, bodyBytesInFlight: 2 ** 40, jsonLdDocuments: 1_000_000 } },
  });

  const row = (name: string, r: Run) => {
    const ratio = percentile(r.flooded, 0.99) / percentile(r.idle, 0.99);
    const answers = [...r.statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${status} × ${fmt(n)}`)
      .join(', ');
    return `| ${name} | ${fmt(percentile(r.idle, 0.99), 2)} | ${fmt(percentile(r.flooded, 0.5), 2)} | ${fmt(percentile(r.flooded, 0.99), 2)} | ${fmt(r.flooded[r.flooded.length - 1], 1)} | ${fmt(ratio, 2)} | ${fmt(r.peakRss / 2 ** 20)} | ${answers} |`;
  };
  console.log(
    `Fair share: ${flood} trickled slow-to-parse PATCH bodies of ${fmt(Buffer.byteLength(JSON.stringify(typeScopedNodes(nodes))))} bytes from one partner; holder GET one sequential client, ${seconds} s per phase; on ${machine()}`,
  );
  console.log(
    '| server | idle p99 ms | flooded p50 ms | flooded p99 ms | flooded max ms | p99 ratio | peak RSS MB | flood answers |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  console.log(row('per-caller budget (defaults)', budgeted));
  console.log(row('budget lifted', unbounded));
  console.log(`goal: p99 ratio <= ${GOAL} with the budget`);
}

if (isMainThread) await compare();
else await floodThread(workerData as FloodOrders);
