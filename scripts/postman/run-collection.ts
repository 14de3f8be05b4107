/**
 * Runs IATA's public ONE Record demo collection (Postman) with newman against a server and prints,
 * for every request, the status it got, the status the ONE Record API prescribes, and why they differ.
 *   npm run build && node dist/scripts/postman/run-collection.js                          (starts a fresh server)
 *   node dist/scripts/postman/run-collection.js --base-url http://localhost:8080 --token "$TOKEN"  (a running one)
 * Only variables are supplied (base URL, token as collection-wide bearer auth, the ids of the objects the
 * examples create); no request is changed. The collection's top-level requests carry placeholders instead of
 * bodies and path ids, so its saved examples (the requests IATA published with those placeholders filled
 * in) are run too, in order, each one's created ids feeding the next. Exit code 1 if any request did not
 * answer as expected (see EXPECTED).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import newman from 'newman';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../src/server.js';

export const COLLECTION_FILE = fileURLToPath(
  new URL('../../../scripts/postman/ONE-Record-API-Collections.postman_collection.json', import.meta.url),
);

interface PostmanRequest {
  method: string;
  url: { raw: string; variable?: { key: string; value: string | null }[] } | string;
  header?: { key: string; value: string }[];
  body?: unknown;
}
interface PostmanItem {
  name: string;
  request?: PostmanRequest;
  response?: { name: string; originalRequest: PostmanRequest }[];
  item?: PostmanItem[];
}
interface Collection {
  info: Record<string, unknown>;
  item: PostmanItem[];
  variable?: { key: string; value: string }[];
}

/** One request run: where it comes from in the collection, what it got, and whether that is what the API prescribes. */
export interface Outcome {
  name: string;
  method: string;
  url: string;
  status: number | string;
  expected: number[];
  pass: boolean;
  note: string;
  /** The messages of an api:Error answer. */
  errors: string[];
}

/**
 * What the ONE Record API (and this server's documented decisions) prescribe for each request, and why
 * when that is not a success. Keyed by `<request name>` for the requests as published and
 * `<request name> / <example name>` for saved examples.
 */
