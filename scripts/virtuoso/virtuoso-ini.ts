import { join } from 'node:path';

export interface VirtuosoIniOptions {
  dir: string;
  httpPort: number;
  sqlPort: number;
  /** Memory for Virtuoso's page buffers. */
  bufferMemoryMb: number;
}

/** Virtuoso's own sizing table: 170,000 buffers (8 KiB pages) per 2 GB given to it; 3/4 of them may be dirty. */
const BUFFERS_PER_MB = 85;

/** A virtuoso.ini keeping every file of the instance under `dir` and listening on loopback only. */
export function virtuosoIni({ dir, httpPort, sqlPort, bufferMemoryMb }: VirtuosoIniOptions): string {
  const buffers = Math.max(2_000, bufferMemoryMb * BUFFERS_PER_MB);
  const file = (name: string) => join(dir, name);
  return `; Written by scripts/virtuoso: rewritten at each start.
[Database]
DatabaseFile       = ${file('virtuoso.db')}
ErrorLogFile       = ${file('virtuoso.log')}
LockFile           = ${file('virtuoso.lck')}
TransactionFile    = ${file('virtuoso.trx')}
xa_persistent_file = ${file('virtuoso.pxa')}
ErrorLogLevel      = 7
FileExtend         = 200
MaxCheckpointRemap = 2000
Striping           = 0
TempStorage        = TempDatabase

[TempDatabase]
DatabaseFile       = ${file('virtuoso-temp.db')}
TransactionFile    = ${file('virtuoso-temp.trx')}
MaxCheckpointRemap = 2000
Striping           = 0

[Parameters]
ServerPort           = 127.0.0.1:${sqlPort}
DisableUnixSocket    = 1
MaxClientConnections = 20
CheckpointInterval   = 60
CaseMode             = 2
; the bulk loader (ld_dir) and file_to_string read only from these directories
DirsAllowed          = ., ${dir}
NumberOfBuffers      = ${buffers}
MaxDirtyBuffers      = ${Math.floor((buffers * 3) / 4)}
; a ceiling, not an allocation: at 200M (the buffers of a test instance) Virtuoso logged "Low query
; memory limit" in every run of three server processes writing at once (and in such runs it stopped
; answering, now and then: not shown to be the cause)
MaxQueryMem          = ${Math.max(1024, Math.min(2048, bufferMemoryMb))}M
ThreadsPerQuery      = 2
; Virtuoso's own virtuoso.ini has VectorSize = 1000; without it each query and update sets up vectors of 10,000
; rows, a fixed cost that was about half a small update's CPU (docs/sparql-engine.md, "Write cost"); AdjustVectorSize
; lets a large query grow its vectors again
VectorSize           = 1000
AdjustVectorSize     = 1
; an ordered /sparql query has LIMIT sparql.maxRows + 1: Virtuoso refuses ORDER BY with a LIMIT
; past this (SR353, 10,000 by default), whatever the result holds
MaxSortedTopRows     = 100000000

[HTTPServer]
ServerPort           = 127.0.0.1:${httpPort}
ServerRoot           = ${dir}
MaxClientConnections = 40
ServerThreads        = 40
MaxKeepAlives        = 40
KeepAliveTimeout     = 10
Charset              = UTF-8
EnabledGzipContent   = 0

[SPARQL]
; Virtuoso cuts larger results silently: make the cap far above any answer the server reads
ResultSetMaxRows           = 100000000
; 0: no limit. A positive MaxQueryExecutionTime makes Virtuoso answer PARTIAL results ("anytime
; queries") with status 200; the client's own timeout is the limit instead.
MaxQueryExecutionTime      = 0
MaxQueryCostEstimationTime = 0
`;
}
