/**
 * What the web console costs (the issue: it "adds under 50 ms to nothing"), in one run:
 *  - GET /console and one of its assets (main.js) under 50 connections, against express.static
 *    serving the same files, alternately, twice each (ratios of req/s; absolute numbers move with the machine);
 *  - in headless Chromium, the landing page's time to its first list row (from navigation start:
 *    the page, its modules, the sign-in check and the list route; each stage shown), against fetching
 *    the list route alone as a page of its own, in fresh pages of the same browser, alternately. The
 *    first console load, with nothing cached, is shown apart.
 *   npm run build && node dist/scripts/bench/console.js [seconds] [rounds]
 */
import type { Page } from 'playwright-core';
import { openChromium } from '../../test/support/chromium.js';
import { BENCH_PIECE } from './fixtures.js';
import { fmt, machine, mean, percentile, startTarget, warmLoad, WARM_UP_SECONDS, type LoadResult, type OneRecordTarget } from './harness.js';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 30);
const connections = 50;
/** A full first page of the object list (its page size). */
const OBJECTS = 50;

const onerecord = await startTarget<OneRecordTarget>('onerecord', [], { BENCH_REVISIONS: '1' });
const { url, token } = onerecord.info;
for (let i = 0; i < OBJECTS; i++) {
  const res = await fetch(`${url}/logistics-objects`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' }, body: JSON.stringify(BENCH_PIECE) });
  if (res.status !== 201) throw new Error(`POST /logistics-objects answered ${res.status}`);
}
const assetPath = /src="(console\/assets\/[0-9a-f]{16}\/main\.js)"/.exec(await (await fetch(`${url}/console`)).text())![1];
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
const page = await alternate(`${url}/console`, `${bareStatic.info.url}/index.html`);
const asset = await alternate(`${url}/${assetPath}`, `${bareStatic.info.url}/main.js`);
await bareStatic.stop();

/** Milliseconds from navigation start to each stage of the landing page, in a fresh page. */
interface Landing {
  /** The last of its modules arrived. */
  modules: number;
  /** The answer to the sign-in check (GET /) arrived. */
  signedIn: number;
  /** The answer of the list route arrived. */
  list: number;
  /** The list's first row is in the page. */
  firstRow: number;
}

async function landing(newPage: () => Promise<Page>): Promise<Landing> {
  const tab = await newPage();
  // Installed before the console's scripts run; it sees the row the moment it is added.
  await tab.addInitScript(() => {
    new MutationObserver((_, observer) => {
      if (!document.querySelector('#object-list tbody tr')) return;
      (window as unknown as { firstRow: number }).firstRow = performance.now();
      observer.disconnect();
    }).observe(document, { childList: true, subtree: true });
  });
  await tab.goto(`${url}/console#token=${token}`);
  await tab.waitForSelector('#object-list tbody tr');
  const stages = await tab.evaluate(() => {
    const loaded = performance.getEntriesByType('resource') as PerformanceResourceTiming[];
    const last = (paths: (path: string) => boolean) => Math.max(...loaded.filter((e) => paths(new URL(e.name).pathname)).map((e) => e.responseEnd));
    return {
      modules: last((path) => path.endsWith('.js')),
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
  const ms = await tab.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd);
  await tab.close();
  return ms;
}

const browser = await openChromium();
const newPage = () => browser.context.newPage();
const cold = await landing(newPage);
const landings: Landing[] = [];
const listTimes: number[] = [];
for (let i = 0; i < rounds; i++) {
  listTimes.push(await listRouteAlone(newPage));
  landings.push(await landing(newPage));
}
await browser.close();
await onerecord.stop();

const ratioRow = (name: string, r: { console: LoadResult; bare: LoadResult }) =>
  `| ${name} | ${fmt(r.console.requestsPerSecond)} | ${fmt(r.bare.requestsPerSecond)} | ${fmt(r.console.requestsPerSecond / r.bare.requestsPerSecond, 2)} | ${fmt(r.console.p99, 1)} / ${fmt(r.bare.p99, 1)} | ${r.console.non2xx + r.console.errors + r.bare.non2xx + r.bare.errors} |`;
const p50 = (values: number[]) => percentile(values, 0.5);
const stage = (name: string, pick: (l: Landing) => number) => `| ${name} | ${fmt(p50(landings.map(pick)), 1)} | ${fmt(percentile(landings.map(pick), 0.9), 1)} |`;
const firstRows = landings.map((l) => l.firstRow);

console.log(`machine: ${machine()}; ${connections} connections, ${seconds} s each after ${WARM_UP_SECONDS} s warm-up; ${rounds} browser rounds; ${OBJECTS + 2} objects`);
console.log('| GET | console req/s | express.static req/s | ratio | p99 ms (console / static) | errors |');
console.log('|---|---|---|---|---|---|');
console.log(ratioRow('/console (page)', page));
console.log(ratioRow('main.js (asset)', asset));
console.log('');
console.log('| headless Chromium, ms from navigation start | p50 | p90 |');
console.log('|---|---|---|');
console.log(`| list route alone, loaded as a page: last byte | ${fmt(p50(listTimes), 1)} | ${fmt(percentile(listTimes, 0.9), 1)} |`);
console.log(stage('console landing page (assets cached): modules in', (l) => l.modules));
console.log(stage('... sign-in check (GET /) answered', (l) => l.signedIn));
console.log(stage('... list route answered', (l) => l.list));
console.log(stage('... first list row', (l) => l.firstRow));
console.log(`console's addition, first row vs the list route alone: p50 ${fmt(p50(firstRows) - p50(listTimes), 1)} ms, p90 ${fmt(percentile(firstRows, 0.9) - percentile(listTimes, 0.9), 1)} ms`);
console.log(`first console load, nothing cached: first list row at ${fmt(cold.firstRow, 1)} ms`);
