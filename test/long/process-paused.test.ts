import { expect } from 'chai';
import { createObject } from '../support/changes.js';
import { direct, holdPort } from '../support/cluster.js';
import { runWithEngineUp, startProcesses } from '../support/engine-processes.js';
import type { ServerProcess } from '../support/server-process.js';
import {
  acceptedChanges,
  type ChangeLoad,
  expectEachAppliedOnceEverywhere,
  startChangeLoad,
} from '../support/soak-history.js';
import { engineSettings } from '../support/virtuoso.js';

// Two server processes over one Virtuoso (store.sparql.sharedWriters) while 20 clients change objects through both.
// One is paused (SIGSTOP) for longer than processDeadAfterMillis with writes in flight: the other takes it for dead
// and completes the writes it had stored; continued (SIGCONT), the paused one sends them as well. Each is applied
// once (docs/sparql-engine.md, "Several processes"). Whatever TEST_STORE_BACKEND says.

const CLIENTS = 20;
const OBJECTS = 30;
const DEAD_AFTER_MS = 2_000;
/** The pause: the other process takes the paused one for dead after DEAD_AFTER_MS and completes its writes. */
const PAUSE_MS = 3 * DEAD_AFTER_MS;
const PAUSE_AFTER_MS = 3_000;
/** The load goes on this long after the paused process continues. */
const AFTER_MS = 4_000;
/**
 * Pauses at most, until one left writes for the other process to complete: a pause finds none between its intent
 * and its operation now and then (1 run of 7 found none in 5, writes being faster).
 */
const PAUSES = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a server process paused for longer than processDeadAfterMillis while 20 clients write through it and another', function () {
  this.timeout(300_000);

  it('applies each write it had in flight once: the other completes them, and the paused one, continued, changes nothing by sending them again; every write is answered', () =>
    runWithEngineUp(async (dataDir, engine) => {
      // The objects' base URL: no process listens there, each is asked at its own address.
      const held = await holdPort();
      const config = {
        baseUrl: `http://127.0.0.1:${held.port}`,
        store: {
          backend: 'sparql' as const,
          sparql: { ...engineSettings(engine), sharedWriters: true, processDeadAfterMillis: DEAD_AFTER_MS },
        },
      };
      const processes: ServerProcess[] = [];
      let load: ChangeLoad | undefined;
      try {
        const { ports, token } = await startProcesses(dataDir, [config, config], processes);
        const servers = ports.map((port) => direct(`http://127.0.0.1:${port}`, token));
        const [paused, other] = processes;
        const objects = await Promise.all(Array.from({ length: OBJECTS }, () => createObject(servers[1])));

        load = startChangeLoad((i, n) => servers[(i + n) % servers.length], objects, CLIENTS);
        await sleep(PAUSE_AFTER_MS);
        // A pause leaves writes stored and not applied when one was between its intent and its operation: paused
        // again until the other process completed some.
        const completions = () => other.log.filter((line) => /completed \d+ write\(s\) left by/.test(line));
        let pauses = 0;
        while (pauses < PAUSES && completions().length === 0) {
          pauses++;
          paused.signal('SIGSTOP');
          await sleep(PAUSE_MS);
          paused.signal('SIGCONT');
          await sleep(AFTER_MS);
        }
        await load.stop();

        expect(load.faults, 'answers').to.deep.equal([]);
        // On a failure: how the changes were answered, and what each process logged last.
        const statuses = new Map<number, number>();
        for (const { status } of load.sent) statuses.set(status, (statuses.get(status) ?? 0) + 1);
        expect(
          completions(),
          `writes of the paused process completed by the other, after ${pauses} pause(s); changes answered ` +
            `${JSON.stringify([...statuses])}; the other's log:\n${other.log.slice(-20).join('\n')}\nthe paused ` +
            `one's:\n${paused.log.slice(-20).join('\n')}`,
        ).to.not.deep.equal([]);

        const accepted = await acceptedChanges(servers[1], load.sent);
        expect(accepted.size).to.be.greaterThan(CLIENTS);
        const outcomes = { accepted, unanswered: load.unanswered };
        // Every accepted change applied once, with a revision each, through each process, which tell the same trail.
        await expectEachAppliedOnceEverywhere(servers, objects, load.sent, outcomes);
      } finally {
        for (const p of processes) p.signal('SIGCONT');
        await load?.stop();
        await held.release();
        for (const p of processes) await p.stop('SIGTERM');
      }
    }));
});
