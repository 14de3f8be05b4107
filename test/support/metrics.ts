import { expect } from 'chai';

/** The metrics token the tests configure (`metrics.token`). */
export const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';

/** GET /metrics at `url` (with the metrics token unless `token` is undefined): the Prometheus exposition. */
export async function scrapeMetrics(url: string, token: string | undefined = METRICS_TOKEN): Promise<string> {
  const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  expect(res.status, await res.clone().text()).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/**
 * The value of one sample of `name` whose labels include `labels` as written in the exposition
 * (e.g. `view="latest",outcome="answered"`); throws when there is none.
 */
export function metricSample(text: string, name: string, labels = ''): number {
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith(`${name}${labels ? `{${labels}}` : ''} `) ||
        (labels && l.startsWith(`${name}{`) && l.includes(labels)),
    );
  if (!line) throw new Error(`no sample ${name}{${labels}} in:\n${text}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}
