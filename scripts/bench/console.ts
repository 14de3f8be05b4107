/**
 * What the web console costs (the issue: it "adds under 50 ms to nothing"), in one run:
 *  - GET /console and one of its assets (object-page.js, a module loaded when an object is opened) under 50 connections, against express.static
 *    serving the same files, alternately, twice each (ratios of req/s; absolute numbers move with the machine);
 *  - in headless Chromium, the landing page's time to its first list row (from navigation start:
 *    the page, its modules, the sign-in check and the list route; each stage shown), against two
 *    floors, in fresh pages of the same browser, alternately: the list route alone loaded as a page of
 *    its own (its last byte), and a bare page that does the console's API work with no console: on the
 *    same origin, it fetches the same list route with the same token (from the same `#token=` link) and
 *    draws the same 50 rows of 5 cells, with a few lines of inline script. "Console minus bare page" is
 *    what the "adds under 50 ms to nothing" is about: the page setup, the list's round trip and
 *    the first paint are paid by both. The first console load, with nothing cached, is shown apart.
 *   npm run build && node dist/scripts/bench/console.js [seconds] [rounds]
 * (seconds 0: the browser part only.)
 */
import type { Page } from 'playwright-core';
import { openChromium } from '../../test/support/chromium.js';
import { BENCH_PIECE } from './fixtures.js';
import {
  fmt,
  machine,
  mean,
  percentile,
  startTarget,
  warmLoad,
  WARM_UP_SECONDS,
  type LoadResult,
  type OneRecordTarget,
} from './harness.js';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 30);
const connections = 50;
/** A full first page of the object list (its page size). */
const OBJECTS = 50;

const onerecord = await startTarget<OneRecordTarget>('onerecord', [], { BENCH_REVISIONS: '1' });
const { url, token } = onerecord.info;
for (let i = 0; i < OBJECTS; i++) {
  const res = await fetch(`${url}/logistics-objects`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' },
    body: JSON.stringify(BENCH_PIECE),
  });
  if (res.status !== 201) throw new Error(`POST /logistics-objects answered ${res.status}`);
}
const assetPath = /console\/assets\/[0-9a-f]{16}\/object-page\.js/.exec(
  await (await fetch(`${url}/console`)).text(),
)![0];
const bareStatic = await startTarget<{ url: string }>('bare-express-static');

/** The console's route and the same file from express.static, measured alternately; their mean req/s. */
async function alternate(consoleUrl: string, staticUrl: string): Promise<{ console: LoadResult; bare: LoadResult }> {
  const consoleRuns: LoadResult[] = [];
  const bareRuns: LoadResult[] = [];
  for (let round = 0; round < 2; round++) {
    bareRuns.push(await warmLoad({ url: staticUrl, connections, seconds }));
    consoleRuns.push(await warmLoad({ url: consoleUrl, connections, seconds }));
  }
  return { console: mean(consoleRuns), bare: mean(bareRuns) };
}
const page = seconds > 0 ? await alternate(`${url}/console`, `${bareStatic.info.url}/index.html`) : undefined;
const asset = seconds > 0 ? await alternate(`${url}/${assetPath}`, `${bareStatic.info.url}/object-page.js`) : undefined;
await bareStatic.stop();

/** Milliseconds from navigation start to each stage of the landing page, in a fresh page. */
interface Landing {
  /** The page's HTML arrived. */
  page: number;
  /** The last of its modules arrived (the page, when it carries them). */
  modules: number;
  /** The list route was asked for. */
  listAsked: number;
  /** The answer to the sign-in check (GET /) arrived. */
  signedIn: number;
  /** The answer of the list route arrived. */
  list: number;
  /** The list's first row is in the page. */
  firstRow: number;
}

/**
 * The floor: a page that does the landing page's API work and nothing else. The server has no route for
 * it and the bench may not add one, so Chromium answers its address itself (the DevTools protocol's Fetch
 * domain, for that one URL only: the list route goes to the server as the console's does). The page is
 * on the server's origin, so its call needs no CORS, like the console's.
 */
