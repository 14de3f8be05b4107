import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { appendToTestLog } from './support/log-sink.js';
import { embeddedKey, nowSeconds, sign } from './support/jwt.js';
import { piece } from './support/changes.js';
import { freePort } from './support/server.js';
import { tempDir } from './support/store-data.js';

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));

interface Started {
  child: ChildProcess;
  lines: string[];
  exit: Promise<number | null>;
}

/** `npm start`'s entry point in a process of its own, configured by env vars; resolves once ready. */
async function startMain(dataDir: string, port: number): Promise<Started> {
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: `http://127.0.0.1:${port}`,
      SHUTDOWN_GRACE_MS: '10000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const parts = (rest + chunk.toString('utf8')).split('\n');
      rest = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        appendToTestLog(line);
      }
    });
  }
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
    if (res?.status === 200) return { child, lines, exit };
    if (child.exitCode !== null) throw new Error(`server ended while starting:\n${lines.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('graceful shutdown', function () {
  this.timeout(60_000);

  it('SIGTERM under load: in-flight writes are answered, exit 0, every acknowledged write is there after restart', async () => {
    const { dir, remove } = await tempDir();
    try {
      const port = await freePort();
      const first = await startMain(dir, port);
      const key = await embeddedKey(dir);
      const token = await sign(key, {
        iss: key.issuer,
        logistics_agent_uri: `http://127.0.0.1:${port}/logistics-objects/data-holder`,
        exp: nowSeconds() + 600,
      });
      const acknowledged: { iri: string; at: number }[] = [];
      let signalledAt = Infinity;
      let stop = false;
      const writer = async () => {
        while (!stop) {
          try {
            const res = await fetch(`http://127.0.0.1:${port}/logistics-objects`, {
              method: 'POST',
              headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' },
              body: JSON.stringify(piece(20)),
            });
            if (res.status === 201) acknowledged.push({ iri: res.headers.get('location')!, at: performance.now() });
            else expect(res.status, await res.text()).to.equal(201);
          } catch {
            if (performance.now() > signalledAt) return; // refused once the port closed
          }
        }
      };
      const writers = Array.from({ length: 8 }, writer);
      // At least 1.5 s of load, and enough acknowledged writes to check, however slow the shared machine is.
      const loadedSince = performance.now();
      while (performance.now() - loadedSince < 1500 || acknowledged.length <= 20)
        await new Promise((resolve) => setTimeout(resolve, 50));
      signalledAt = performance.now();
      first.child.kill('SIGTERM');
      const code = await first.exit;
      stop = true;
      await Promise.all(writers);
      expect(code, first.lines.join('\n')).to.equal(0);
      expect(acknowledged.length).to.be.greaterThan(20);
      expect(
        acknowledged.filter((a) => a.at > signalledAt).length,
        'no write in flight at SIGTERM was answered',
      ).to.be.greaterThan(0);
      const events = first.lines.map((line) => (JSON.parse(line) as { event?: string }).event).filter(Boolean);
      expect(events).to.include.members(['started', 'shutdown', 'stopped']);

      const second = await startMain(dir, port);
      try {
        for (const { iri } of acknowledged) {
          const res = await fetch(iri, { headers: { Authorization: `Bearer ${token}` } });
          expect(res.status, iri).to.equal(200);
        }
      } finally {
        second.child.kill('SIGTERM');
        expect(await second.exit).to.equal(0);
      }
    } finally {
      await remove();
    }
  });
});
