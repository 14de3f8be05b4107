import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isAlive, logTail, spawnLogged, stopChild, stopPid, untilAnswers } from '../processes.js';
import { acceptsConnections, freePorts } from './free-port.js';
import { runIsql } from './isql.js';
import { virtuosoIni } from './virtuoso-ini.js';

const VIRTUOSO = 'virtuoso-t';
/** A new database takes ~4 s to create on 2 cores; a second start ~2 s. */
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/** The account the server uses at /sparql-auth: it holds SPARQL_UPDATE and nothing more. */
export const SERVER_USER = 'onerecord';
export const SERVER_PASSWORD = 'onerecord';

export interface VirtuosoOptions {
  /** Holds the ini, the database, its transaction log and its error log; created if missing. */
  dir: string;
  /** Free loopback ports are taken where not given. */
  httpPort?: number;
  sqlPort?: number;
  /** Memory for page buffers. Default 200 (tests); on a 24 GiB machine running nothing else, 16384. */
  bufferMemoryMb?: number;
  /** Runs on after this process ends (the CLI): its own process group, not tied to ours. */
  detached?: boolean;
}

export interface RunningVirtuoso {
  /** Anonymous SPARQL 1.1 Protocol endpoint: queries, and updates by the grant to the SPARQL user. */
  queryUrl: string;
  updateUrl: string;
  /** The same endpoint behind HTTP Digest authentication, for `user`/`password`. */
  authUrl: string;
  /** The same endpoint behind HTTP Basic authentication (send it over TLS only, outside tests). */
  basicAuthUrl: string;
  user: string;
  password: string;
  httpPort: number;
  sqlPort: number;
  /** Its data directory (where the bulk loader may read files). */
  dir: string;
  pid: number;
  /** Resolves when the process has ended, whether stopped or not. */
  exited: Promise<void>;
  /** How the process ended ('' while it runs) and the last lines of its error log: why it died, where it did. */
  exitReport(): Promise<string>;
  /** Terminates Virtuoso (SIGTERM: it rolls its transaction log forward at the next start) and waits for its exit. */
  stop(): Promise<void>;
}

/**
 * What the server needs, granted at every start (each step is idempotent):
 * - SPARQL_UPDATE for the anonymous SPARQL user (updates over /sparql, tests and local use) and for
 *   SERVER_USER (updates over /sparql-auth);
 * - /sparql-auth-basic: /sparql-auth (Digest only, as Virtuoso ships it) with Basic allowed. One path
 *   cannot serve both: where Basic is allowed Virtuoso challenges with Basic only, so a Digest client
 *   never gets a nonce.
 */
const SETUP_SQL = `create procedure DB.DBA.ONERECORD_GRANT_ROLE (in role_name varchar, in grantee varchar)
{
  if (not exists (select 1 from DB.DBA.SYS_ROLE_GRANTS, DB.DBA.SYS_USERS r, DB.DBA.SYS_USERS u
                  where GI_SUPER = u.U_ID and GI_SUB = r.U_ID and u.U_NAME = grantee and r.U_NAME = role_name))
    exec (sprintf ('GRANT %s TO "%s"', role_name, grantee));
}
;
select DB.DBA.USER_CREATE ('${SERVER_USER}', '${SERVER_PASSWORD}') from DB.DBA.SYS_USERS
  where U_NAME = 'dba' and not exists (select 1 from DB.DBA.SYS_USERS where U_NAME = '${SERVER_USER}');
DB.DBA.ONERECORD_GRANT_ROLE ('SPARQL_UPDATE', 'SPARQL');
DB.DBA.ONERECORD_GRANT_ROLE ('SPARQL_UPDATE', '${SERVER_USER}');
DB.DBA.VHOST_REMOVE (lhost=>'*ini*', vhost=>'*ini*', lpath=>'/sparql-auth-basic');
DB.DBA.VHOST_DEFINE (lhost=>'*ini*', vhost=>'*ini*', lpath=>'/sparql-auth-basic', ppath=>'/!sparql/', is_dav=>1,
  vsp_user=>'dba', opts=>vector ('noinherit', 1), auth_fn=>'DB.DBA.HP_AUTH_SPARQL_USER', realm=>'SPARQL', sec=>NULL);
`;

