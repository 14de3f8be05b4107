import { z } from 'zod';
import { integer } from './fields.js';

/** The settings of reading: caches, data-model validation and the SPARQL endpoint. */
export const querySettings = {
  cache: z
    .strictObject({
      serializedRevisionBytes: integer(0)
        .default(64 * 1024 * 1024)
        .meta({
          description:
            'bytes of serialised object bodies (GET answers without `at` or `embedded`) kept in memory; an ' +
            "object's are dropped when it gets a new revision",
        }),
      objectBytes: integer(1)
        .default(64 * 1024 * 1024)
        .meta({
          description:
            'with `store.backend: sparql`: bytes of memory for the Logistics Objects a process keeps (creator and ' +
            'latest revision, about 300 bytes each), those read or written last; the others are read from the ' +
            'engine. The embedded store keeps every object',
        }),
      verifiedTokens: integer(1).default(10_000).meta({ description: 'verified tokens kept until they expire' }),
      events: integer(1)
        .default(100_000)
        .meta({
          description:
            "Logistics Events whose metadata (for event lists' filters, order and paging) is kept in memory, " +
            'those of the objects whose events were read or written last; the others are read from the store',
        }),
    })
    .prefault({}),
  validation: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .meta({
          description:
            'check every write against the SHACL shapes under `shapes/` (see "Data-model validation"); ' +
            '`false` only for benchmarks',
        }),
      strict: z.boolean().default(false).meta({ description: 'also refuse properties the ontologies do not declare' }),
    })
    .prefault({}),
  sparql: z
    .strictObject({
      timeBudgetMillis: integer(1)
        .default(30_000)
        .meta({
          description:
            'time one SPARQL query may run; past it the query worker is stopped and replaced, and the query ' +
            'answers 503',
        }),
      maxRows: integer(1)
        .default(100_000)
        .meta({
          description:
            'rows of a SELECT answer (triples of a CONSTRUCT/DESCRIBE answer); more are cut off and ' + 'flagged',
        }),
      freshnessWaitMillis: integer(0)
        .default(1000)
        .meta({
          description:
            'longest a SPARQL query waits for the query replica to hold every write acknowledged before it; ' +
            'then it answers from what the replica holds, with the `SPARQL-Replica-Lag` header saying how far ' +
            'behind',
        }),
      openToPartners: z
        .boolean()
        .default(false)
        .meta({ description: 'let callers other than internal actors query `/sparql`, over what they may read' }),
      historyMaxQuads: integer(0)
        .default(1_000_000)
        .meta({
          description:
            'quads of history (whole revisions before the latest, with their metadata; decided action ' +
            'requests) the SPARQL replica holds for the `revisions` and `audit` views, newest first; older ' +
            'history stays in the archive',
        }),
      memoryLimitBytes: integer(1, 2 ** 32)
        .default(2 ** 32)
        .meta({
          description:
            'WebAssembly memory the SPARQL replica may grow to (its data, and 256 MB kept free for queries; 4 ' +
            'GiB at most): past it the replica is full (see "SPARQL", Memory)',
        }),
      replicaIdleMillis: integer(0)
        .default(600_000)
        .meta({
          description:
            'time without a SPARQL query after which the query replica is stopped, so that writes no longer ' +
            'feed it; the next query starts it again and waits for its copy of the store (docs/sparql.md). ' +
            '`0`: it starts with the server and is never stopped',
        }),
      maxWaiting: integer(0)
        .default(32)
        .meta({
          description:
            'SPARQL queries that may wait for their turn (callers take turns); past it 503 with `Retry-After` ' +
            '(docs/sparql.md, "Limits")',
        }),
      maxWaitingPerCaller: integer(0)
        .default(8)
        .meta({
          description:
            'of those, queries one caller may have waiting; past it 429 with `Retry-After`, so that one ' +
            'caller cannot fill the queue',
        }),
    })
    .prefault({}),
};
