// The configuration of nginx as a load balancer in front of several server processes: everything it
// writes (pid file, logs, temp paths) stays in one directory, so it runs unprivileged and never
// touches /var.
import { join } from 'node:path';

export interface NginxConfOptions {
  /** Holds the pid file, the logs and the temp paths. */
  dir: string;
  /** Listens on 127.0.0.1:`port`. */
  port: number;
  /** The servers it forwards to, `host:port`, in turn (round robin). */
  upstreams: string[];
  /** Worker processes. Default 1: each worker keeps its own round-robin turn, so one worker spreads requests strictly in turn. */
  workers?: number | 'auto';
}

/** `path` as an nginx string. */
function quoted(path: string): string {
  if (/["\\$]/.test(path)) throw new Error(`nginx config: path ${path} may not hold ", \\ or $`);
  return `"${path}"`;
}

export function nginxConf(options: NginxConfOptions): string {
  if (options.upstreams.length === 0) throw new Error('nginx config: no upstream');
  const file = (name: string) => quoted(join(options.dir, name));
  const servers = options.upstreams.map((upstream) => `    server ${upstream};`).join('\n');
  // Started by root (CI, containers), nginx runs its workers as another user; Debian has no group "nobody".
  const user = process.getuid?.() === 0 ? 'user nobody nogroup;\n' : '';
  return `# Written by scripts/cluster/nginx-conf.ts
${user}worker_processes ${options.workers ?? 1};
pid ${file('nginx.pid')};
error_log ${file('error.log')} warn;

events {
  worker_connections 1024;
}

http {
  # Which server answered, in how long: the server itself says nothing of it.
  log_format upstream '$remote_addr [$time_local] "$request" $status $body_bytes_sent '
                      'upstream $upstream_addr $upstream_status $upstream_response_time s, $request_time s';
  access_log ${file('access.log')} upstream;
  client_body_temp_path ${file('temp/client-body')};
  proxy_temp_path ${file('temp/proxy')};
  fastcgi_temp_path ${file('temp/fastcgi')};
  uwsgi_temp_path ${file('temp/uwsgi')};
  scgi_temp_path ${file('temp/scgi')};
  server_tokens off;

  upstream onerecord {
${servers}
    # Idle connections kept open to the servers, per worker. nginx closes one after 60 s idle
    # (keepalive_timeout), before the server would (keepAliveTimeoutMs, 65 s).
    keepalive 32;
  }

  server {
    listen 127.0.0.1:${options.port};
    # Larger bodies are the server's to refuse (413, limits.bodyBytes), with an api:Error.
    client_max_body_size 64m;
    # Headers pass unchanged, those with an underscore too.
    underscores_in_headers on;

    location / {
      proxy_pass http://onerecord;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_redirect off;
      # Bodies stream both ways, never into a temp file: no size limit of nginx's buffers applies,
      # and workers running as another user need no access to the directory.
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_send_timeout 300s;
      proxy_read_timeout 300s;
      # A request no server took (refused, timed out) goes to the next one. nginx never passes a
      # POST or PATCH on once it was sent (no "non_idempotent" here): the server may have applied it.
      proxy_next_upstream error timeout;
    }
  }
}
`;
}
