/**
 * What one `onerecord` command costs to run, against a bare `node -e 0` in the same run: the CLI is
 * a process per command, so its start is most of what a script calling it pays.
 *   npm run build && node dist/scripts/bench/cli-start.js [runs]
 * runs: of each command (default 20), taken in turn. Per command: wall time p50/p90 and CPU
 * (user + system, as the process reports it at exit), and both as ratios to the bare node process.
 * BENCH_BASELINE=another build's dist/src/cli.js: the same commands of that build, in turn with these.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { fmt, machine, percentile, startTarget, type OneRecordTarget } from './harness.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

interface Run {
  ms: number;
  cpuMs: number;
}

/** Loaded into each timed process first: at exit it writes its own CPU time (rusage, all threads) to fd 3. */
const REPORT_CPU = `data:text/javascript,${encodeURIComponent("import { writeSync } from 'node:fs'; process.on('exit', () => { const u = process.cpuUsage(); writeSync(3, String((u.user + u.system) / 1000)); });")}`;

/** Runs `node args` once: its wall time and its CPU. */
async function timedNode(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', REPORT_CPU, ...args], {
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    env,
  });
  const cpuReport = child.stdio[3] as Readable;
  let report = '';
  cpuReport.on('data', (chunk: Buffer) => (report += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited with ${code}`);
  if (!cpuReport.readableEnded) await once(cpuReport, 'end');
  return { ms, cpuMs: Number(report) };
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 20);
  const target = await startTarget<OneRecordTarget>('onerecord');
  const env = {
    PATH: process.env.PATH,
    ONERECORD_URL: target.info.url,
    ONERECORD_TOKEN: target.info.token,
    XDG_CONFIG_HOME: '/nonexistent',
  };
  const builds: [string, string][] = [['this build', CLI]];
  if (process.env.BENCH_BASELINE) builds.push(['baseline', process.env.BENCH_BASELINE]);
  const commands: [string, (cli: string) => string[]][] = [
    ['--help', (cli) => [cli, '--help']],
    ['get (remote)', (cli) => [cli, 'get', target.info.oneRevision, '--format', 'nt']],
    ['requests --pending (remote)', (cli) => [cli, 'requests', '--pending']],
  ];
  const cases: [string, string[]][] = [['node -e 0', ['-e', '0']]];
  for (const [build, cli] of builds) for (const [name, args] of commands) cases.push([`${build}: ${name}`, args(cli)]);
  const results = new Map<string, Run[]>(cases.map(([name]) => [name, []]));
  for (let i = 0; i < runs; i++) for (const [name, args] of cases) results.get(name)!.push(await timedNode(args, env));
  await target.stop();

  console.log(`cli-start, ${machine()}; ${runs} runs of each, in turn`);
  const bare = results.get('node -e 0')!;
  const bareMs = percentile(
    bare.map((r) => r.ms),
    0.5,
  );
  const bareCpu = percentile(
    bare.map((r) => r.cpuMs),
    0.5,
  );
  for (const [name, measured] of results) {
    const ms = percentile(
      measured.map((r) => r.ms),
      0.5,
    );
    const cpu = percentile(
      measured.map((r) => r.cpuMs),
      0.5,
    );
    console.log(
      `  ${name.padEnd(44)} wall p50 ${fmt(ms)} ms (p90 ${fmt(
        percentile(
          measured.map((r) => r.ms),
          0.9,
        ),
      )}), ${fmt(ms / bareMs, 2)}x bare; CPU p50 ${fmt(cpu)} ms, ${fmt(cpu / bareCpu, 2)}x bare`,
    );
  }
}

await main();