const BARE_PAGE_PATH = '/bench-bare-page';
const BARE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bare list</title></head>
<body><table id="object-list"><thead><tr><th>Object</th><th>Type</th><th>Revision</th><th>Changed</th><th>By</th></tr></thead><tbody></tbody></table>
<script>
fetch('/internal/logistics-objects?skip=0&limit=${OBJECTS}', { headers: { Authorization: 'Bearer ' + decodeURIComponent(location.hash.slice('#token='.length)), Accept: 'application/json' }, cache: 'no-store' })
  .then((res) => res.json())
  .then((list) => document.querySelector('tbody').append(...list.objects.map((o) => {
    const row = document.createElement('tr');
    for (const text of [o.iri, o.type, String(o.revision), o.changedAt, o.changedBy]) row.insertCell().textContent = text;
    return row;
  })));
</script>
</body></html>`;

async function landing(newPage: () => Promise<Page>, path = '/console'): Promise<Landing> {
  const tab = await newPage();
  const devtools = await tab.context().newCDPSession(tab);
  if (path === BARE_PAGE_PATH) {
    devtools.on('Fetch.requestPaused', (event) => {
      void devtools.send('Fetch.fulfillRequest', {
        requestId: event.requestId,
        responseCode: 200,
        responseHeaders: [
          { name: 'Content-Type', value: 'text/html; charset=utf-8' },
          { name: 'Cache-Control', value: 'no-store' },
        ],
        body: Buffer.from(BARE_PAGE).toString('base64'),
      });
    });
    await devtools.send('Fetch.enable', {
      patterns: [{ urlPattern: `${url}${BARE_PAGE_PATH}*`, requestStage: 'Request' }],
    });
  }
  // Installed before the console's scripts run; it sees the row the moment it is added.
  await tab.addInitScript(() => {
    (window as unknown as { firstRowShown: Promise<void> }).firstRowShown = new Promise((resolve) => {
      new MutationObserver((_, observer) => {
        if (!document.querySelector('#object-list tbody tr')) return;
        (window as unknown as { firstRow: number }).firstRow = performance.now();
        observer.disconnect();
        resolve();
      }).observe(document, { childList: true, subtree: true });
    });
  });
  await tab.goto(`${url}${path}#token=${token}`);
  // Awaited over the DevTools protocol itself: playwright's waitForSelector first loads its selector
  // engine into the page, a script whose compiling takes the page's main thread for 5-15 ms (traced);
  // the page's load event now comes before the list's answer, so that could land inside the measure.
  await devtools.send('Runtime.evaluate', { expression: 'firstRowShown', awaitPromise: true });
  if (path === BARE_PAGE_PATH) await devtools.send('Fetch.disable');
  await devtools.detach();
  const stages = await tab.evaluate(() => {
    const loaded = performance.getEntriesByType('resource') as PerformanceResourceTiming[];
    const last = (paths: (path: string) => boolean) =>
      Math.max(...loaded.filter((e) => paths(new URL(e.name).pathname)).map((e) => e.responseEnd));
    const list = loaded.find((e) => new URL(e.name).pathname === '/internal/logistics-objects')!;
    const pageIn = (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd;
    return {
      page: pageIn,
      modules: Math.max(
        pageIn,
        last((path) => path.endsWith('.js')),
      ),
      listAsked: list.startTime,
      signedIn: last((path) => path === '/'),
      list: last((path) => path === '/internal/logistics-objects'),
      firstRow: (window as unknown as { firstRow: number }).firstRow,
    };
  });
  await tab.close();
  return stages;
}

/** Milliseconds from navigation start to the last byte of the list route the landing page calls, loaded as a page. */
async function listRouteAlone(newPage: () => Promise<Page>): Promise<number> {
  const tab = await newPage();
  await tab.setExtraHTTPHeaders({ Authorization: `Bearer ${token}`, Accept: 'application/json' });
  await tab.goto(`${url}/internal/logistics-objects?skip=0&limit=${OBJECTS}`);
  const ms = await tab.evaluate(
    () => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd,
  );
  await tab.close();
  return ms;
}

