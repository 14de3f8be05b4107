import { ApiFailure, readErrorAnswer } from './api-errors.js';

export interface SendOptions {
  accept?: string;
  contentType?: string;
  body?: string;
  query?: Record<string, string | undefined>;
}

/** The server could not be reached at all (no HTTP answer): nothing was refused, nothing went in. */
export class ServerUnreachable extends Error {}

/** Media types of the RDF answers the server gives, by the names `--format` takes. */
export const RDF_MEDIA_TYPES = {
  jsonld: 'application/ld+json',
  turtle: 'text/turtle',
  nt: 'application/n-triples',
} as const;
export type RdfFormat = keyof typeof RDF_MEDIA_TYPES;
export const RDF_FORMATS = Object.keys(RDF_MEDIA_TYPES) as RdfFormat[];

/** One server, one bearer token: every request of a remote command goes through here. */
export class ApiClient {
  private token: Promise<string> | undefined;

  /** `refreshable`: the token comes from a provider and may be fetched again once it expires (a long import). */
  constructor(
    readonly baseUrl: string,
    private readonly fetchToken: () => Promise<string>,
    private readonly refreshable = false,
  ) {}

  /** An object's IRI from an IRI or from the id after `/logistics-objects/`. */
  objectIri(reference: string): string {
    return this.resourceIri('logistics-objects', reference);
  }

  requestIri(reference: string): string {
    return this.resourceIri('action-requests', reference);
  }

  private resourceIri(collection: string, reference: string): string {
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(reference)
      ? reference
      : `${this.baseUrl}/${collection}/${encodeURIComponent(reference)}`;
  }

  /** The bearer token the requests carry (fetched at the first use). */
  bearerToken(): Promise<string> {
    this.token ??= this.fetchToken();
    return this.token;
  }

  /** Sends one request; any HTTP answer comes back, refusals included. */
  async send(method: string, target: string, options: SendOptions = {}): Promise<Response> {
    const token = this.bearerToken();
    const res = await this.sendWith(await token, method, target, options);
    if (res.status !== 401 || !this.refreshable) return res;
    if (this.token === token) this.token = this.fetchToken();
    return this.sendWith(await this.bearerToken(), method, target, options);
  }

  private async sendWith(token: string, method: string, target: string, options: SendOptions): Promise<Response> {
    const url = new URL(target.startsWith('/') ? `${this.baseUrl}${target}` : target);
    for (const [name, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(name, value);
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (options.accept) headers.Accept = options.accept;
    if (options.contentType) headers['Content-Type'] = options.contentType;
    try {
      return await fetch(url, { method, headers, body: options.body });
    } catch (err) {
      const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
      throw new ServerUnreachable(
        `cannot reach ${url.origin}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      );
    }
  }

  /** Sends one request and throws the server's api:Error unless the status is one of `expected`. */
  async expect(expected: number[], method: string, target: string, options: SendOptions = {}): Promise<Response> {
    const res = await this.send(method, target, options);
    if (!expected.includes(res.status)) throw new ApiFailure(await readErrorAnswer(res));
    return res;
  }

  /** The Location of a 201, which every creating route answers with (a ChangeRequest's too, to a PATCH). */
  async create(target: string, contentType: string, body: string, method: 'POST' | 'PATCH' = 'POST'): Promise<string> {
    const res = await this.expect([201], method, target, { contentType, body });
    return res.headers.get('location') ?? '';
  }
}