const EXPECTED: Record<string, { status: number[]; note?: string }> = {
  'Server Information': { status: [200] },
  'Create logistics object': {
    status: [400],
    note: 'the published request has a placeholder instead of a body ("{{Define your json request. See examples}}")',
  },
  'Get logistics object': { status: [404], note: 'the published request leaves its path id empty' },
  'Update logistics object': { status: [404], note: 'the published request leaves its path id empty' },
  'Get Audit Trail': { status: [404], note: 'the published request leaves its path id empty' },
  'Retrieve Historical Logistics object': { status: [404], note: 'the published request leaves its path id empty' },
  'Create a Logistics Event': { status: [404], note: 'the published request leaves its path id empty' },
  'Get a Logistics Event': { status: [404], note: 'the published request leaves its path ids empty' },
  'Get a Logistics Event of a Logistics Object': {
    status: [404],
    note: 'the published request leaves its path id empty',
  },
  'Get Subscription': {
    status: [400],
    note: 'the published request has the undefined `{{logisticsObjectType}}` as topicType',
  },
  'Subscribe to Logistics Objects': {
    status: [400],
    note: 'the published request has a placeholder instead of a body',
  },
  'Request Access Delegation': { status: [400], note: 'the published request has a placeholder instead of a body' },
  'Get Action Request Details': { status: [404], note: 'the published request leaves its path id empty' },
  'Update an Action Request': {
    status: [400],
    note: 'the published request uses {{actionRequestId}} and {{acStatus}}, which the collection never defines: the status is not a RequestStatus',
  },
  'Revoke Action Request': {
    status: [404],
    note: 'the published request uses {{actionRequestId}}, which the collection never defines',
  },
  'Request a verification': {
    status: [404],
    note: 'verification requests are not part of API 2.3 and not implemented',
  },
  'Server Information / Example A1': { status: [200] },
  'Create logistics object / Example A1': { status: [201] },
  'Create logistics object / Example A2': { status: [201] },
  'Create logistics object / Example A3': { status: [201] },
  'Create logistics object / Example A4': {
    status: [400],
    note: 'contentCode and subjectCode are plain strings; the data model (SHACL shapes) wants a code-list IRI or a CodeListElement node',
  },
  'Get logistics object / Example B1': { status: [200] },
  'Get logistics object / Example B2': {
    status: [405],
    note: 'the example POSTs to an object URL; POST is not a method of a Logistics Object',
  },
  'Get logistics object / Example B3': { status: [200] },
  'Update logistics object / Example C1': { status: [201] },
  'Update logistics object / Example C2': {
    status: [201],
    note: '201 with the ChangeRequest REQUEST_FAILED: its grossWeight unit is the string "KGM"; the data model wants a code-list IRI or a CodeListElement node',
  },
  'Update logistics object / Example C3': {
    status: [400],
    note: 'it changes the grossWeight C2 adds, but C2 fails the data model (its unit is the string "KGM", not a code-list IRI), so there is no such node',
  },
  'Update logistics object / Example C4': {
    status: [400],
    note: 'the example gives the datatype as https://www.w3.org/2001/XMLSchema#double; the XSD namespace is http://, so the value is read as a node of an unknown class',
  },
  'Update logistics object / Example C5': {
    status: [400],
    note: 'the example links {{customsInformation2}}, an object no example creates; PATCH only links existing objects',
  },
  'Update logistics object / Example C6': {
    status: [400],
    note: 'hasLogisticsObject names the piece while the request addresses the shipment: 400 by the API',
  },
  'Update logistics object / Example C7': {
    status: [400],
    note: 'hasLogisticsObject is on another server and the operation adds hasLogisticsEvent: both are 400 by the API',
  },
  'Get Audit Trail / Example D1': { status: [200] },
  'Retrieve Historical Logistics object / Example E1': { status: [200] },
  'Create a Logistics Event / Example A1': { status: [201] },
  'Create a Logistics Event / Example A2': {
    status: [404],
    note: 'the example posts to a Logistics Object that does not exist, on purpose',
  },
  'Get a Logistics Event / Example B1': { status: [200] },
  'Get a Logistics Event / Example B2': {
    status: [404],
    note: 'the example asks for an event that does not exist, on purpose',
  },
  'Get a Logistics Event of a Logistics Object / Example C1': { status: [200] },
  'Get a Logistics Event of a Logistics Object / Example C2': { status: [200] },
  'Get Subscription / Example A1': {
    status: [400],
    note: 'its topic is `{{pieceId}}`, the bare id, not the Logistics Object IRI a topic must be',
  },
  'Get Subscription / Example A2': { status: [200] },
  'Get Subscription / Example A3': {
    status: [400],
    note: 'cargo:ForkLift is not a Logistics Object class of the cargo ontology (meant to fail)',
  },
  'Get Subscription / Example A4': { status: [400], note: 'no topic (meant to fail)' },
  'Subscribe to Logistics Objects / Example B1': { status: [201] },
  'Subscribe to Logistics Objects / Example B2': { status: [201] },
  'Request Access Delegation / Example A1': {
    status: [400],
    note: 'the example names {{internalCompanyId}}, a variable the collection never defines, as the Delegate: not an IRI',
  },
  'Request Access Delegation / Example A2': { status: [201] },
  'Get Action Request Details / Example A1': { status: [200] },
  'Update an Action Request / Example B1': {
    status: [204],
    note: 'the auto policy already accepted the change; accepting it again is a no-op',
  },
  'Revoke Action Request / Example C1': { status: [422], note: 'an accepted ChangeRequest cannot be revoked' },
  'Request a verification / Example A1': {
    status: [404],
    note: 'verification requests are not part of API 2.3 and not implemented',
  },
};

/** The hasMessage texts of an api:Error body, if the answer is one. */
function errorMessages(body: Buffer | undefined): string[] {
  try {
    const json = JSON.parse(body?.toString('utf8') ?? '') as Record<string, unknown>;
    if (json['@type'] !== 'api:Error') return [];
    return ([json['api:hasErrorDetail']].flat() as Record<string, unknown>[]).map((d) => String(d['api:hasMessage']));
  } catch {
    return [];
  }
}

const lastSegment = (url: string) => url.slice(url.lastIndexOf('/') + 1);
const compactInstant = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Execution {
  request: { method: string; url: { toString(): string } };
  response?: { code: number; headers: { get(name: string): string | undefined }; stream?: Buffer };
  requestError?: Error;
}

/** Runs one request through newman with the variables as they are now. */
function runOne(
  collection: Collection,
  request: PostmanRequest,
  name: string,
  variables: Map<string, string>,
): Promise<Execution> {
  const single = {
    info: { ...collection.info, name },
    auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{token}}', type: 'string' }] },
    item: [{ name, request }],
  };
  return new Promise((resolve, reject) => {
    newman.run(
      {
        collection: single as never,
        envVar: [...variables].map(([key, value]) => ({ key, value })),
        reporters: [] as never,
        timeoutRequest: 30_000,
      },
      (err, summary) => {
        if (err) return reject(err);
        resolve(summary.run.executions[0] as unknown as Execution);
      },
    );
  });
}

