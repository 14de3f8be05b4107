/**
 * Notification fan-out: one object with 1,000 subscriptions spread over 10 subscriber servers.
 * Measures the time from a PATCH until all 1,000 notifications were stored by the subscribers,
 * and the publisher's PATCH latency and throughput on an object with the 1,000 subscriptions
 * (notifications delivered in the background meanwhile) and on an object of the same server with
 * none, in alternating rounds of the same run (after a round of each kind that warms the server up).
 *
 * All servers are real: the publisher in its own process, the 10 subscriber servers in a second
 * one (each its own data directory, identity provider and port, trusting the publisher's issuer),
 * fsync on everywhere. Subscriber i is the Organization `{server i % 10}/logistics-objects/org-i`,
 * so its notifications go to that server's POST /notifications; each may read the object through
 * a grant (POST /internal/acl), so the default `auto` policy accepts its subscription.
 *   npm run build && node dist/scripts/bench/fanout.js [changes per round] [rounds]
 * With PROFILE_DIR set, the publisher writes a CPU profile (node --cpu-prof) into that directory;
 * with SUBSCRIBERS_PROFILE_DIR, the subscriber servers' process does; PROFILE_INTERVAL_US sets
 * their sampling interval (1000 µs unless set: too coarse for a round of 40 PATCHes), and each round's
 * kind, number (-1: warm-up), start and end go to stderr on the profiles' clock (µs).
 * The publisher's CPU time (all its threads) is measured per PATCH in each kind of round, also
 * counting the delivery that goes on after the round's last answer: its own cost, apart from the
 * subscribers'. With SUBSCRIBERS_NICE=n the subscriber servers run at that lower priority (nice n).
 *
 * Where the processes run: the ratios are the publisher's, and the subscriber servers stand for
 * partners' servers, which run on machines of their own. On the same cores they take the CPU they
 * spend storing notifications (~0.8 ms each, ~200 a second while the publisher answers) from the
 * publisher in the rounds with subscriptions only, which is not the publisher's cost. So by default
 * each process, with all its threads, runs on half of the CPUs this one may use (taskset(1); on 2
 * CPUs, the publisher on the first and the subscribers on the second), in both kinds of rounds alike;
 * the driver (the load client) may run on any. FANOUT_PLACEMENT=shared runs both on all of them;
 * PUBLISHER_CPUS and SUBSCRIBERS_CPUS (CPU lists, e.g. 0 and 1) choose the CPUs.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { API } from '../../src/rdf/vocab.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { markedPiece, replaceMarkChange } from './fixtures.js';
import { cpuProfileFlags, LoadClient, SERVER_NODE_FLAGS, fmt, machine } from './harness.js';

const SUBSCRIBERS = 1000;
const SERVERS = 10;
const ACL = 'http://www.w3.org/ns/auth/acl#';

interface Ready {
  url: string;
  token: string;
}

const base = (port: number) => `http://127.0.0.1:${port}`;

/** Starts a real server on `port` with a data directory of its own, removed when it is stopped. */
async function serve(
  port: number,
  overrides: Record<string, unknown>,
): Promise<{ server: RunningServer; stop(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-fanout-'));
  const server = await startServer(
    loadConfig({}, { port, baseUrl: base(port), dataDir, outbound: { allowPrivateAddresses: true }, ...overrides }),
    createLogger('silent'),
  );
  return { server, stop: () => server.close().then(() => rm(dataDir, { recursive: true, force: true })) };
}

const stopOnSigterm = (stops: (() => Promise<void>)[]) =>
  process.on('SIGTERM', () => void Promise.all(stops.map((stop) => stop())).then(() => process.exit(0)));

/** The publisher: node fanout.js publisher <port> */
async function publisher(): Promise<void> {
  const { server, stop } = await serve(Number(process.argv[3]), {});
  const token = await server.services.identityProvider!.issue(server.services.holder);
  process.send!({ url: server.url, token } satisfies Ready);
  // Asked by the driver: this process's CPU time so far, in µs (all threads).
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send!(user + system);
  });
  stopOnSigterm([stop]);
}

/** CPU time of process `pid` so far in µs (all threads), from /proc (10 ms resolution). */
function processCpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Waits until process `pid` used less than a tenth of a core over half a second (30 s at most). */
async function quiet(pid: number): Promise<void> {
  for (let waited = 0; waited < 30_000; waited += 500) {
    const before = processCpuMicros(pid);
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (processCpuMicros(pid) - before < 50_000) return;
  }
}

