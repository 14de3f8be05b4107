import type { SparqlJsonResults } from '../readers.js';
import { StoreFailedError, StoreUnavailableError } from '../errors.js';

export interface SparqlClientOptions {
  queryUrl: string;
  updateUrl: string;
  auth?: { user: string; password: string; scheme: 'basic' | 'digest' } | { token: string };
  timeoutMs: number;
}

/** The SPARQL 1.1 Protocol over HTTP: queries and updates sent as POST bodies. */
export class SparqlClient {
  constructor(private readonly options: SparqlClientOptions) {}

  async select(query: string): Promise<SparqlJsonResults> {
    const res = await this.post(this.options.queryUrl, 'query', query, 'application/sparql-results+json');
    return JSON.parse(res) as SparqlJsonResults;
  }

  update(text: string): Promise<string> {
    return this.post(this.options.updateUrl, 'update', text, '*/*');
  }

  private authorization(): string | undefined {
    const auth = this.options.auth;
    if (!auth) return undefined;
    if ('token' in auth) return `Bearer ${auth.token}`;
    if (auth.scheme === 'basic') return `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}`;
    throw new StoreFailedError('Digest authentication at the engine is not supported by this client yet');
  }

  /** Sent form-encoded (`query=` / `update=`), the one form of the protocol every engine takes (Virtuoso 7 ignores a direct POST body). */
  private async post(url: string, parameter: 'query' | 'update', request: string, accept: string): Promise<string> {
    const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded', Accept: accept };
    const body = new URLSearchParams({ [parameter]: request }).toString();
    const authorization = this.authorization();
    if (authorization) headers.Authorization = authorization;
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.options.timeoutMs) });
    } catch (err) {
      throw new StoreUnavailableError(`the SPARQL engine at ${url} did not answer: ${(err as Error).message}`);
    }
    const text = await res.text();
    if (res.status >= 500) throw new StoreUnavailableError(`the SPARQL engine at ${url} answered ${res.status}: ${text.slice(0, 500)}`);
    if (!res.ok) throw new StoreFailedError(`the SPARQL engine at ${url} refused the request (${res.status}): ${text.slice(0, 500)}`);
    return text;
  }
}
