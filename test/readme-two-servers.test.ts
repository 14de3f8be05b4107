import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { freePort } from './support/server.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The shell commands of a page of the docs: its first ```sh block. */
function shCommands(page: string): string {
  const block = /```sh\n([\s\S]*?)```/.exec(page);
  if (!block) throw new Error('no sh block in the page');
  return block[1];
}

/** Stops every process of group `pgid` (SIGTERM, SIGKILL after 10 s) and waits until none is left. */
async function stopGroup(pgid: number): Promise<void> {
  const signal = (s: NodeJS.Signals | 0) => {
    try {
      process.kill(-pgid, s);
      return true;
    } catch {
      return false;
    }
  };
  signal('SIGTERM');
  for (let waited = 0; signal(0); waited += 100) {
    if (waited === 10_000) signal('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('docs/two-servers.md: two servers talking to each other (its commands, run as written)', function () {
  this.timeout(120_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'onerecord-readme-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('B grants A read access to a Piece, A subscribes, B changes it and A has the notification', async () => {
    const [a, b] = [await freePort(), await freePort()];
    // Only the ports and where the files go differ from docs/two-servers.md: both could be in use here.
    const commands = shCommands(await readFile(join(REPO, 'docs/two-servers.md'), 'utf8'))
      .replaceAll('8081', String(a))
      .replaceAll('8082', String(b))
      .replaceAll('./data-a', join(dir, 'data-a'))
      .replaceAll('./data-b', join(dir, 'data-b'))
      .replace(/\b([ab])\.json\b/g, (_, server: string) => join(dir, `${server}.json`));
    // The page waits a second for the notification; a loaded machine may need longer.
    const script = `set -e\n${commands}\nfor i in $(seq 100); do
  curl -s -H "Authorization: Bearer $TOKEN_A" http://localhost:${a}/internal/notifications | grep -q LOGISTICS_OBJECT_UPDATED && break
  sleep 0.2
done
echo "A's notifications:"
curl -s -H "Authorization: Bearer $TOKEN_A" -H 'Accept: application/ld+json' http://localhost:${a}/internal/notifications\n`;
    // Its own process group, so the servers it starts in the background are stopped with it.
    const shell = spawn('bash', ['-c', script], {
      cwd: REPO,
      detached: true,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    let stderr = '';
    shell.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    shell.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const [code] = (await once(shell, 'exit')) as [number];
      expect(code, `${stdout}\n${stderr}`).to.equal(0);
    } finally {
      await stopGroup(shell.pid!);
    }
    expect(stdout).to.match(/^grant: 201$/m);
    expect(stdout, 'the SubscriptionRequest B answered').to.include(
      `"request":"http://localhost:${b}/action-requests/`,
    );
    expect(stdout).to.match(/^change: 201$/m);
    const listed = stdout.slice(stdout.lastIndexOf("A's notifications:"));
    expect(listed).to.include('LOGISTICS_OBJECT_UPDATED');
    expect(listed).to.include('https://onerecord.iata.org/ns/cargo#shippingMarks');
  });
});
