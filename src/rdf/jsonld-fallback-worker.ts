import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { HttpError } from '../errors.js';
import { jsonLdToRawQuads, type ReadOptions } from './jsonld-reference.js';
import type { FallbackReply, FallbackRequest } from './jsonld-fallback.js';

/** The worker thread of JsonLdFallback: reads one document at a time with jsonld.js. */
const port = parentPort!;

// On Linux a thread has its own scheduling priority: at the lowest, a costly document takes
// only the CPU the request thread leaves (where this fails, the budget still bounds it).
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), constants.priority.PRIORITY_LOW);
} catch {
  // not Linux, or not allowed: runs at the process's priority
}
port.on('message', async ({ text, options }: FallbackRequest) => {
  let reply: FallbackReply;
  try {
    reply = { quads: await jsonLdToRawQuads(JSON.parse(text), options as ReadOptions) };
  } catch (err) {
    const error =
      err instanceof HttpError ? err : new HttpError(400, 'invalid_jsonld', { message: 'body is not valid JSON-LD' });
    reply = { error: { status: error.status, code: error.code, details: error.details } };
  }
  port.postMessage(reply);
});
port.postMessage('ready');
