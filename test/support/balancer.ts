// A real load balancer (nginx, Debian's nginx-light) in front of server processes, for tests: it runs
// unprivileged from a temp directory and is killed however the test process ends.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNginx } from '../../scripts/cluster/nginx.js';
import { killGroup } from '../../scripts/processes.js';
import { freePorts } from '../../scripts/virtuoso/free-port.js';
import { atProcessEnd } from './process-end.js';

export interface BalancerOptions {
  /** `host:port` of each server, taken in turn (round robin). */
  upstreams: string[];
  /** Holds its configuration, logs and pid file. Default: a temp directory, removed at stop. */
  dir?: string;
  /** Default: a free one. Servers behind it name it in their base URL, so they may need it before it starts. */
  port?: number;
}

export interface Balancer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Forwards to `upstreams` from now on (a process added to or taken from the cluster): an nginx reload. */
  reload(upstreams: string[]): Promise<void>;
}

/** nginx processes not stopped yet, and the temp directory each one runs from (if it has one). */
const running = new Map<number, string | undefined>();

function killAll(): void {
  for (const [pid, tempDir] of running) {
    killGroup(pid);
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  }
}

atProcessEnd(killAll);

/** Starts nginx on a free loopback port, forwarding to `upstreams`; resolves once it accepts connections. */
export async function startBalancer(options: BalancerOptions): Promise<Balancer> {
  const tempDir = options.dir === undefined ? await mkdtemp(join(tmpdir(), 'onerecord-nginx-')) : undefined;
  const port = options.port ?? (await freePorts(1))[0];
  const nginx = await startNginx({ dir: options.dir ?? tempDir!, port, upstreams: options.upstreams }).catch(
    (err: unknown) => {
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
      throw err;
    },
  );
  running.set(nginx.pid, tempDir);
  return {
    url: nginx.url,
    port,
    reload: (upstreams) => nginx.reload(upstreams),
    stop: async () => {
      await nginx.stop();
      running.delete(nginx.pid);
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    },
  };
}
