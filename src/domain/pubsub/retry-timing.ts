/** The `Retry-After` of an answer in milliseconds (seconds or an HTTP date), if it has a usable one. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with full jitter: a random delay up to min(cap, initial × 2^(attempt - 1)). */
export function backoffMs(
  attempt: number,
  options: { initialBackoffMs: number; maxBackoffMs: number },
  random = Math.random,
): number {
  return Math.floor(
    random() * Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** Math.min(attempt - 1, 40)),
  );
}
