import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { chromium, type BrowserContext } from 'playwright-core';
import { createObject, piece } from './support/changes.js';
import { startTestServer, type TestServer } from './support/server.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

describe('SPARQL web page (headless Chromium)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: BrowserContext;
  let profile: string;

  before(async () => {
    server = await startTestServer();
    profile = await mkdtemp(join(tmpdir(), 'onerecord-chromium-'));
    // A fresh profile directory (playwright passes it as --user-data-dir); never a downloaded browser.
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
    });
  });
  after(async () => {
    await browser?.close();
    await server.close();
    await rm(profile, { recursive: true, force: true });
  });

  it('is served to a browser without a token, with the shipped queries as examples', async () => {
    const res = await fetch(`${server.url}/sparql`, { headers: { Accept: 'text/html,application/xhtml+xml' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.contain("default-src 'none'");
    // The page's own script and style by their hashes: no inline script injected into it could run.
    expect(res.headers.get('content-security-policy')).to.not.contain("'unsafe-inline'");
    expect(await res.text()).to.contain('pieces-without-departure');
    // A client that is not a browser still gets the protocol (and needs a token).
    expect((await fetch(`${server.url}/sparql`)).status).to.equal(401);
  });

  it('runs a typed query and shows the answer as a table', async () => {
    const object = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'Books <b>bold</b>' });
    const page = await browser.newPage();
    await page.goto(`${server.url}/sparql`);
    await page.fill('#token', await server.token());
    await page.fill('#query', `SELECT ?s ?d WHERE { ?s <https://onerecord.iata.org/ns/cargo#goodsDescription> ?d }`);
    await page.click('#run');
    await page.waitForSelector('#results table tbody tr');
    expect(await page.locator('#results th').allTextContents()).to.deep.equal(['s', 'd']);
    expect(await page.locator('#results tbody td').allTextContents()).to.deep.equal([object, 'Books <b>bold</b>']);
    expect(await page.locator('#results b').count()).to.equal(0);
    expect(await page.textContent('#status')).to.match(/^1 rows in \d+ ms$/);
    await page.close();
  });

  it('loads an example into the editor and shows errors from the server', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/sparql`);
    await page.fill('#token', await server.token());
    await page.selectOption('#example', {
      label:
        'changed-last-24h - Logistics Objects created or changed in the last 24 hours, most recent first, with their latest revision.',
    });
    expect(await page.inputValue('#view')).to.equal('revisions');
    expect(await page.inputValue('#query')).to.contain('store:revisionOf');
    await page.click('#run');
    await page.waitForSelector('#results table tbody tr');
    expect(await page.locator('#results th').allTextContents()).to.deep.equal([
      'object',
      'latestRevision',
      'lastChange',
      'revisionsIn24h',
    ]);
    await page.fill('#query', 'SELECT * WHERE { ?s ?p }');
    await page.click('#run');
    await page.waitForSelector('#status.error');
    expect(await page.textContent('#status')).to.match(/^400: SPARQL syntax error \(line 1/);
    await page.close();
  });
});