/** What each step's answer teaches the next ones: ids of created objects, the embedded node to change. */
async function learn(key: string, execution: Execution, variables: Map<string, string>, token: string): Promise<void> {
  const location = execution.response?.headers.get('Location');
  const ids: Record<string, string> = {
    'Create logistics object / Example A1': 'pieceId',
    'Create logistics object / Example A2': 'companyId',
    'Create logistics object / Example A3': 'shipmentId',
    'Create logistics object / Example A4': 'customsInformation',
    'Create a Logistics Event / Example A1': 'LEId',
    'Update logistics object / Example C1': 'ARId',
  };
  if (location && ids[key]) variables.set(ids[key], lastSegment(location));
  if (key === 'Update logistics object / Example C2') {
    // C3 changes the grossWeight that C2 added: its server-given id is the {{internalNodeId}} of the examples.
    const piece = (await (
      await fetch(`${variables.get('baseUrl')}/logistics-objects/${variables.get('pieceId')}`, {
        headers: { Authorization: `Bearer ${token}` },
      })
    ).json()) as Record<string, { '@id'?: string }>;
    const node = piece['cargo:grossWeight']?.['@id'];
    if (node) variables.set('internalNodeId', node);
  }
}

export async function runCollection(baseUrl: string, token: string): Promise<Outcome[]> {
  const collection = JSON.parse(await readFile(COLLECTION_FILE, 'utf8')) as Collection;
  const variables = new Map<string, string>((collection.variable ?? []).map((v) => [v.key, v.value]));
  variables.set('baseUrl', baseUrl);
  variables.set('token', token);
  const steps: { key: string; request: PostmanRequest }[] = [];
  const walk = (items: PostmanItem[], into: (item: PostmanItem) => void): void => {
    for (const i of items) {
      if (i.item) walk(i.item, into);
      else into(i);
    }
  };
  walk(collection.item, (i) => {
    if (i.request) steps.push({ key: i.name, request: i.request });
  });
  walk(collection.item, (i) => {
    for (const r of i.response ?? []) steps.push({ key: `${i.name} / ${r.name}`, request: r.originalRequest });
  });

  const outcomes: Outcome[] = [];
  let pieceCreatedAt = 0;
  for (const step of steps) {
    if (step.key === 'Retrieve Historical Logistics object / Example E1') {
      // "at" names a whole second after the piece was created and not in the future.
      await sleep(Math.max(0, pieceCreatedAt + 1100 - Date.now()));
      variables.set('historicalDate', compactInstant(new Date()));
    }
    const execution = await runOne(collection, step.request, step.key, variables);
    if (step.key === 'Create logistics object / Example A1') pieceCreatedAt = Date.now();
    await learn(step.key, execution, variables, token);
    const expected = EXPECTED[step.key] ?? { status: [], note: 'not in the table of expected answers' };
    const status = execution.response?.code ?? `no answer (${execution.requestError?.message ?? 'unknown'})`;
    outcomes.push({
      name: step.key,
      method: execution.request.method,
      url: execution.request.url.toString().replace(baseUrl, ''),
      status,
      expected: expected.status,
      pass: typeof status === 'number' && expected.status.includes(status),
      note: expected.note ?? '',
      errors: errorMessages(execution.response?.stream),
    });
  }
  return outcomes;
}

/** A fresh server on a free port with its own data directory, and a token for its data holder. */
async function startScratchServer(): Promise<{ server: RunningServer; token: string; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-postman-'));
  const probe = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.once('listening', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  const server = await startServer(
    loadConfig({}, { port, host: '127.0.0.1', baseUrl: `http://127.0.0.1:${port}`, dataDir }),
    createLogger('silent'),
  );
  const idp = server.services.identityProvider!;
  const res = await fetch(`${server.url}/idp/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: idp.devClient.id,
      client_secret: idp.devClient.secret,
    }),
  });
  return { server, token: ((await res.json()) as { access_token: string }).access_token, dataDir };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'base-url': { type: 'string' }, token: { type: 'string' } } });
  const scratch = values['base-url'] ? undefined : await startScratchServer();
  try {
    const baseUrl = values['base-url'] ?? scratch!.server.url;
    const token = values.token ?? scratch?.token;
    if (!token) throw new Error('--token is required with --base-url');
    const outcomes = await runCollection(baseUrl, token);
    console.log('| request | method and path | status | expected | note |\n|---|---|---|---|---|');
    for (const o of outcomes)
      console.log(
        `| ${o.name} | ${o.method} ${o.url} | ${o.status} | ${o.pass ? 'yes' : `no (${o.expected.join(' or ')})`} | ${o.note}${!o.pass && o.errors.length > 0 ? ` (server: ${o.errors.join('; ')})` : ''} |`,
      );
    const failed = outcomes.filter((o) => !o.pass).length;
    console.log(`\n${outcomes.length - failed} of ${outcomes.length} requests answered as expected`);
    process.exitCode = failed > 0 ? 1 : 0;
  } finally {
    if (scratch) {
      await scratch.server.close();
      await rm(scratch.dataDir, { recursive: true, force: true });
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