/**
 * The subscriber servers: node fanout.js subscribers <publisher URL> <ports, comma-separated>.
 * Counts the notifications all of them stored; a message `n` from the driver is answered once
 * the count has reached n.
 */
async function subscribers(): Promise<void> {
  const publisherUrl = process.argv[3];
  const trustedIssuers = [{ issuer: `${publisherUrl}/idp`, jwksUrl: `${publisherUrl}/idp/.well-known/jwks.json` }];
  const running = await Promise.all(process.argv[4].split(',').map((port) => serve(Number(port), { trustedIssuers })));
  let stored = 0;
  let waiting: number | undefined;
  for (const { server } of running) {
    server.store.committed.subscribe((events) => {
      for (const e of events) if (e.kind === 'notification-received') stored += 1;
      if (waiting !== undefined && stored >= waiting) {
        waiting = undefined;
        process.send!(stored);
      }
    });
  }
  process.on('message', (n: number) => {
    if (stored >= n) process.send!(stored);
    else waiting = n;
  });
  process.send!(0);
  stopOnSigterm(running.map((r) => r.stop));
}

/** The CPUs this process may use, from /proc (`Cpus_allowed_list`, e.g. `0-3,6`). */
function allowedCpus(): number[] {
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
  return list.split(',').flatMap((range) => {
    const [first, last = first] = range.split('-').map(Number);
    return Array.from({ length: last - first + 1 }, (_, i) => first + i);
  });
}