const browser = await openChromium();
const newPage = () => browser.context.newPage();
const cold = await landing(newPage);
const landings: Landing[] = [];
const bares: Landing[] = [];
const listTimes: number[] = [];
await landing(newPage, BARE_PAGE_PATH); // its first load warms what the console's cold load warmed
for (let i = 0; i < rounds; i++) {
  listTimes.push(await listRouteAlone(newPage));
  bares.push(await landing(newPage, BARE_PAGE_PATH));
  landings.push(await landing(newPage));
}
await browser.close();
await onerecord.stop();

const ratioRow = (name: string, r: { console: LoadResult; bare: LoadResult }) =>
  `| ${name} | ${fmt(r.console.requestsPerSecond)} | ${fmt(r.bare.requestsPerSecond)} | ${fmt(r.console.requestsPerSecond / r.bare.requestsPerSecond, 2)} | ${fmt(r.console.p99, 1)} / ${fmt(r.bare.p99, 1)} | ${r.console.non2xx + r.console.errors + r.bare.non2xx + r.bare.errors} |`;
const p50 = (values: number[]) => percentile(values, 0.5);
const stage = (name: string, pick: (l: Landing) => number, of = landings) =>
  `| ${name} | ${fmt(p50(of.map(pick)), 1)} | ${fmt(percentile(of.map(pick), 0.9), 1)} |`;
const firstRows = landings.map((l) => l.firstRow);
const bareFirstRows = bares.map((l) => l.firstRow);

console.log(
  `machine: ${machine()}; ${connections} connections, ${seconds} s each after ${WARM_UP_SECONDS} s warm-up; ${rounds} browser rounds; ${OBJECTS + 2} objects`,
);
if (page && asset) {
  console.log('| GET | console req/s | express.static req/s | ratio | p99 ms (console / static) | errors |');
  console.log('|---|---|---|---|---|---|');
  console.log(ratioRow('/console (page)', page));
  console.log(ratioRow('object-page.js (asset)', asset));
  console.log('');
}
console.log('| headless Chromium, ms from navigation start | p50 | p90 |');
console.log('|---|---|---|');
console.log(
  `| list route alone, loaded as a page: last byte | ${fmt(p50(listTimes), 1)} | ${fmt(percentile(listTimes, 0.9), 1)} |`,
);
console.log(stage('bare page (same list, same token, same rows): page in', (l) => l.page, bares));
console.log(stage('... list route asked', (l) => l.listAsked, bares));
console.log(stage('... list route answered', (l) => l.list, bares));
console.log(stage('... first list row', (l) => l.firstRow, bares));
console.log(stage('console landing page (assets cached): page in', (l) => l.page));
console.log(stage('... modules in', (l) => l.modules));
console.log(stage('... list route asked', (l) => l.listAsked));
console.log(stage('... sign-in check (GET /) answered', (l) => l.signedIn));
console.log(stage('... list route answered', (l) => l.list));
console.log(stage('... first list row', (l) => l.firstRow));
console.log(
  `**console minus bare page** (the issue's "adds to nothing"), first row: p50 ${fmt(p50(firstRows) - p50(bareFirstRows), 1)} ms, p90 ${fmt(percentile(firstRows, 0.9) - percentile(bareFirstRows, 0.9), 1)} ms; per round, p50 of the differences ${fmt(p50(firstRows.map((row, i) => row - bareFirstRows[i])), 1)} ms`,
);
console.log(
  `console's addition, first row vs the list route alone: p50 ${fmt(p50(firstRows) - p50(listTimes), 1)} ms, p90 ${fmt(percentile(firstRows, 0.9) - percentile(listTimes, 0.9), 1)} ms`,
);
console.log(`first console load, nothing cached: first list row at ${fmt(cold.firstRow, 1)} ms`);
