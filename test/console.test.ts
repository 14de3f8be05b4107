import { expect } from 'chai';
import express from 'express';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { consoleRoutes } from '../src/http/console.js';
import { authorization, delegationBody, grant } from './support/access.js';
import { add, change, createObject, del, piece, str, submit } from './support/changes.js';
import { openChromium } from './support/chromium.js';
import { accept, askToSubscribe, seedConsoleData, subscribePartner, type ConsoleData } from './support/console-data.js';
import type { LoopbackListener } from './support/loopback.js';
import { startGateway } from './support/pubsub.js';
import { OTHER_AGENT, postJsonLd, startTestServer, type TestServer } from './support/server.js';

const API = 'https://onerecord.iata.org/ns/api#';
type Json = Record<string, unknown>;

describe('web console (headless Chromium)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: { context: BrowserContext; close(): Promise<void> };
  let data: ConsoleData;
  let gateway: LoopbackListener;
  /** What the partner's notification endpoint answers. */
  let answer = 503;
  const delivered: number[] = [];
  /** Script errors of the pages a test opened (a failed request shows as a console error too: those are left out). */
  let scriptErrors: string[] = [];

  before(async () => {
    gateway = await startGateway(
      () => {
        delivered.push(answer);
        return answer;
      },
      () => server.url,
    );
    // Notifications for the partner go to the gateway; past a short retry window they are dead letters.
    server = await startTestServer({
      decisionPolicy: 'manual',
      outbound: { allowPrivateAddresses: true },
      delivery: {
        initialBackoffMs: 20,
        maxBackoffMs: 40,
        retryWindowMs: 300,
        callbacks: [{ organization: OTHER_AGENT, url: `${gateway.url}/notifications` }],
      },
    });
    data = await seedConsoleData(server);
    browser = await openChromium();
  });
  beforeEach(() => {
    scriptErrors = [];
  });
  afterEach(() => {
    expect(scriptErrors).to.deep.equal([]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await gateway?.close();
  });

  /** A page signed in through the `#token=` link, at `hash` (the object list by default). */
  const signedIn = async (hash = '#/objects', agent: 'holder' | 'other' = 'holder'): Promise<Page> => {
    const page = await browser.context.newPage();
    page.on('pageerror', (err) => scriptErrors.push(err.message));
    page.on(
      'console',
      (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) && scriptErrors.push(m.text()),
    );
    await page.goto(`${server.url}/console#token=${await server.token(agent)}`);
    await page.waitForSelector('#nav:not([hidden])');
    if (hash !== '#/objects') await page.evaluate((h) => (location.hash = h), hash);
    return page;
  };
  const objectHash = (iri: string, tab = 'properties') => `#/object?iri=${encodeURIComponent(iri)}&tab=${tab}`;
  const readJson = async (path: string): Promise<Json> => (await server.request(path)).json() as Promise<Json>;
  const statusOf = async (request: string) => ((await readJson(request))['api:hasRequestStatus'] as Json)['@id'];

  it('is static files under /console: no token, a same-origin CSP, assets cached for good under a content hash', async () => {
    const res = await fetch(`${server.url}/console`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy'))
      .to.contain("script-src 'self'")
      .and.contain("default-src 'none'")
      .and.not.contain('unsafe-inline');
    expect(res.headers.get('cache-control')).to.equal('no-cache');
    const html = await res.text();
    // The page carries its stylesheet and its one script: start.js, which sends the landing page's list request,
    // then the landing page's modules, bundled; the policy allows them by their hashes (still no unsafe-inline).
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    expect(inline).to.have.length(1);
    expect(inline[0].indexOf('window.consoleStart =')).to.be.lessThan(inline[0].indexOf("bundled['api.js'] = "));
    for (const name of ['api.js', 'dom.js', 'object-list-page.js', 'rdf.js', 'main.js'])
      expect(inline[0]).to.contain(`bundled['${name}'] = `);
    expect(inline[0]).to.not.contain("bundled['object-page.js']");
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1];
    expect(style).to.contain('table.stack');
    expect(html).to.not.match(/<script[^>]* src=|<link rel="stylesheet"/);
    const sha = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    expect(res.headers.get('content-security-policy'))
      .to.contain(`script-src 'self' ${sha(inline[0])};`)
      .and.contain(`style-src ${sha(style)};`);
    // The other pages' modules load when first shown, from a path named by the files' hash; the bundled ones
    // they import are served as modules exporting what the page's script kept for them (one instance of each).
    const script = /console\/assets\/[0-9a-f]{16}\/object-page\.js/.exec(inline[0])![0];
    expect(await (await fetch(`${server.url}/${script.replace('object-page.js', 'api.js')}`)).text()).to.match(
      /^export const \{ [^}]*\bsession\b[^}]*\} = globalThis\.consoleModules\['api\.js'\];$/m,
    );
    for (const name of ['start.js', 'main.js', 'console.css', 'index.html'])
      expect((await fetch(`${server.url}/${script.replace('object-page.js', name)}`)).status).to.equal(404);
    const asset = await fetch(`${server.url}/${script}`);
    expect(asset.status).to.equal(200);
    expect(asset.headers.get('content-type')).to.match(/^text\/javascript/);
    expect(asset.headers.get('cache-control')).to.contain('immutable');
    const etag = asset.headers.get('etag')!;
    expect((await fetch(`${server.url}/${script}`, { headers: { 'If-None-Match': etag } })).status).to.equal(304);
    expect(
      (await fetch(`${server.url}/console`, { headers: { 'If-None-Match': res.headers.get('etag')! } })).status,
    ).to.equal(304);
    expect((await fetch(`${server.url}/console/assets/0000000000000000/object-page.js`)).status).to.equal(404);
    const slash = await fetch(`${server.url}/console/`, { redirect: 'manual' });
    expect(slash.status).to.equal(301);
  });

  it("carries the server's base URL in the page, HTML-escaped", async () => {
    const info = await readJson('/');
    const baseUrl = (info['api:hasServerEndpoint'] as Json)['@value'];
    const html = await (await fetch(`${server.url}/console`)).text();
    expect(html).to.contain(`<meta name="onerecord-base-url" content="${baseUrl}">`);
    // A base URL with characters that mean something in HTML or to String.replace.
    const app = express().use(consoleRoutes(`https://example.org/a"b<c>d&e'f$&g{{assets}}`));
    const listener = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listener.once('listening', resolve));
    try {
      const odd = await (await fetch(`http://127.0.0.1:${(listener.address() as AddressInfo).port}/console`)).text();
      expect(odd).to.contain(
        '<meta name="onerecord-base-url" content="https://example.org/a&quot;b&lt;c&gt;d&amp;e&#39;f$&amp;g{{assets}}">',
      );
    } finally {
      listener.close();
    }
  });

  it('lists objects without waiting for the sign-in check (GET /): the page knows the base URL', async () => {
    const page = await browser.context.newPage();
    page.on('pageerror', (err) => scriptErrors.push(err.message));
    // The sign-in check is never answered.
    await page.route(`${server.url}/`, () => undefined);
    const listRequests: string[] = [];
    page.on(
      'request',
      (req) => new URL(req.url()).pathname === '/internal/logistics-objects' && listRequests.push(req.url()),
    );
    await page.goto(`${server.url}/console#token=${await server.token('holder')}`);
    await page.waitForSelector('#object-list tbody tr');
    // Asked for once, as the page opened (start.js), with the link's token; again so with the kept token after a reload.
    expect(listRequests).to.have.length(1);
    await page.reload();
    await page.waitForSelector('#object-list tbody tr');
    expect(listRequests).to.have.length(2);
    const list = (await readJson('/internal/logistics-objects?limit=1')) as { objects: { iri: string }[] };
    const first = page.locator('#object-list tbody tr').first().locator('td:first-child a');
    expect(await first.getAttribute('title')).to.equal(list.objects[0].iri);
    // The object opens from its link: its IRI is mapped to this server with the base URL from the page.
    await first.click();
    await page.waitForSelector('table.properties');
    await page.close();
  });

  it('signs in with client credentials and lands on the object list, most recently changed first', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/console`);
    const idp = server.running.services.identityProvider!;
    await page.fill('#client-sign-in [name=client_id]', idp.devClient.id);
    await page.fill('#client-sign-in [name=client_secret]', idp.devClient.secret);
    await page.click('#client-sign-in button[type=submit]');
    await page.waitForSelector('#object-list tbody tr');
    const first = await page.locator('#object-list tbody tr').first().locator('td:first-child a').getAttribute('title');
    const list = (await readJson('/internal/logistics-objects?limit=1')) as { objects: { iri: string }[] };
    expect(first).to.equal(list.objects[0].iri);
    await page.close();
  });

  it('signs in from a #token= link, which leaves the address bar; lists objects by type and by id', async () => {
    const page = await signedIn();
    expect(page.url()).to.not.contain('token=');
    await page.waitForSelector('#object-list tbody tr');
    await page.selectOption('#object-filter [name=type]', 'https://onerecord.iata.org/ns/cargo#Shipment');
    await page.click('#object-filter button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('#object-list tbody tr').length === 1);
    expect(await page.locator('#object-list tbody tr td:first-child a').getAttribute('title')).to.equal(data.shipment);
    await page.selectOption('#object-filter [name=type]', '');
    await page.fill('#object-filter [name=id]', data.piece.slice(-12));
    await page.click('#object-filter button[type=submit]');
    await page.waitForFunction(
      (iri) =>
        [...document.querySelectorAll('#object-list tbody tr td:first-child a')]
          .map((a) => a.getAttribute('title'))
          .join() === iri,
      data.piece,
    );
    await page.close();
  });

  it('opens an object: its properties with links to the objects it references, Turtle, JSON-LD, events as a timeline, audit trail', async () => {
    const page = await signedIn(objectHash(data.shipment));
    await page.waitForSelector('#revision-info');
    expect(await page.textContent('table.properties')).to.contain('Books and maps');
    await page.click(`table.properties a[title="${data.piece}"]`);
    await page.waitForSelector('#revision-info');
    expect(await page.textContent('#revision-info')).to.match(/^Revision 2 of 2/);
    const properties = await page.textContent('table.properties');
    expect(properties).to.contain('Books, hardback').and.contain('FRAGILE').and.contain('cargo:grossWeight');
    // A past revision, by number.
    await page.fill('#revision-form [name=revision]', '1');
    await page.click('#revision-form button[type=submit]');
    await page.waitForFunction(() =>
      document.querySelector('#revision-info')?.textContent?.startsWith('Revision 1 of 2'),
    );
    expect(await page.textContent('table.properties')).to.not.contain('FRAGILE');

    await page.click('.tabs >> text=Turtle');
    await page.waitForSelector('#tab-turtle pre.source');
    expect(await page.textContent('pre.source')).to.contain('a cargo:Piece');
    await page.click('.tabs >> text=JSON-LD');
    await page.waitForSelector('#tab-jsonld pre.source');
    expect(JSON.parse((await page.textContent('pre.source'))!)['@id']).to.equal(data.piece);

    await page.click('.tabs >> text=Events');
    await page.waitForSelector('#event-timeline li');
    expect(await page.locator('#event-timeline .what strong').allTextContents()).to.deep.equal(['ARR', 'DEP']);

    await page.click('.tabs >> text=Audit trail');
    await page.waitForSelector('#audit-trail article');
    const trail = await readJson(`${data.piece}/audit-trail`);
    const listed = await page
      .locator('#audit-trail article')
      .evaluateAll((cards) => cards.map((c) => c.getAttribute('data-request')).sort());
    expect(listed).to.deep.equal(
      [trail['api:hasActionRequest']]
        .flat()
        .map((r) => (r as Json)['@id'])
        .sort(),
    );
    await page.close();
  });

  it('diffs two revisions side by side: the triples added and removed', async () => {
    const page = await signedIn(objectHash(data.piece, 'revisions'));
    await page.waitForSelector('#revision-list');
    expect(await page.locator('#revision-list tbody tr').count()).to.equal(2);
    await page.check('#revision-list input[name=a][value="1"]');
    await page.check('#revision-list input[name=b][value="2"]');
    await page.click('#revisions-form button[type=submit]');
    await page.waitForSelector('table.diff');
    const added = await page.locator('table.diff .added').allTextContents();
    const removed = await page.locator('table.diff .removed').allTextContents();
    expect(added.map((t) => t.replace(/^\+/, ''))).to.have.members(['Books, hardback', 'FRAGILE']);
    expect(removed.map((t) => t.replace(/^−/, ''))).to.deep.equal(['Books']);
    // The same as the two revisions the API serves.
    const lines = async (revision: number) =>
      new Set(
        (
          await (
            await server.request(`${data.piece}?revision=${revision}`, { headers: { Accept: 'application/n-triples' } })
          ).text()
        )
          .split('\n')
          .filter((l) => l && !l.includes('Revision>')),
      );
    const [one, two] = [await lines(1), await lines(2)];
    expect([...two].filter((l) => !one.has(l))).to.have.length(added.length);
    expect([...one].filter((l) => !two.has(l))).to.have.length(removed.length);
    await page.close();
  });

  it('accepts a pending change request shown as a diff against the revision it targets', async () => {
    const page = await signedIn('#/requests');
    const card = page.locator(`#request-list article[data-request="${data.pending}"]`);
    await card.locator('table.diff').waitFor();
    expect(await card.locator('table.diff th').first().textContent()).to.equal('Property');
    expect(await card.locator('table.diff .added').allTextContents()).to.deep.equal(['+THIS SIDE UP']);
    await card.locator('button[data-action=accept]').click();
    await page.waitForSelector(`#request-list article[data-request="${data.pending}"]`, { state: 'detached' });
    expect(await statusOf(data.pending)).to.equal(`${API}REQUEST_ACCEPTED`);
    const latest = await server.request(data.piece, { method: 'HEAD' });
    expect(latest.headers.get('latest-revision')).to.equal('3');
    await page.close();
  });

  it('accepts an access-delegation request, shown with what it delegates', async () => {
    const delegate = 'https://trucker.example.com/logistics-objects/trucker';
    const asked = await server.request('/access-delegations', {
      method: 'POST',
      agent: 'other',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(
        delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: delegate, objects: [data.piece] }),
      ),
    });
    expect(asked.status, await asked.clone().text()).to.equal(201);
    const delegation = asked.headers.get('location')!;
    const page = await signedIn('#/requests?status=REQUEST_PENDING&type=AccessDelegationRequest');
    const card = page.locator(`#request-list article[data-request="${delegation}"]`);
    expect(await card.locator('table.properties').first().textContent())
      .to.contain('api:GET_LOGISTICS_OBJECT')
      .and.contain(delegate);
    await card.locator('button[data-action=accept]').click();
    await page.waitForSelector(`#request-list article[data-request="${delegation}"]`, { state: 'detached' });
    expect(await statusOf(delegation)).to.equal(`${API}REQUEST_ACCEPTED`);
    const access = await readJson(
      `/internal/access?object=${encodeURIComponent(data.piece)}&agent=${encodeURIComponent(delegate)}`,
    );
    expect((access.permissions as Record<string, { held: boolean }>).GET_LOGISTICS_OBJECT.held).to.equal(true);
    await page.close();
  });

  it('lets a requester revoke its own change request from the audit trail', async () => {
    await grant(server, authorization(OTHER_AGENT, [data.shipment], ['Read', 'Write']));
    const own = await submit(
      server,
      data.shipment,
      change(data.shipment, 1, [add(data.shipment, 'goodsDescription', str('maps only'))]),
      'other',
    );
    const page = await signedIn(objectHash(data.shipment, 'audit'), 'other');
    const card = page.locator(`#audit-trail article[data-request="${own}"]`);
    await card.locator('button[data-action=revoke]').click();
    await page.waitForSelector(`#audit-trail article[data-request="${own}"][data-status=REQUEST_REVOKED]`);
    expect(await statusOf(own)).to.equal(`${API}REQUEST_REVOKED`);
    await page.close();
  });

  it('grants and withdraws access, with the explanation drawn as the grant tree', async () => {
    const agent = 'https://forwarder.example.com/logistics-objects/forwarder';
    const page = await signedIn(objectHash(data.piece, 'access'));
    await page.waitForSelector('#grant-list');
    await page.fill('#grant-form [name=agent]', agent);
    await page.check('#grant-form input[value=PATCH_LOGISTICS_OBJECT]');
    await page.click('#grant-form button[type=submit]');
    const explained = page.locator(`.explain[data-agent="${agent}"]`);
    await explained.waitFor();
    expect(await explained.locator('[data-permission=GET_LOGISTICS_OBJECT]').getAttribute('data-held')).to.equal(
      'true',
    );
    expect(await explained.locator('[data-permission=PATCH_LOGISTICS_OBJECT]').getAttribute('data-held')).to.equal(
      'true',
    );
    expect(await explained.locator('[data-permission=GET_LOGISTICS_EVENT]').getAttribute('data-held')).to.equal(
      'false',
    );
    expect(await explained.locator('[data-permission=GET_LOGISTICS_OBJECT] li').textContent()).to.match(
      /^grant .* to .*forwarder/,
    );
    const grants = async () => {
      const list = await readJson(
        `/internal/acl?object=${encodeURIComponent(data.piece)}&agent=${encodeURIComponent(agent)}`,
      );
      return [list['api:hasItem'] ?? []].flat() as Json[];
    };
    const created = await grants();
    expect(created).to.have.length(1);

    await page.click(`button[data-grant="${created[0]['@id']}"]`);
    await page.waitForSelector(`button[data-grant="${created[0]['@id']}"]`, { state: 'detached' });
    expect(await grants()).to.deep.equal([]);
    const access = await readJson(
      `/internal/access?object=${encodeURIComponent(data.piece)}&agent=${encodeURIComponent(agent)}`,
    );
    expect((access.permissions as Record<string, { held: boolean }>).GET_LOGISTICS_OBJECT.held).to.equal(false);
    await page.close();
  });

  it('replays a dead letter, which is then delivered', async () => {
    await subscribePartner(server, data.piece);
    await accept(
      server,
      await submit(server, data.piece, change(data.piece, 3, [add(data.piece, 'shippingMarks', str('KEEP DRY'))])),
    );
    const deadLetters = async () =>
      ((await readJson('/internal/outbox/dead-letters')).deadLetters as Json[]).filter((d) => d.object === data.piece);
    for (let i = 0; i < 100 && (await deadLetters()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const [dead] = await deadLetters();
    expect(dead.reason).to.match(/503/);

    answer = 204;
    const page = await signedIn('#/pubsub');
    await page.click(`button[data-notification="${dead.notification as string}"]`);
    await page.waitForSelector('p#dead-letters');
    for (let i = 0; i < 100 && delivered.at(-1) !== 204; i++) await new Promise((r) => setTimeout(r, 50));
    expect(delivered.at(-1)).to.equal(204);
    expect(await deadLetters()).to.deep.equal([]);
    await page.close();
  });

  it('shows an object as it was at a time picked between two revisions, as the API answers ?at=', async () => {
    const object = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'Maps' });
    // The picker counts whole seconds: the next one after revision 1, and revision 2 written after it.
    const at = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000);
    await new Promise((r) => setTimeout(r, at.getTime() - Date.now() + 50));
    await accept(
      server,
      await submit(
        server,
        object,
        change(object, 1, [
          del(object, 'goodsDescription', str('Maps')),
          add(object, 'goodsDescription', str('Globes')),
        ]),
      ),
    );
    const past = await server.request(`${object}?at=${at.toISOString()}`, {
      headers: { Accept: 'application/n-triples' },
    });
    expect(past.headers.get('revision')).to.equal('1');
    expect(await past.text())
      .to.contain('"Maps"')
      .and.not.contain('"Globes"');

    const page = await signedIn(objectHash(object));
    await page.waitForFunction(() =>
      document.querySelector('#revision-info')?.textContent?.startsWith('Revision 2 of 2'),
    );
    // The field takes the reader's local time, as a person would type it.
    const local = await page.evaluate((iso) => {
      const d = new Date(iso);
      return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
    }, at.toISOString());
    await page.fill('#revision-form [name=at]', local);
    await page.click('#revision-form button[type=submit]');
    await page.waitForFunction(() =>
      document.querySelector('#revision-info')?.textContent?.startsWith('Revision 1 of 2'),
    );
    expect(await page.textContent('table.properties'))
      .to.contain('Maps')
      .and.not.contain('Globes');
    await page.close();
  });

  it('lists received notifications with their sender and arrival, filtered as the API filters them', async () => {
    const publisher = 'https://publisher.example.com';
    const sent = [
      {
        agent: 'holder',
        id: `${publisher}/notifications/console-1`,
        eventType: 'LOGISTICS_OBJECT_UPDATED',
        object: `${publisher}/logistics-objects/console-a`,
      },
      {
        agent: 'other',
        id: `${publisher}/notifications/console-2`,
        eventType: 'LOGISTICS_OBJECT_CREATED',
        object: `${publisher}/logistics-objects/console-b`,
      },
    ] as const;
    for (const n of sent) {
      const body = {
        '@context': { api: API },
        '@id': n.id,
        '@type': 'api:Notification',
        'api:hasEventType': { '@id': `api:${n.eventType}` },
        'api:hasLogisticsObject': { '@id': n.object },
      };
      const res = await postJsonLd(server, '/notifications', body, n.agent);
      expect(res.status, await res.clone().text()).to.equal(204);
    }
    type Receipt = { notification: string; sequence: number; sender: string; receivedAt: string };
    /** The receipts of what the route the console calls lists for `filter`, newest first, as the console shows them. */
    const receipts = async (filter: Record<string, string>) => {
      const listed = (await readJson(`/internal/notifications/receipts?${new URLSearchParams(filter)}`))
        .receipts as Receipt[];
      return listed
        .map(({ notification, sequence, sender, receivedAt }) => ({ notification, sequence, sender, receivedAt }))
        .reverse();
    };
    const shown = (page: Page) =>
      page.locator('#notifications > tbody > tr').evaluateAll((rows) =>
        rows.map((row) => ({
          notification: row.querySelector(':scope > [data-label=Notification] code')?.getAttribute('title'),
          sequence: Number(row.querySelector(':scope > [data-label="#"]')?.textContent),
          sender: row.querySelector(':scope > [data-label=Sender] [title]')?.getAttribute('title'),
          receivedAt: row.querySelector(':scope > [data-label=Received] time')?.getAttribute('datetime'),
        })),
      );
    const page = await signedIn('#/pubsub');
    await page.waitForSelector('#notifications');
    const all = await receipts({});
    expect(all.map((r) => r.notification)).to.deep.equal(sent.map((n) => n.id).reverse());
    expect(all.map((r) => r.sender)).to.deep.equal([OTHER_AGENT, server.running.services.holder]);
    expect(await shown(page)).to.deep.equal(all);

    const filterBy = async (fill: () => Promise<unknown>, filter: Record<string, string>, expected: string) => {
      await page.evaluate(() => (location.hash = '#/pubsub'));
      await page.waitForSelector('#notifications > tbody > tr:nth-child(2)');
      await fill();
      await page.click('#notification-filter button[type=submit]');
      await page.waitForFunction(
        (id) =>
          [...document.querySelectorAll('#notifications > tbody > tr > [data-label=Notification] code')]
            .map((c) => c.getAttribute('title'))
            .join() === id,
        expected,
      );
      const matching = await receipts(filter);
      expect(matching.map((r) => r.notification)).to.deep.equal([expected]);
      expect(await shown(page)).to.deep.equal(matching);
      // The notifications as received, from the other listing, agree.
      const items = [
        (await readJson(`/internal/notifications?${new URLSearchParams(filter)}`))['api:hasItem'],
      ].flat() as Json[];
      expect(items.map((n) => n['@id'])).to.deep.equal([expected]);
    };
    await filterBy(
      () => page.selectOption('#notification-filter [name=event-type]', 'LOGISTICS_OBJECT_UPDATED'),
      { 'event-type': 'LOGISTICS_OBJECT_UPDATED' },
      sent[0].id,
    );
    await filterBy(
      () => page.fill('#notification-filter [name=logistics-object]', sent[1].object),
      { 'logistics-object': sent[1].object },
      sent[1].id,
    );
    await filterBy(
      () => page.fill('#notification-filter [name=sender]', OTHER_AGENT),
      { sender: OTHER_AGENT },
      sent[1].id,
    );
    await page.close();
  });

  it('accepts a pending SubscriptionRequest on the Requests page', async () => {
    const request = await askToSubscribe(server, data.shipment);
    expect(await statusOf(request)).to.equal(`${API}REQUEST_PENDING`);
    const page = await signedIn('#/requests?status=REQUEST_PENDING&type=SubscriptionRequest');
    const card = page.locator(`#request-list article[data-request="${request}"]`);
    expect(await card.locator('table.properties').first().textContent())
      .to.contain(data.shipment)
      .and.contain(OTHER_AGENT);
    await card.locator('button[data-action=accept]').click();
    await page.waitForSelector(`#request-list article[data-request="${request}"]`, { state: 'detached' });
    expect(await statusOf(request)).to.equal(`${API}REQUEST_ACCEPTED`);
    await page.close();
  });

  it('shows health at a glance: store fill level, replica lag, outbox depth', async () => {
    const page = await signedIn('#/health');
    await page.waitForSelector('#outbox-summary');
    await page.waitForSelector('#replica-lag');
    expect(await page.textContent('#health-status')).to.equal('Status: ready');
    const ready = (await (await fetch(`${server.url}/health/ready`)).json()) as { store: { quads: number } };
    expect(await page.getAttribute('meter', 'value')).to.equal(String(ready.store.quads));
    expect(await page.textContent('#replica-lag')).to.match(/^Replica lag: /);
    await page.close();
  });

  it("loads a page's module when the page is first shown, and shows the page asked for last", async () => {
    const page = await signedIn();
    await page.waitForSelector('#object-list tbody tr');
    // Health is asked for, then the objects again while its module loads: the objects stay.
    await page.evaluate(async () => {
      const healthModule = new URL(
        /console\/assets\/[0-9a-f]{16}\/health-page\.js/.exec(document.querySelector('script')!.textContent!)![0],
        location.href,
      ).href;
      window.addEventListener('hashchange', () => {
        if (location.hash === '#/health') location.hash = '#/objects';
      });
      location.hash = '#/health';
      await new Promise((resolve) => window.addEventListener('hashchange', resolve, { once: true }));
      await import(healthModule);
      await new Promise((resolve) => setTimeout(resolve, 50));
    });
    await page.waitForSelector('#object-list tbody tr');
    expect(await page.textContent('main h1')).to.equal('Logistics Objects');
    expect(await page.$('#health-status')).to.equal(null);
    await page.close();
  });

  it('fits a phone: no sideways scroll on the object list at 390 px', async () => {
    const page = await signedIn();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForSelector('#object-list tbody tr');
    const widths = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      client: document.documentElement.clientWidth,
    }));
    expect(widths.scroll).to.be.at.most(widths.client);
    await page.close();
  });
});