/** The taskset(1) CPU list of the publisher and of the subscriber servers (undefined: any CPU). */
function placement(): { publisher?: string; subscribers?: string } {
  const { PUBLISHER_CPUS: publisher, SUBSCRIBERS_CPUS: subscribers } = process.env;
  if (publisher || subscribers || process.env.FANOUT_PLACEMENT === 'shared') return { publisher, subscribers };
  const cpus = allowedCpus();
  const half = Math.floor(cpus.length / 2);
  if (half === 0 || spawnSync('taskset', ['-V']).error) return {};
  return { publisher: cpus.slice(0, half).join(','), subscribers: cpus.slice(half).join(',') };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * The publisher's or the subscribers' process, on `cpus` (a taskset(1) list; undefined: any).
 * `PROFILE_DIR=dir` (`SUBSCRIBERS_PROFILE_DIR=dir`): the publisher (the subscribers' process) writes a V8 CPU profile there (node --cpu-prof) when it stops.
 */
function child(args: string[], cpus: string | undefined): ChildProcess {
  const dir = args[0] === 'publisher' ? process.env.PROFILE_DIR : process.env.SUBSCRIBERS_PROFILE_DIR;
  // Started under taskset(1) and nice(1), so that every thread of the process (the servers' workers too) has the CPUs and the priority.
  const nice = args[0] === 'subscribers' ? Number(process.env.SUBSCRIBERS_NICE ?? 0) : 0;
  const wrappers = [...(cpus ? ['taskset', '-c', cpus] : []), ...(nice > 0 ? ['nice', '-n', String(nice)] : [])];
  const flags = [...SERVER_NODE_FLAGS, ...cpuProfileFlags(dir, process.env.PROFILE_INTERVAL_US)];
  const node =
    wrappers.length > 0
      ? { execPath: wrappers[0], execArgv: [...wrappers.slice(1), process.execPath, ...flags] }
      : { execArgv: flags };
  const c = fork(fileURLToPath(import.meta.url), args, node);
  process.once('exit', () => c.kill('SIGKILL'));
  return c;
}

/** The forked publisher and subscriber servers, as the driver uses them. */
interface Bench {
  /** The publisher's base URL, and a client sending requests to it as its holder. */
  url: string;
  client: LoadClient;
  pub: ChildProcess;
  subs: ChildProcess;
  /** The publisher's CPU time so far, in µs. */
  publisherCpu(): Promise<number>;
  /** Resolves once the subscribers have stored `more` notifications beyond those awaited before. */
  stored(more: number): Promise<unknown>;
}

/** An object of the publisher and the revision its next change is based on. */
interface Tracked {
  iri: string;
  revision: number;
}

interface Round {
  latencies: number[];
  seconds: number;
}

interface RoundResults {
  without: Round;
  with: Round;
  /**
   * Publisher CPU µs: in the rounds without subscriptions, in those with (answers only), and in those with until all
   * was delivered; subscribers' CPU µs in the rounds with, until delivered.
   */
  cpu: { without: number; withAnswering: number; withDelivered: number; subscribers: number };
  drainMs: number;
}

async function driver(): Promise<void> {
  const changes = Number(process.argv[2] ?? 20);
  const rounds = Number(process.argv[3] ?? 2);
  const port = 18500 + Math.floor(Math.random() * 400);
  const subscriberPorts = Array.from({ length: SERVERS }, (_, i) => port + 1 + i);
  const cpus = placement();
  const pub = child(['publisher', String(port)], cpus.publisher);
  const [ready] = (await once(pub, 'message')) as [Ready];
  const subs = child(['subscribers', ready.url, subscriberPorts.join(',')], cpus.subscribers);
  await once(subs, 'message');
  const nice = Number(process.env.SUBSCRIBERS_NICE ?? 0);
  let expected = 0;
  const bench: Bench = {
    url: ready.url,
    client: new LoadClient({ Authorization: `Bearer ${ready.token}`, 'Content-Type': 'application/ld+json' }),
    pub,
    subs,
    publisherCpu: async () => {
      pub.send('cpu');
      const [micros] = (await once(pub, 'message')) as [number];
      return micros;
    },
    stored: (more) => {
      expected += more;
      subs.send(expected);
      return once(subs, 'message');
    },
  };
  const create = async (remarks: string): Promise<Tracked> => {
    const res = await bench.client.send(`${ready.url}/logistics-objects`, 'POST', markedPiece(remarks));
    return { iri: res.headers.location as string, revision: 1 };
  };
  const subscribed = await create('fan-out: 1,000 subscriptions');
  const unsubscribed = await create('fan-out: no subscription');

  const started = Date.now();
  await subscribeAll(bench, subscribed.iri, (i) => `${base(subscriberPorts[i % SERVERS])}/logistics-objects/org-${i}`);
  console.log(
    `# fan-out: ${machine()}; ${SUBSCRIBERS} subscriptions over ${SERVERS} subscriber servers (granted and created in ${fmt((Date.now() - started) / 1000, 1)} s)` +
      (nice > 0 ? `; subscriber servers at nice ${nice}` : '') +
      `; CPUs: publisher ${cpus.publisher ?? 'any'}, subscriber servers ${cpus.subscribers ?? 'any'}`,
  );
  await measureFanOut(bench, subscribed);
  reportRounds(await alternatingRounds(bench, { unsubscribed, subscribed }, changes, rounds), changes, rounds);
  bench.client.close();
  for (const c of [subs, pub]) {
    c.kill('SIGTERM');
    await once(c, 'exit');
  }
}

/** Grants each subscriber (the Organization `organisation(i)`) read access to `object`, and subscribes it. */
async function subscribeAll(bench: Bench, object: string, organisation: (i: number) => string): Promise<void> {
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const acl = JSON.stringify({
      '@type': `${ACL}Authorization`,
      [`${ACL}agent`]: { '@id': organisation(i) },
      [`${ACL}accessTo`]: { '@id': object },
      [`${ACL}mode`]: { '@id': `${ACL}Read` },
    });
    const granted = await bench.client.send(`${bench.url}/internal/acl`, 'POST', acl);
    if (granted.status !== 201) throw new Error(`grant ${i}: ${granted.status}`);
    const body = JSON.stringify({
      '@context': { api: API },
      '@type': 'api:Subscription',
      'api:hasSubscriber': { '@id': organisation(i) },
      'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_IDENTIFIER' },
      'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': object },
      'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
    });
    const res = await bench.client.send(`${bench.url}/subscriptions`, 'POST', body);
    if (res.status !== 201) throw new Error(`subscription ${i}: ${res.status}`);
  }
}

/** Fan-out: one change at a time, until the subscribers stored all its notifications. */
async function measureFanOut(bench: Bench, subscribed: Tracked): Promise<void> {
  const fanOut: number[] = [];
  for (let run = 0; run < 3; run++) {
    const t0 = performance.now();
    await patch(bench.client, subscribed);
    await bench.stored(SUBSCRIBERS);
    fanOut.push(performance.now() - t0);
  }
  console.log(
    `one change -> ${SUBSCRIBERS} notifications stored by the subscribers: ${fanOut.map((ms) => `${fmt(ms)} ms`).join(', ')} (target < 5000 ms)`,
  );
}

async function patch(client: LoadClient, object: Tracked): Promise<void> {
  const res = await client.send(object.iri, 'PATCH', replaceMarkChange(object.iri, object.revision++));
  if (res.status !== 201) throw new Error(`PATCH ${res.status}`);
}

/** `changes` PATCHes of `object` one after the other: their latencies and how long they took in all. */
async function patchInTurn(client: LoadClient, object: Tracked, changes: number): Promise<Round> {
  const latencies: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < changes; i++) {
    const t = performance.now();
    await patch(client, object);
    latencies.push(performance.now() - t);
  }
  return { latencies, seconds: (performance.now() - t0) / 1000 };
}

