// nginx (Debian's nginx-light) as a load balancer, run unprivileged from a directory of its own:
// for the tests (test/support/balancer.ts) and the cluster CLI.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { logTail, spawnLogged, stopChild, untilAnswers } from '../processes.js';
import { acceptsConnections } from '../virtuoso/free-port.js';
import { nginxConf, type NginxConfOptions } from './nginx-conf.js';

const NGINX = '/usr/sbin/nginx';
const READY_TIMEOUT_MS = 10_000;
/** SIGQUIT: nginx finishes the requests in flight, closes idle connections and exits. */
const STOP_TIMEOUT_MS = 10_000;
const RELOAD_POLL_MS = 20;

export interface NginxOptions extends NginxConfOptions {
  /** Runs on after this process ends (the cluster CLI). */
  detached?: boolean;
}

export interface RunningNginx {
  url: string;
  port: number;
  pid: number;
  /** Graceful stop (SIGQUIT), SIGKILL to nginx and its workers past a timeout; waits for the exit. */
  stop(): Promise<void>;
  /**
   * Forwards to `upstreams` from now on (SIGHUP: new workers with the new configuration, the old ones finish the
   * requests in flight); resolves once a new worker runs.
   */
  reload(upstreams: string[]): Promise<void>;
}

/** The pids of the workers of nginx `pid` (Linux: its children). */
const workersOf = async (pid: number) =>
  (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).split(/\s+/).filter(Boolean);

/** Writes the configuration into `dir`, starts nginx and waits until it listens. */
export async function startNginx(options: NginxOptions): Promise<RunningNginx> {
  const dir = resolve(options.dir);
  await mkdir(join(dir, 'temp'), { recursive: true });
  const conf = join(dir, 'nginx.conf');
  await writeFile(conf, nginxConf({ ...options, dir }));
  const pidFile = join(dir, 'nginx.pid');
  await rm(pidFile, { force: true });
  // -e: the error log before the configuration is read (else /var/log/nginx/error.log). Always its
  // own process group: a kill reaches the workers too.
  const errorLog = join(dir, 'error.log');
  const args = ['-p', dir, '-c', conf, '-e', errorLog, '-g', 'daemon off;'];
  const spawned = spawnLogged(NGINX, args, { logFile: join(dir, 'nginx.out'), cwd: dir, detached: true });
  // nginx writes its pid file once it holds the port: a port that accepts before that is another program's.
  const pid = String(spawned.child.pid);
  const listens = async () =>
    (await readFile(pidFile, 'utf8').catch(() => '')).trim() === pid && (await acceptsConnections(options.port));
  try {
    await untilAnswers(spawned, listens, READY_TIMEOUT_MS, `nginx in ${dir}`, errorLog);
  } catch (err) {
    await stopChild(spawned, 'SIGQUIT', STOP_TIMEOUT_MS);
    throw err;
  }
  if (options.detached) spawned.child.unref();
  return {
    url: `http://127.0.0.1:${options.port}`,
    port: options.port,
    pid: spawned.child.pid!,
    stop: () => stopChild(spawned, 'SIGQUIT', STOP_TIMEOUT_MS),
    reload: async (upstreams) => {
      const pid = spawned.child.pid!;
      const before = new Set(await workersOf(pid));
      await writeFile(conf, nginxConf({ ...options, upstreams, dir }));
      process.kill(pid, 'SIGHUP');
      for (const deadline = Date.now() + READY_TIMEOUT_MS; Date.now() < deadline; await sleep(RELOAD_POLL_MS))
        if ((await workersOf(pid)).some((worker) => !before.has(worker))) return;
      throw new Error(
        `nginx in ${dir} did not reload within ${READY_TIMEOUT_MS / 1000} s:\n${await logTail(errorLog)}`,
      );
    },
  };
}