/** Starts Virtuoso on a data directory, waits until SQL and SPARQL answer, and grants what the server needs. */
export async function startVirtuoso(options: VirtuosoOptions): Promise<RunningVirtuoso> {
  const dir = resolve(options.dir);
  await mkdir(dir, { recursive: true });
  const running = await lockHolder(dir);
  if (running !== undefined && isAlive(running)) throw new Error(`Virtuoso ${running} already runs on ${dir}`);
  const [httpPort, sqlPort] = await portsFor(options);
  const ini = join(dir, 'virtuoso.ini');
  await writeFile(ini, virtuosoIni({ dir, httpPort, sqlPort, bufferMemoryMb: options.bufferMemoryMb ?? 200 }));
  const logFile = join(dir, 'virtuoso.out');
  const spawned = spawnLogged(VIRTUOSO, ['-f', '-c', ini], { logFile, cwd: dir, detached: options.detached });
  const answers = async () => (await acceptsConnections(sqlPort)) && (await sparqlAnswers(httpPort));
  try {
    await untilAnswers(spawned, answers, READY_TIMEOUT_MS, `Virtuoso in ${dir}`, logFile);
    await runIsql(sqlPort, SETUP_SQL);
  } catch (err) {
    await stopChild(spawned, 'SIGTERM', STOP_TIMEOUT_MS);
    throw err;
  }
  if (options.detached) spawned.child.unref();
  const sparql = `http://127.0.0.1:${httpPort}/sparql`;
  return {
    queryUrl: sparql,
    updateUrl: sparql,
    authUrl: `${sparql}-auth`,
    basicAuthUrl: `${sparql}-auth-basic`,
    user: SERVER_USER,
    password: SERVER_PASSWORD,
    httpPort,
    sqlPort,
    dir,
    pid: spawned.child.pid!,
    exited: spawned.exited,
    exitReport: async () => {
      const { exitCode, signalCode } = spawned.child;
      if (exitCode === null && signalCode === null) return '';
      return `Virtuoso in ${dir} exited (${signalCode ?? `code ${exitCode}`}):\n${await logTail(join(dir, 'virtuoso.log'), 40)}\n${await logTail(logFile)}`;
    },
    stop: () => stopChild(spawned, 'SIGTERM', STOP_TIMEOUT_MS),
  };
}

/**
 * Stops `engine` and starts it again on its data directory and ports. Right after a bulk load
 * Virtuoso answered queries about ten times slower than after a restart (measured at 100,000
 * objects: the start's count 25.9 s against 0.3 s; docs/sparql-engine.md tells users to restart after loading).
 */
export async function restartVirtuoso(engine: RunningVirtuoso, bufferMemoryMb?: number): Promise<RunningVirtuoso> {
  await stopWithCheckpoint(engine);
  return startVirtuoso({ dir: engine.dir, httpPort: engine.httpPort, sqlPort: engine.sqlPort, bufferMemoryMb });
}

/**
 * Stops `engine` after a checkpoint. Virtuoso stops on SIGTERM without one: its next start would first replay every
 * write since the last one from its transaction log (6.5 minutes after a fill of 1,000,000 objects through writes).
 */
export async function stopWithCheckpoint(engine: RunningVirtuoso): Promise<void> {
  await runIsql(engine.sqlPort, 'checkpoint;\n').catch((err: Error) =>
    console.warn(`Virtuoso in ${engine.dir}: no checkpoint before it stops (${err.message})`),
  );
  await engine.stop();
}

/** Every index of the quads and of the IRIs' names, read whole (its columns named, so each column's pages are read). */
const BUFFER_SCANS = [
  ...['RDF_QUAD', 'RDF_QUAD_POGS', 'RDF_QUAD_SP', 'RDF_QUAD_OP', 'RDF_QUAD_GS'].map(
    (index) =>
      `select count(*) from DB.DBA.RDF_QUAD table option (index ${index}) ` +
      'where G is not null and S is not null and P is not null and O is not null;',
  ),
  'select count(*) from DB.DBA.RDF_IRI table option (index RDF_IRI) where RI_ID is not null;',
  'select count(*) from DB.DBA.RDF_IRI table option (index DB_DBA_RDF_IRI_UNQC_RI_ID) where RI_NAME is not null;',
];

/**
 * Reads every index of `engine`'s quads into its buffers, as hours of serving would, so that a benchmark right after a
 * restart does not measure its disk; resolves with the seconds it took.
 */
export async function fillBuffers(engine: RunningVirtuoso): Promise<number> {
  const started = performance.now();
  await runIsql(engine.sqlPort, `${BUFFER_SCANS.join('\n')}\n`);
  return (performance.now() - started) / 1000;
}

/** Stops the Virtuoso running on `dir`, found by the pid in its lock file (the CLI's `stop`). */
export async function stopVirtuosoIn(dir: string): Promise<boolean> {
  const pid = await lockHolder(resolve(dir));
  return pid !== undefined && (await stopPid(pid, 'SIGTERM', STOP_TIMEOUT_MS));
}

/** The env vars that point a server (config `store.*`) at this instance. */
export function serverEnv(engine: RunningVirtuoso): Record<string, string> {
  return {
    STORE_BACKEND: 'sparql',
    STORE_SPARQL_QUERY_URL: engine.authUrl,
    STORE_SPARQL_UPDATE_URL: engine.authUrl,
    STORE_SPARQL_USER: engine.user,
    STORE_SPARQL_PASSWORD: engine.password,
    STORE_SPARQL_AUTH_SCHEME: 'digest',
  };
}

async function portsFor(options: VirtuosoOptions): Promise<[number, number]> {
  const [freeHttp, freeSql] = await freePorts(2);
  return [options.httpPort ?? freeHttp, options.sqlPort ?? freeSql];
}

async function sparqlAnswers(port: number): Promise<boolean> {
  try {
    const answer = await fetch(`http://127.0.0.1:${port}/sparql?query=ASK%7B%7D`, {
      signal: AbortSignal.timeout(2_000),
    });
    await answer.arrayBuffer();
    return answer.ok;
  } catch {
    return false;
  }
}

async function lockHolder(dir: string): Promise<number | undefined> {
  try {
    const match = (await readFile(join(dir, 'virtuoso.lck'), 'utf8')).match(/VIRT_PID=(\d+)/);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}
