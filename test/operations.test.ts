import { expect } from 'chai';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { expectApiError } from './support/api-error.js';
import { add, bool, change, del, createObject, patch, piece, str } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { testLogger } from './support/log-sink.js';
import { METRICS_TOKEN, metricSample as sample, scrapeMetrics } from './support/metrics.js';
import { freePort, startTestServer, type TestServer } from './support/server.js';
import { graphQuads, openStore, tempDir } from './support/store-data.js';

describe('operations: health probes', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('GET /health/live and /health/ready answer plain JSON without authentication', async () => {
    for (const [path, status] of [
      ['/health/live', 'live'],
      ['/health/ready', 'ready'],
    ]) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      const body = (await res.json()) as { status: string; store?: { capacityQuads: number } };
      expect(body.status).to.equal(status);
      if (path === '/health/ready') expect(body.store?.capacityQuads).to.equal(8_000_000);
    }
  });

  it('is not ready while the store loads: probes answer, the API is 503 until ready', async function () {
    this.timeout(60_000);
    const { dir, remove } = await tempDir();
    try {
      // A store large enough that loading it takes a while.
      const { store } = await openStore(dir);
      for (let g = 0; g < 20; g++) await store.commit(store.begin({ insert: graphQuads(`g${g}`, 10_000) }));
      await store.close();
      const port = await freePort();
      const config = loadConfig({}, { port, host: '127.0.0.1', baseUrl: `http://127.0.0.1:${port}`, dataDir: dir });
      const starting = startServer(config, testLogger());
      let started = false;
      void starting.then(() => (started = true));
      const seen = new Set<string>();
      let api: Response | undefined;
      while (!started) {
        const probe = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
        if (probe) {
          const { status } = (await probe.json()) as { status: string };
          seen.add(`${probe.status} ${status}`);
          if (status === 'starting' && !api) api = await fetch(`http://127.0.0.1:${port}/`);
        }
      }
      const running = await starting;
      try {
        expect([...seen]).to.include('503 starting');
        await expectApiError(api!, 503, /starting/);
        expect(api!.headers.get('retry-after')).to.equal('1');
        const ready = await fetch(`${running.url}/health/ready`);
        expect(ready.status).to.equal(200);
      } finally {
        await running.close();
      }
    } finally {
      await remove();
    }
  });

  it('is not ready while shutting down (seen on the metrics port, which closes last), still live', async () => {
    const other = await startTestServer({ shutdown: { graceMs: 1500 }, metrics: { port: 0 } });
    // A request that stays in flight (its body never ends) keeps the server draining.
    const controller = new AbortController();
    const slow = fetch(`${other.url}/logistics-objects`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${await other.token()}`, 'Content-Type': 'application/ld+json' },
      body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{')) }),
      duplex: 'half',
      signal: controller.signal,
    } as RequestInit).catch(() => undefined);
    const keptAlive = await fetch(`${other.url}/health/live`);
    expect(keptAlive.status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = other.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const metricsUrl = other.running.metricsUrl!;
    const ready = await fetch(`${metricsUrl}/health/ready`);
    expect(ready.status).to.equal(503);
    expect(((await ready.json()) as { status: string }).status).to.equal('stopping');
    expect((await fetch(`${metricsUrl}/health/live`)).status).to.equal(200);
    controller.abort();
    await slow;
    await closing;
  });
});

describe('operations: metrics', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ metrics: { token: METRICS_TOKEN, port: 0 }, journal: { snapshotAfterBytes: 1 } });
  });
  after(() => server.close());

  const scrape = (url = `${server.url}/metrics`, token: string | undefined = METRICS_TOKEN) =>
    scrapeMetrics(url, token);

  it('GET /metrics on the main port needs the metrics token (401 otherwise, api:Error); a data token is not enough', async () => {
    await expectApiError(await fetch(`${server.url}/metrics`), 401);
    await expectApiError(
      await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${await server.token()}` } }),
      401,
    );
    await expectApiError(
      await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}x` } }),
      401,
    );
  });

  it('counts requests by method, route pattern and status, with latency buckets', async () => {
    const object = await createObject(server, piece());
    for (let i = 0; i < 3; i++) expect((await server.request(object)).status).to.equal(200);
    expect((await server.request('/logistics-objects/none')).status).to.equal(404);
    const text = await scrape();
    expect(
      sample(
        text,
        'onerecord_http_request_duration_seconds_count',
        'method="GET",route="/logistics-objects/:id",status="200"',
      ),
    ).to.equal(3);
    expect(
      sample(
        text,
        'onerecord_http_request_duration_seconds_count',
        'method="GET",route="/logistics-objects/:id",status="404"',
      ),
    ).to.equal(1);
    expect(
      sample(
        text,
        'onerecord_http_request_duration_seconds_count',
        'method="POST",route="/logistics-objects",status="201"',
      ),
    ).to.be.at.least(1);
    expect(text).to.match(
      /onerecord_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/logistics-objects\/:id",status="200"\} \d+/,
    );
  });

  it('action requests by type and the status they reach, and Logistics Events stored, from the after-commit stream', async () => {
    const count = (text: string, labels: string) =>
      (text.split('\n').find((l) => l.startsWith(`onerecord_action_requests_total{${labels}} `)) ?? ' 0').split(' ')[1];
    const before = await scrape();
    const object = await createObject(server, piece());
    expect(
      (await patch(server, object, change(object, 1, [add(object, 'goodsDescription', str('More books'))]))).status,
    ).to.equal(201);
    expect(
      (await patch(server, object, change(object, 1, [add(object, 'goodsDescription', str('Stale'))]))).status,
    ).to.equal(201);
    const failing = change(object, 2, [del(object, 'coload', bool(false)), add(object, 'coload', str('no'))]);
    expect((await patch(server, object, failing)).status).to.equal(201);
    const pending = await patch(
      server,
      object,
      change(object, 2, [add(object, 'goodsDescription', str('Pending'))]),
      'other',
    );
    expect(pending.status).to.equal(201);
    expect(
      (await server.request(pending.headers.get('location')!, { method: 'DELETE', agent: 'other' })).status,
    ).to.equal(204);
    for (let i = 0; i < 2; i++) expect((await postEvent(server, object, eventJson())).status).to.equal(201);
    const after = await scrape();
    const delta = (status: string) =>
      Number(count(after, `type="ChangeRequest",status="${status}"`)) -
      Number(count(before, `type="ChangeRequest",status="${status}"`));
    expect(
      ['REQUEST_PENDING', 'REQUEST_ACCEPTED', 'REQUEST_REJECTED', 'REQUEST_FAILED', 'REQUEST_REVOKED'].map(delta),
    ).to.deep.equal([4, 1, 1, 1, 1]);
    expect(
      sample(after, 'onerecord_logistics_events_total') - sample(before, 'onerecord_logistics_events_total'),
    ).to.equal(2);
  });

  it('counts only what this process commits, not what the store held at start', async () => {
    const { dir, remove } = await tempDir();
    const first = await startTestServer({}, dir);
    const object = await createObject(first, piece());
    expect((await postEvent(first, object, eventJson())).status).to.equal(201);
    expect(
      (await patch(first, object, change(object, 1, [add(object, 'goodsDescription', str('More'))]))).status,
    ).to.equal(201);
    await first.close();
    const again = await startTestServer({ metrics: { token: METRICS_TOKEN } }, dir);
    try {
      const text = await scrape(`${again.url}/metrics`);
      expect(sample(text, 'onerecord_logistics_events_total')).to.equal(0);
      expect(text).not.to.match(/^onerecord_action_requests_total\{/m);
    } finally {
      await again.close();
      await remove();
    }
  });

  it('journal group commits, snapshots, store size, WASM memory and process metrics are there', async () => {
    await createObject(server, piece());
    await server.running.embedded!.snapshot();
    const text = await scrape();
    expect(sample(text, 'onerecord_journal_fsync_seconds_count')).to.be.at.least(1);
    expect(sample(text, 'onerecord_journal_batch_records_sum')).to.be.at.least(
      sample(text, 'onerecord_journal_batch_records_count'),
    );
    expect(sample(text, 'onerecord_snapshot_duration_seconds_count')).to.be.at.least(1);
    expect(sample(text, 'onerecord_store_quads')).to.be.greaterThan(0);
    expect(sample(text, 'onerecord_wasm_memory_bytes')).to.be.greaterThan(1024 * 1024);
    expect(sample(text, 'process_resident_memory_bytes')).to.be.greaterThan(0);
  });

  it('the separate metrics port answers without a token, and only /metrics and health there', async () => {
    const metricsUrl = server.running.metricsUrl!;
    expect(metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await scrape(`${metricsUrl}/metrics`, undefined)).to.include('onerecord_http_request_duration_seconds');
    expect((await fetch(`${metricsUrl}/health/ready`)).status).to.equal(200);
    await expectApiError(await fetch(`${metricsUrl}/logistics-objects/data-holder`), 404);
  });

  it('without a metrics token or port nothing is collected and the main port has no /metrics', async () => {
    const plain = await startTestServer();
    try {
      expect(plain.running.services.metrics).to.equal(undefined);
      await expectApiError(
        await fetch(`${plain.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } }),
        401,
      );
      await expectApiError(await plain.request('/metrics'), 404);
    } finally {
      await plain.close();
    }
  });
});
