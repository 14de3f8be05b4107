/**
 * Where a write's CPU goes, by stage, from the V8 CPU profiles of a throughput run:
 *   BENCH_PROFILE_DIR=DIR node dist/scripts/bench/changes.js throughput 8 1
 *   node dist/scripts/bench/profile-breakdown.js DIR [run]
 * `run` is a name in DIR/runs.json (written by changes.ts): patches (default), posts,
 * baselinePatches, baselinePosts. Only the samples taken in the measured window of that run count
 * (not the preload nor the warm-up), from every thread of its server process that left a profile
 * (the main thread and the worker threads: each writes its own), divided by the requests the run
 * answered: µs per request.
 *
 * A sample's time goes to the stage of the source file of its innermost frame (the table below,
 * first match wins). Frames of libraries and of Node's own code, and the project's shared helpers
 * (terms, triples, config, errors), count for the nearest frame above them that has a stage: jose
 * under src/auth is authorization, Node's fs under the journal is the journal. A sample with no
 * such frame on its stack is Node and express serving HTTP (sockets, parsing, the router, the
 * timers and microtask queue). A worker thread counts whole for what it runs: the SPARQL replica,
 * the snapshot writer, the jsonld.js fallback.
 *
 * What the profiles do not hold: V8's helper threads (parallel and concurrent GC, the optimising
 * compiler) and libuv's thread pool (the journal's write and fdatasync). The difference between the
 * process's CPU (runs.json, all threads) and the profiled time is printed as its own line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt } from './harness.js';

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface RunWindow {
  run: string;
  pid: number;
  from: number;
  to: number;
  count: number;
  cpuPerRequest: number;
  /** The CPU each thread of the process used in the window, µs, and when it started. */
  threads: { tid: number; cpu: number; start: number }[];
}

/** The stages of a write, in the order of the write path. */
export const STAGES = [
  'HTTP (express, Node, no project frame)',
  'HTTP (src/http)',
  'parse (JSON-LD)',
  'authorize (token, Authorizer)',
  'shapes',
  'transaction building (domain, store schema, commit)',
  'journal',
  'Oxigraph',
  'archive (LMDB)',
  'replica (its feed and thread)',
  'outbox and pub/sub',
  'metrics and logs',
  'snapshot, image, compaction',
  'V8: garbage collector (main thread)',
  'V8: (program)',
  'other',
] as const;
export type Stage = (typeof STAGES)[number];

