import { join } from 'node:path';
import { projectFile } from '../src/project-files.js';
import { authorization, grant } from '../test/support/access.js';
import { openChromium } from '../test/support/chromium.js';
import { accept, seedConsoleData, subscribePartner } from '../test/support/console-data.js';
import { add, change, del, str, submit } from '../test/support/changes.js';
import { OTHER_AGENT, postJsonLd, startTestServer } from '../test/support/server.js';

/*
 * Screenshots of the web console for the README and docs/console.md: starts a server with a few
 * objects (as the console tests do), opens each main page in headless Chromium at 1280x800 (and
 * the object list at phone width) and writes docs/console-<page>.png.
 *
 *   npm run console:screenshots      (npx tsc -p . && node dist/scripts/console-screenshots.js)
 */

// A partner whose endpoint refuses connections: its notification ends as a dead letter within the short retry window.
const server = await startTestServer({
  decisionPolicy: 'manual',
  outbound: { allowPrivateAddresses: true },
  delivery: {
    initialBackoffMs: 20,
    maxBackoffMs: 40,
    retryWindowMs: 300,
    callbacks: [{ organization: OTHER_AGENT, url: 'http://127.0.0.1:9/notifications' }],
  },
});
const browser = await openChromium();
try {
  const data = await seedConsoleData(server);
  // On the shipment: a change accepted on the piece would reject the piece's pending request.
  await grant(server, authorization(OTHER_AGENT, [data.shipment], ['Read']));
  await subscribePartner(server, data.shipment);
  await accept(
    server,
    await submit(
      server,
      data.shipment,
      change(data.shipment, 1, [
        del(data.shipment, 'goodsDescription', str('Books and maps')),
        add(data.shipment, 'goodsDescription', str('Books, maps and globes')),
      ]),
    ),
  );
  const notification = {
    '@context': { api: 'https://onerecord.iata.org/ns/api#' },
    '@id': 'https://airline.example.com/notifications/1',
    '@type': 'api:Notification',
    'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
    'api:hasLogisticsObject': { '@id': 'https://airline.example.com/logistics-objects/awb-020-12345675' },
  };
  await postJsonLd(server, '/notifications', notification, 'other');
  await new Promise((resolve) => setTimeout(resolve, 1000));

  const token = await server.token();
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/console#token=${token}`);
  const shots: [string, string, string][] = [
    ['objects', '#/objects', '#object-list'],
    ['object', `#/object?iri=${encodeURIComponent(data.shipment)}`, '#revision-info'],
    ['diff', `#/object?iri=${encodeURIComponent(data.piece)}&tab=revisions&a=1&b=2`, 'table.diff'],
    ['requests', '#/requests', 'table.diff'],
    ['access', `#/object?iri=${encodeURIComponent(data.piece)}&tab=access`, '.explain'],
    ['pubsub', '#/pubsub', 'button[data-notification]'],
    ['health', '#/health', '#replica-lag'],
  ];
  for (const [name, hash, ready] of shots) {
    await page.evaluate((h) => (location.hash = h), hash);
    await page.waitForSelector(ready);
    await page.evaluate(() => (document.getElementById('toast')!.textContent = ''));
    await page.screenshot({ path: join(projectFile('docs'), `console-${name}.png`) });
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.evaluate(() => (location.hash = '#/objects?type='));
  await page.waitForSelector('#object-list');
  await page.screenshot({ path: join(projectFile('docs'), 'console-phone.png') });
  console.log(`wrote docs/console-{${shots.map(([name]) => name).join(',')},phone}.png`);
} finally {
  await browser.close();
  await server.close();
}
