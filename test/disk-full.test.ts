import { expect } from 'chai';
import { rm, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { listSegments, segmentName } from '../src/store/embedded/journal/journal.js';
import { expectApiError } from './support/api-error.js';
import { ServerProcess } from './support/server-process.js';
import { freePort, postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { tempDir } from './support/store-data.js';

const piece = (iri: string, description = 'Books') => ({
  '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' },
  '@id': iri,
  '@type': 'cargo:Piece',
  'cargo:goodsDescription': description,
});

const STORAGE_UNAVAILABLE = /could not be stored durably; nothing was changed/;

describe('write errors: disk full, file too large', () => {
  describe('a journal segment on a full device (/dev/full: every write fails with ENOSPC)', () => {
    let server: TestServer;
    let segment: string;
    before(async () => {
      server = await startTestServer();
      const next = Math.max(...(await listSegments(server.dataDir))) + 1;
      segment = join(server.dataDir, segmentName(next));
      await symlink('/dev/full', segment);
      await server.running.embedded!.snapshot(); // rotates the journal onto the full device
    });
    after(async () => {
      await rm(segment, { force: true });
      await server.close();
    });

    it('POST answers 503 with an api:Error, nothing is acknowledged and the store is unchanged', async () => {
      const { services } = server.running;
      const store = server.running.embedded!;
      const quadsBefore = store.index.size;
      const objectsBefore = services.objects.index.size;
      const iri = `${server.url}/logistics-objects/full-1`;
      await expectApiError(await postJsonLd(server, '/logistics-objects', piece(iri)), 503, STORAGE_UNAVAILABLE);
      expect(store.index.size).to.equal(quadsBefore);
      expect(services.objects.index.size).to.equal(objectsBefore);
      expect((await server.request(iri)).status).to.equal(404);
    });

    it('the journal refuses every later write until restart: it could not cut the failed write off a device', async () => {
      const iri = `${server.url}/logistics-objects/full-2`;
      await expectApiError(await postJsonLd(server, '/logistics-objects', piece(iri)), 503, STORAGE_UNAVAILABLE);
      expect((await server.request(iri)).status).to.equal(404);
    });

    it('after a restart on a healthy disk, nothing of the failed writes is there and writes work again', async () => {
      const holder = `${server.url}/logistics-objects/data-holder`;
      await server.stop();
      await rm(segment); // reading /dev/full never ends
      await server.restart();
      expect((await server.request(holder)).status).to.equal(200);
      for (const id of ['full-1', 'full-2'])
        expect((await server.request(`/logistics-objects/${id}`)).status).to.equal(404);
      const res = await postJsonLd(server, '/logistics-objects', piece(`${server.url}/logistics-objects/full-3`));
      expect(res.status).to.equal(201);
    });
  });

  describe('a write cut short by the file size limit (EFBIG after a partial write)', function () {
    this.timeout(30_000);

    it('answers 503, cuts the partial record off, takes later writes that fit, and restarts cleanly', async () => {
      const { dir, remove } = await tempDir();
      const port = await freePort();
      const iri = (id: string) => `http://127.0.0.1:${port}/logistics-objects/${id}`;
      const post = (server: ServerProcess, body: unknown) =>
        server.request('/logistics-objects', {
          method: 'POST',
          headers: { 'Content-Type': 'application/ld+json' },
          body: JSON.stringify(body),
        });
      const journalFile = join(dir, segmentName(1));
      try {
        const first = new ServerProcess({ dataDir: dir, port });
        for (const id of ['before-1', 'before-2']) expect((await post(first, piece(iri(id)))).status).to.equal(201);
        await first.stop('SIGTERM');
        const goodSize = (await stat(journalFile)).size;

        const limited = new ServerProcess({ dataDir: dir, port, fileSizeLimitKiB: Math.ceil(goodSize / 1024) + 8 });
        await expectApiError(await post(limited, piece(iri('too-big'), 'x'.repeat(20_000))), 503, STORAGE_UNAVAILABLE);
        expect(limited.log.join('\n')).to.match(/EFBIG/);
        expect((await stat(journalFile)).size).to.equal(goodSize, 'the partial record was not cut off');
        expect((await limited.request(iri('too-big'))).status).to.equal(404);
        expect((await post(limited, piece(iri('fits')))).status).to.equal(201);
        await limited.stop('SIGKILL');

        const restarted = new ServerProcess({ dataDir: dir, port });
        for (const id of ['before-1', 'before-2', 'fits'])
          expect((await restarted.request(iri(id))).status).to.equal(200, id);
        expect((await restarted.request(iri('too-big'))).status).to.equal(404);
        expect(restarted.log.join('\n')).not.to.match(/dropped|corrupt/);
        expect((await post(restarted, piece(iri('too-big'), 'x'.repeat(20_000)))).status).to.equal(201);
        await restarted.stop('SIGTERM');
      } finally {
        await remove();
      }
    });
  });
});
