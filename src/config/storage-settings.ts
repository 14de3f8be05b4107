import { z } from 'zod';
import { httpUrl, integer } from './fields.js';

/** The settings of where data is kept: the journal, the embedded store or a SPARQL engine. */
export const storageSettings = {
  journal: z
    .strictObject({
      snapshotAfterBytes: integer(1)
        .default(64 * 1024 * 1024)
        .meta({
          description:
            'journal size that triggers a snapshot, once the journal is also as large as the last snapshot or ' +
            'reaches `journal.maxReplayBytes`',
        }),
      maxReplayBytes: integer(1)
        .default(96 * 1024 * 1024)
        .meta({
          description:
            'journal size that triggers a snapshot (once past `journal.snapshotAfterBytes`) even when the ' +
            'last snapshot is larger, so that a start after a crash replays at most about this much journal ' +
            '(measured: 96 MB in ~5 s at 100,000 objects) on top of reading the memory image or the snapshot; ' +
            'each such snapshot rewrites the whole store (see "Durability")',
        }),
      fsync: z
        .boolean()
        .default(true)
        .meta({ description: 'fsync each commit; `false` gives up durability (benchmarks only)' }),
    })
    .prefault({}),
  store: z
    .strictObject({
      backend: z
        .enum(['embedded', 'sparql'])
        .default('embedded')
        .meta({
          description:
            '`embedded`: the data directory (journal, snapshots, archive, embedded Oxigraph); `sparql`: a ' +
            'SPARQL 1.1 engine reached at `store.sparql.*` keeps all data (docs/sparql-engine.md)',
        }),
      sparql: z
        .strictObject({
          queryUrl: httpUrl
            .optional()
            .meta({ description: "with `store.backend: sparql`: the engine's SPARQL query endpoint" }),
          updateUrl: httpUrl.optional().meta({
            description: "with `store.backend: sparql`: the engine's SPARQL update endpoint (often the same " + 'URL)',
          }),
          user: z.string().min(1).optional().meta({ description: 'user for HTTP authentication at the engine' }),
          password: z.string().optional().meta({ description: 'its password' }),
          authScheme: z
            .enum(['basic', 'digest'])
            .default('digest')
            .meta({ description: 'HTTP authentication scheme with `user`/`password`' }),
          token: z
            .string()
            .min(1)
            .optional()
            .meta({ description: 'bearer token for the engine, instead of a user and password' }),
          timeoutMs: integer(1)
            .default(30_000)
            .meta({ description: 'time one request to the engine may take; past it the request answers 503' }),
          sharedWriters: z
            .boolean()
            .default(false)
            .meta({
              description:
                'other server processes write to the same engine (several behind a load balancer; Virtuoso ' +
                'only): the engine checks that a new object, a change or a decision fills a slot no other ' +
                'process filled or claims (409 otherwise), each commit is announced on a commit feed in the ' +
                'engine that every process follows, and a request waits until its process has seen every ' +
                'commit acknowledged before it arrived (`readYourWrites`; docs/sparql-engine.md, "Several ' +
                'processes"). Off: this process\'s own claims decide, without the cost',
            }),
          readYourWrites: z
            .boolean()
            .default(true)
            .meta({
              description:
                'with `sharedWriters`: a request waits until its process has read the commit feed once after ' +
                'the request arrived (every write acknowledged before, through any process, is then seen; ' +
                'costs the engine one small query per ~2 ms of requests per process). Off: a process may ' +
                'answer from what it knew up to `feedPollMillis` ago (with a balancer that keeps each client ' +
                'on one process, a client still reads its own writes)',
            }),
          feedPollMillis: integer(1).default(50).meta({
            description:
              'with `sharedWriters`: how often a process reads the commit feed for the commits of the others',
          }),
          feedGapWaitMillis: integer(1)
            .default(1_000)
            .meta({
              description:
                'with `sharedWriters`: how long a feed position not filled yet holds back the commits after ' +
                'it, before it is taken for an operation the engine rolled back and skipped',
            }),
          outboxGapWaitMillis: integer(0)
            .default(5_000)
            .meta({
              description:
                'with `sharedWriters`: how long the delivering process waits for a notification another ' +
                'process numbered before those it has (a write still under way), before it sends the later ' +
                'ones; should it come after, it is sent then, out of order',
            }),
          processDeadAfterMillis: integer(100)
            .default(10_000)
            .meta({
              description:
                'with `sharedWriters`: each process records every fifth of this that it is alive; one not ' +
                'seen for this long is taken for dead, and the others complete the writes it had stored but ' +
                'not applied (until then they hold what those writes change: a change of that revision ' +
                'answers 409)',
            }),
          deliveryLeaseMillis: integer(100)
            .default(10_000)
            .meta({
              description:
                'with `sharedWriters`: one process at a time delivers each group of notification queues ' +
                '(`deliveryGroups`), holding its lease in the engine for terms of this length, renewed halfway ' +
                'through; when it dies another takes ' +
                "over within 1.5 terms (the processes' clocks must agree within a quarter term, at most 1 s)",
            }),
          deliveryGroups: integer(1)
            .default(12)
            .meta({
              description:
                'with `sharedWriters`: the delivery queues are hashed into this many groups, each delivered ' +
                'by one process at a time under a lease of its own; each process takes up to its fair share ' +
                'of the groups (the groups divided by the live processes, rounded up). 1: one process ' +
                'delivers every notification',
            }),
          feedRetentionMinutes: integer(1)
            .default(30)
            .meta({
              description:
                'with `sharedWriters`: feed entries older than this are removed; longer than any process ' +
                'takes to start (it follows the feed from when it began reading the engine)',
            }),
        })
        .prefault({}),
      capacityQuads: integer(1)
        .default(8_000_000)
        .meta({
          description:
            'quads the store may hold; a write that would pass it is refused with 507 and reads go on (see ' +
            '"Capacity")',
        }),
      memoryReserveBytes: integer(0, 2 ** 32 - 1)
        .default(512 * 1024 * 1024)
        .meta({
          description:
            "WASM memory (4 GiB in all) kept free for queries, snapshots and the growth of Oxigraph's tables: " +
            'a write that would cut into it is refused with 507, and a data directory that cannot load with ' +
            'half of it free stops the start',
        }),
      compactAfterDeletedQuads: integer(0)
        .default(100_000)
        .meta({
          description:
            'quads deleted since the last compaction from which the store is compacted (copied into a fresh ' +
            'WASM memory while it serves: Oxigraph never reuses the memory of deleted quads), once they are ' +
            'also half the quads held, or a tenth when the memory is nearly full; 0: never (see "Capacity")',
        }),
      memoryImage: z
        .boolean()
        .default(true)
        .meta({
          description:
            "write the hot index's WASM memory to `index.image` in the data directory (as large as that " +
            'memory) at each snapshot (see `store.imageAtSnapshot`) and on a clean stop, so that a start ' +
            'reads it back instead of loading the snapshot, then replays the journal after it; a start takes ' +
            'it only if it reflects the newest snapshot (see "Capacity")',
        }),
      imageAtSnapshot: z
        .boolean()
        .default(true)
        .meta({
          description:
            'with `store.memoryImage`, write the image at every snapshot too, so that a start after a crash ' +
            'reads it: the request thread then waits while the memory is copied at the snapshot (~0.07 s a GB ' +
            'here), and the copy takes as much memory until it is written; false: only a clean stop writes ' +
            'one',
        }),
      memoryImageMinQuads: integer(0)
        .default(250_000)
        .meta({
          description:
            'the fewest quads the store must hold for `store.memoryImage` to write an image (at a snapshot or ' +
            'a clean stop): below it a start loads the snapshot in about a second, while an image reads and ' +
            "writes the whole WASM memory, at least `store.memoryReserveBytes` (an empty store's 0.6 GB took " +
            '2 s on a 2-core test machine); 0: at any size',
        }),
    })
    .prefault({}),
};
