import { expect } from 'chai';
import { notedSecrets, removeTestLog, testLogLines } from './support/log-sink.js';
import { expectNoSecretLogged, RUN_LOG_DIR } from './support/run-log-check.js';
import { startTestServer } from './support/server.js';
import { piece } from './support/changes.js';

describe('request logs', () => {
  it('one JSON line per request: request id (also X-Request-Id), method, route, path, status, latency, agent', async () => {
    const server = await startTestServer();
    try {
      const res = await server.request('/logistics-objects', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json', 'X-Request-Id': 'client-req-1' },
        body: JSON.stringify(piece()),
      });
      expect(res.status).to.equal(201);
      expect(res.headers.get('x-request-id')).to.equal('client-req-1');
      const read = await server.request(res.headers.get('location')!);
      const generated = read.headers.get('x-request-id')!;
      expect(generated).to.match(/^[0-9a-f-]{36}$/);
      const unauthenticated = await server.request('/', {
        agent: 'none',
        headers: { 'X-Request-Id': 'spaces are refused' },
      });
      expect(unauthenticated.status).to.equal(401);
      const lines = testLogLines().map((line) => JSON.parse(line) as Record<string, unknown>);
      const created = lines.find((l) => l.reqId === 'client-req-1');
      expect(created).to.include({
        msg: 'request',
        level: 'info',
        method: 'POST',
        route: '/logistics-objects',
        path: '/logistics-objects',
        status: 201,
        agent: server.running.services.holder,
      });
      expect(created!.ms).to.be.a('number');
      expect(lines.find((l) => l.reqId === generated)).to.include({
        method: 'GET',
        route: '/logistics-objects/:id',
        status: 200,
      });
      const refused = lines.find((l) => l.reqId === unauthenticated.headers.get('x-request-id'));
      expect(refused).to.include({ status: 401, route: 'unmatched' });
      expect(refused).to.not.have.property('agent');
    } finally {
      await server.close();
    }
  });
});

// Run alone, the file checks the logs of its own process once its tests are done; in a run of the
// whole suite, test/support/run-fixtures.ts checks those of every process once every file is done.
if (!RUN_LOG_DIR) {
  after('no log line of the whole test run holds a token or a client secret', () => {
    expectNoSecretLogged(testLogLines(), notedSecrets());
    removeTestLog();
  });
}