/** Project source paths (relative to src/) and their stage; `inherit`: the caller's stage. */
const SOURCE_STAGES: [RegExp, Stage | 'inherit'][] = [
  [/^http\//, 'HTTP (src/http)'],
  [/^rdf\/(jsonld-fast|jsonld-fallback|jsonld-reference|parse)/, 'parse (JSON-LD)'],
  [/^rdf\//, 'inherit'],
  [/^(auth|domain\/access)\//, 'authorize (token, Authorizer)'],
  [/^shapes\//, 'shapes'],
  [/^(domain\/pubsub|outbound)\/|^store\/schema\/outbox/, 'outbox and pub/sub'],
  [/^store\/embedded\/journal\//, 'journal'],
  [/^store\/embedded\/oxigraph\//, 'Oxigraph'],
  [/^store\/embedded\/archive\//, 'archive (LMDB)'],
  [/^store\/embedded\/replica\//, 'replica (its feed and thread)'],
  [/^store\/embedded\/(snapshot|image|compaction)\//, 'snapshot, image, compaction'],
  [/^observability\//, 'metrics and logs'],
  [/^domain\/|^store\//, 'transaction building (domain, store schema, commit)'],
  [/./, 'inherit'],
];

/** Libraries with a stage of their own; any other library inherits its caller's. */
const PACKAGE_STAGES: Record<string, Stage> = {
  oxigraph: 'Oxigraph',
  lmdb: 'archive (LMDB)',
  'prom-client': 'metrics and logs',
  pino: 'metrics and logs',
};

/** Worker threads, by the module they run: every sample of theirs goes to one stage. */
const WORKER_STAGES: [RegExp, Stage][] = [
  [/store\/embedded\/replica\/query-replica-worker/, 'replica (its feed and thread)'],
  [/store\/embedded\/snapshot\/snapshot-worker/, 'snapshot, image, compaction'],
  [/rdf\/jsonld-fallback-worker/, 'parse (JSON-LD)'],
];

/** A frame's stage, `inherit`, or undefined for V8's pseudo-frames. */
function frameStage(frame: CallFrame): Stage | 'inherit' | undefined {
  const { url, functionName } = frame;
  if (url.startsWith('wasm://')) return 'Oxigraph';
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
  if (pkg) return PACKAGE_STAGES[pkg] ?? 'inherit';
  const source = /\/(?:dist\/)?src\/(.*)$/.exec(url)?.[1];
  if (source) return SOURCE_STAGES.find(([pattern]) => pattern.test(source))![1];
  // The write baseline's routes name blank nodes and write the record: what the domain does for a write.
  if (url.includes('/scripts/bench/write-baseline')) return 'transaction building (domain, store schema, commit)';
  if (url === '' && functionName.startsWith('(')) return undefined;
  return 'inherit';
}

/** The file a frame is in, for the table of files: src/..., a package, or Node's. */
function frameFile(frame: CallFrame): string {
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(frame.url)?.[1];
  if (pkg) return `node_modules/${pkg}`;
  const source = /\/(?:dist\/)?src\/(.*)$/.exec(frame.url)?.[1];
  if (source) return `src/${source.replace(/\.js$/, '.ts')}`;
  if (frame.url.startsWith('node:')) return 'node: (Node)';
  if (frame.url.startsWith('wasm://')) return 'wasm (Oxigraph)';
  return frame.url || frame.functionName;
}

export interface Breakdown {
  /** µs per request by stage. */
  stages: Map<Stage, number>;
  /** µs per request by the file of the innermost frame. */
  files: Map<string, number>;
  /** µs per request profiled, every thread. */
  profiled: number;
  /** µs per request of CPU of the threads that left no profile: V8's GC and compiler helpers, libuv's pool. */
  unprofiled: number;
  /** Per profile: its samples in the window, the thread it was matched to. */
  notes: string[];
  /** Threads whose profile could not be scaled to their CPU (no OS thread found): their wall time is counted. */
  unmatched: number;
  /** The process's CPU per request (all threads), from runs.json. */
  processCpu: number;
  requests: number;
  threads: number;
}

/** The samples of `profile` within [from, to) (µs, the profile's clock) by stage and by file, in µs of wall time. */
function attribute(
  profile: CpuProfile,
  from: number,
  to: number,
): { stages: Map<Stage, number>; files: Map<string, number>; busy: number } {
  const stages = new Map<Stage, number>();
  const files = new Map<string, number>();
  let busy = 0;
  const parent = new Map<number, ProfileNode>();
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node);
  }
  const worker = WORKER_STAGES.find(([pattern]) => profile.nodes.some((n) => pattern.test(n.callFrame.url)))?.[1];
  const stageOf = new Map<number, Stage | null>();
  const resolve = (id: number): Stage | null => {
    let stage = stageOf.get(id);
    if (stage !== undefined) return stage;
    const node = byId.get(id)!;
    const { functionName } = node.callFrame;
    if (functionName === '(idle)' || functionName === '(root)') stage = null;
    else if (worker) stage = worker;
    else if (functionName === '(garbage collector)') stage = 'V8: garbage collector (main thread)';
    else if (functionName === '(program)') stage = 'V8: (program)';
    else {
      stage = 'HTTP (express, Node, no project frame)';
      for (let n: ProfileNode | undefined = node; n; n = parent.get(n.id)) {
        const own = frameStage(n.callFrame);
        if (own && own !== 'inherit') {
          stage = own;
          break;
        }
      }
    }
    stageOf.set(id, stage);
    return stage;
  };
  let t = profile.startTime;
  const times = profile.timeDeltas.map((d) => (t += d));
  for (let i = 0; i < profile.samples.length; i++) {
    if (times[i] < from || times[i] >= to) continue;
    const stage = resolve(profile.samples[i]);
    if (stage === null) continue;
    const duration = (times[i + 1] ?? profile.endTime) - times[i];
    busy += duration;
    stages.set(stage, (stages.get(stage) ?? 0) + duration);
    const file = worker ? `thread: ${stage}` : frameFile(byId.get(profile.samples[i])!.callFrame);
    files.set(file, (files.get(file) ?? 0) + duration);
  }
  return { stages, files, busy };
}

/**
 * The OS thread a profile is of: the main thread's id is the pid; a worker's profile starts a few
 * ms after its thread does (its isolate boots first), so it is the thread started in the 100 ms
 * before the profile that used the most CPU (others started then are short-lived helpers).
 */
function threadOf(profile: CpuProfile, thread: number, w: RunWindow, taken: Set<number>) {
  if (thread === 0) return w.threads.find((t) => t.tid === w.pid);
  const candidates = w.threads.filter(
    (t) =>
      t.tid !== w.pid && !taken.has(t.tid) && t.start <= profile.startTime && t.start >= profile.startTime - 100_000,
  );
  return candidates.sort((a, b) => b.cpu - a.cpu)[0];
}

/** The breakdown of the runs named `run` in `dir`/runs.json, per request. */
export function breakdown(dir: string, run: string): Breakdown {
  const windows = (JSON.parse(readFileSync(join(dir, 'runs.json'), 'utf8')) as RunWindow[]).filter(
    (w) => w.run === run,
  );
  if (windows.length === 0) throw new Error(`no run named ${run} in ${join(dir, 'runs.json')}`);
  const stages = new Map<Stage, number>();
  const files = new Map<string, number>();
  let threads = 0;
  const notes: string[] = [];
  let unmatched = 0;
  let unprofiled = 0;
  const names = readdirSync(dir);
  const add = <K>(into: Map<K, number>, from: Map<K, number>, scale: number) => {
    for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v * scale);
  };
  for (const w of windows) {
    const taken = new Set<number>();
    // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile
    for (const name of names.filter((n) => n.endsWith('.cpuprofile') && n.split('.')[3] === String(w.pid))) {
      const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile;
      const part = attribute(profile, w.from, w.to);
      // A sample's wall time includes the time its thread waited for a core (2 cores, more threads
      // busy): each thread's samples are scaled to the CPU /proc says the thread used in the window.
      if (part.busy === 0) continue; // idle all the run: its thread's CPU, if any, stays with the unprofiled
      // A thread cannot use more CPU than the wall time its samples span: such a match is wrong.
      const found = threadOf(profile, Number(name.split('.')[4]), w, taken);
      const os = found && found.cpu <= part.busy * 1.05 + 10_000 ? found : undefined;
      if (os) taken.add(os.tid);
      else unmatched += 1;
      const scale = os ? os.cpu / part.busy : 1;
      add(stages, part.stages, scale);
      add(files, part.files, scale);
      threads += 1;
      const top = [...part.stages].sort((x, y) => y[1] - x[1])[0][0];
      notes.push(
        `${name}: ${fmt(part.busy / 1000)} ms of samples (wall), thread ${os ? `${os.tid}: ${fmt(os.cpu / 1000)} ms of CPU` : 'not found'}; mostly ${top}`,
      );
    }
    unprofiled += w.threads.filter((t) => !taken.has(t.tid)).reduce((sum, t) => sum + t.cpu, 0);
  }
  const requests = windows.reduce((sum, w) => sum + w.count, 0);
  for (const map of [stages, files] as Map<string, number>[]) for (const [k, v] of map) map.set(k, v / requests);
  const processCpu = windows.reduce((sum, w) => sum + w.cpuPerRequest * w.count, 0) / requests;
  const profiled = [...stages.values()].reduce((a, b) => a + b, 0);
  return {
    stages,
    files,
    profiled,
    unprofiled: unprofiled / requests,
    unmatched,
    processCpu,
    requests,
    threads,
    notes,
  };
}

function print(b: Breakdown, run: string, topFiles: number): void {
  const share = (us: number) => `${fmt((100 * us) / b.processCpu, 1)}%`;
  console.log(
    `${run}: ${fmt(b.requests)} requests, ${b.threads} threads busy in the profiles; µs per request; share of the process CPU per request (${fmt(b.processCpu)} µs, all threads)`,
  );
  console.log('| stage | µs per request | share |');
  console.log('|---|---|---|');
  for (const stage of STAGES) {
    const us = b.stages.get(stage) ?? 0;
    if (us > 0) console.log(`| ${stage} | ${fmt(us)} | ${share(us)} |`);
  }
  console.log(
    `| threads that left no profile: V8's GC and compiler helpers, libuv's pool (write, fdatasync) | ${fmt(b.unprofiled)} | ${share(b.unprofiled)} |`,
  );
  console.log(`| total | ${fmt(b.profiled + b.unprofiled)} | ${share(b.profiled + b.unprofiled)} |`);
  if (b.unmatched > 0)
    console.log(`${b.unmatched} profiles matched no thread of /proc: their wall time is counted as CPU`);
  console.log('');
  for (const note of b.notes) console.log(note);
  console.log('');
  console.log(`top ${topFiles} files by self time (innermost frame):`);
  console.log('| file | µs per request |');
  console.log('|---|---|');
  for (const [file, us] of [...b.files].sort((x, y) => y[1] - x[1]).slice(0, topFiles))
    console.log(`| ${file} | ${fmt(us)} |`);
}

const [dir, run = 'patches'] = process.argv.slice(2);
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!dir) {
    console.error(
      'usage: node dist/scripts/bench/profile-breakdown.js DIR [patches|posts|baselinePatches|baselinePosts]',
    );
    process.exit(2);
  }
  print(breakdown(dir, run), run, 20);
}
