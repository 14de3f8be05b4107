import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { openChromium } from './support/chromium.js';
import { startTestServer, type TestServer } from './support/server.js';

interface Document {
  info: { title: string; version: string };
  paths: Record<string, Record<string, { operationId?: string; summary?: string }>>;
}

describe('OpenAPI web page (headless Chromium)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: { context: BrowserContext; close(): Promise<void> };
  let doc: Document;

  before(async () => {
    server = await startTestServer();
    browser = await openChromium();
    doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Document;
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Script and console errors while our page is shown (not Chromium's own viewer of the JSON form), checked after each test. */
  let errors: string[] = [];
  beforeEach(() => (errors = []));
  afterEach(() => expect(errors).to.deep.equal([]));
  const open = async (path: string): Promise<Page> => {
    const page = await browser.context.newPage();
    const ours = () => new URL(page.url()).pathname === '/openapi';
    page.on('pageerror', (err) => ours() && errors.push(`page error: ${err.message}`));
    page.on('console', (message) => {
      if (ours() && message.type() === 'error')
        errors.push(`console error: ${message.text()} (${message.location().url})`);
    });
    const res = await page.goto(`${server.url}${path}`);
    expect(res?.status()).to.equal(200);
    return page;
  };

  it('shows every operation of the served description, with its title and version, without a token', async () => {
    const page = await open('/openapi');
    expect(await page.title()).to.equal(doc.info.title);
    expect(await page.textContent('h1')).to.equal(`${doc.info.title} ${doc.info.version}`);
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const headings = (await page.locator('section h2').allTextContents()).map((h) => h.replace(/\s+/g, ' ').trim());
    expect(headings).to.deep.equal(operations);
    expect(await page.locator('script').count()).to.equal(0);
    await page.close();
  });

  it('each operation can be linked to by its operationId', async () => {
    const [path, ops] = Object.entries(doc.paths).find(([, o]) => Object.values(o).some((op) => op.operationId))!;
    const operation = Object.values(ops).find((op) => op.operationId)!;
    const page = await open(`/openapi#${operation.operationId}`);
    const section = page.locator(`section[id="${operation.operationId}"]`);
    expect(await section.locator('h2 code').textContent()).to.equal(path);
    expect(await section.isVisible()).to.equal(true);
    const box = await section.boundingBox();
    expect(box!.y).to.be.lessThan(page.viewportSize()!.height);
    await page.close();
  });

  it('links to the machine-readable forms, which the browser opens', async () => {
    const page = await open('/openapi');
    await Promise.all([page.waitForURL(`${server.url}/openapi.json`), page.click('a[href="openapi.json"]')]);
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText(), not the DOM property
    expect(JSON.parse((await page.locator('body').innerText()).trim())).to.deep.equal(doc);
    await page.goBack();
    const yaml = await page.locator('a[href="openapi.yaml"]').getAttribute('href');
    expect((await fetch(new URL(yaml!, `${server.url}/openapi`))).headers.get('content-type')).to.match(
      /^application\/yaml/,
    );
    await page.close();
  });
});