/**
 * Alternating rounds. A change with subscriptions is answered once its outbox entry is durable;
 * its 1,000 notifications are delivered meanwhile, and the next round waits until all are stored
 * and the publisher is quiet again (it records where each queue stands and removes the delivered
 * entries after the last one is stored), so the rounds without subscriptions run on a quiet server.
 * A first round of each kind warms the server's JIT and caches on the same work and is not counted.
 */
async function alternatingRounds(
  bench: Bench,
  objects: { unsubscribed: Tracked; subscribed: Tracked },
  changes: number,
  rounds: number,
): Promise<RoundResults> {
  const { subs, pub } = bench;
  const results: RoundResults = {
    without: { latencies: [], seconds: 0 },
    with: { latencies: [], seconds: 0 },
    cpu: { without: 0, withAnswering: 0, withDelivered: 0, subscribers: 0 },
    drainMs: 0,
  };
  const { cpu } = results;
  for (let round = -1; round < rounds; round++) {
    const counted = round >= 0;
    for (const [kind, object] of [
      ['without', objects.unsubscribed],
      ['with', objects.subscribed],
    ] as const) {
      const [before, subscribersBefore] = [await bench.publisherCpu(), processCpuMicros(subs.pid!)];
      const startedAt = process.hrtime.bigint() / 1000n;
      const r = await patchInTurn(bench.client, object, changes);
      // On the clock of the CPU profiles' sample times (monotonic, µs): their samples can be cut by round.
      if (process.env.PROFILE_DIR)
        console.error(`round ${kind} ${round} ${startedAt} ${process.hrtime.bigint() / 1000n}`);
      const answered = await bench.publisherCpu();
      if (counted) {
        results[kind].latencies.push(...r.latencies);
        results[kind].seconds += r.seconds;
      }
      if (kind === 'without') {
        if (counted) cpu.without += answered - before;
        continue;
      }
      const t0 = performance.now();
      await bench.stored(changes * SUBSCRIBERS);
      const drained = performance.now() - t0;
      const [delivered, subscribersAfter] = [await bench.publisherCpu(), processCpuMicros(subs.pid!)];
      await quiet(pub.pid!);
      if (!counted) continue;
      cpu.withAnswering += answered - before;
      results.drainMs += drained;
      cpu.withDelivered += delivered - before;
      cpu.subscribers += subscribersAfter - subscribersBefore;
    }
  }
  return results;
}

function reportRounds(results: RoundResults, changes: number, rounds: number): void {
  const { cpu, drainMs } = results;
  const summary = (r: Round) => ({
    median: median(r.latencies),
    perSecond: r.latencies.length / r.seconds,
  });
  const [without, withSubscriptions] = [summary(results.without), summary(results.with)];
  console.log(
    `PATCH in turn, ${rounds} x ${changes} changes each, alternating, after a warm-up round of each kind: median ${fmt(without.median, 1)} ms, ${fmt(without.perSecond, 1)} changes/s without subscriptions; ` +
      `${fmt(withSubscriptions.median, 1)} ms, ${fmt(withSubscriptions.perSecond, 1)} changes/s with ${SUBSCRIBERS}; ` +
      `latency ratio ${fmt(withSubscriptions.median / without.median, 2)}, throughput ratio ${fmt(without.perSecond / withSubscriptions.perSecond, 2)} (target <= 1.2)`,
  );
  console.log(
    `${fmt(changes * SUBSCRIBERS)} notifications of each round with subscriptions stored ${fmt(drainMs / rounds)} ms after its last PATCH answer (mean)`,
  );
  const perChange = (micros: number) => fmt(micros / (rounds * changes));
  console.log(
    `publisher CPU per PATCH (all threads): ${perChange(cpu.without)} µs without subscriptions; with ${SUBSCRIBERS}: ${perChange(cpu.withAnswering)} µs until the round's last answer, ` +
      `${perChange(cpu.withDelivered)} µs until its notifications were stored (ratio ${fmt(cpu.withDelivered / cpu.without, 2)}); ` +
      `subscriber servers' CPU per PATCH with ${SUBSCRIBERS}: ${perChange(cpu.subscribers)} µs (${fmt(cpu.subscribers / (rounds * changes * SUBSCRIBERS))} µs per notification stored)`,
  );
}

if (process.argv[2] === 'publisher') await publisher();
else if (process.argv[2] === 'subscribers') await subscribers();
else await driver();
