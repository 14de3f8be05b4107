import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { guardedLookup, isPublicAddress, OutboundRefusedError } from './address-guard.js';

export interface OutboundOptions {
  /** Allow loopback, private, link-local and metadata addresses (tests, local demos). */
  allowPrivateAddresses: boolean;
  /** Time to establish the connection (TCP and TLS). */
  connectTimeoutMs: number;
  /** Time for the whole exchange, from the start to the last byte of the answer. */
  timeoutMs: number;
}

export interface OutboundRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Why an outbound call failed before an answer came (timeouts, connection errors, refusal). */
export class OutboundError extends Error {
  constructor(
    readonly code: 'outbound_address_refused' | 'outbound_connect_timeout' | 'outbound_timeout' | 'outbound_failed' | 'outbound_answer_too_large',
    message: string,
  ) {
    super(message);
  }
}

/** Answers larger than this are cut off (a subscriber's answer to a notification is tiny). */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Every HTTP call this server makes to another party. Redirects are never followed (a 3xx is
 * handed back as it is); the connection and the whole exchange have their own time limits; unless
 * allowed, the address connected to must be public (checked after DNS, on the address itself).
 */
export class OutboundClient {
  constructor(private readonly options: OutboundOptions) {}

  /**
   * Why `url` may not be called (not http(s), or only refused addresses behind its name), or
   * undefined. A name that does not resolve now is not refused: calls to it retry.
   */
  async refusal(url: string): Promise<string | undefined> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return `not a URL: ${url}`;
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return `only http and https URLs are called: ${url}`;
    if (this.options.allowPrivateAddresses) return undefined;
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(host) !== 0 ? [host] : await lookup(host, { all: true }).then((found) => found.map((a) => a.address), () => []);
    if (addresses.length > 0 && !addresses.some(isPublicAddress)) {
      return `${host} resolves to ${addresses.join(', ')}: loopback, private, link-local and metadata addresses are not called (outbound.allowPrivateAddresses)`;
    }
    return undefined;
  }

  request(url: string, init: OutboundRequest): Promise<OutboundResponse> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.reject(new OutboundError('outbound_failed', `not a URL: ${url}`));
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.reject(new OutboundError('outbound_failed', `only http and https URLs are called: ${url}`));
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (!this.options.allowPrivateAddresses && isIP(host) !== 0 && !isPublicAddress(host)) {
      return Promise.reject(new OutboundError('outbound_address_refused', `${host} is a loopback, private, link-local or metadata address (outbound.allowPrivateAddresses)`));
    }
    const requestOptions: RequestOptions = {
      method: init.method,
      headers: { ...init.headers, ...(init.body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(init.body)) }) },
      ...(this.options.allowPrivateAddresses ? {} : { lookup: guardedLookup as RequestOptions['lookup'] }),
    };
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      const fail = (error: OutboundError) => {
        if (settled) return;
        settled = true;
        clearTimeout(total);
        clearTimeout(connect);
        req.destroy();
        reject(error);
      };
      const req = send(target, requestOptions, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) fail(new OutboundError('outbound_answer_too_large', `the answer of ${target.origin} is larger than ${MAX_ANSWER_BYTES} bytes`));
          else chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(total);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (err) => fail(new OutboundError('outbound_failed', err.message)));
      });
      const total = setTimeout(() => fail(new OutboundError('outbound_timeout', `no complete answer from ${target.origin} within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
      const connect = setTimeout(() => fail(new OutboundError('outbound_connect_timeout', `no connection to ${target.origin} within ${this.options.connectTimeoutMs} ms`)), this.options.connectTimeoutMs);
      req.on('socket', (socket) => {
        const connected = () => clearTimeout(connect);
        if (!socket.connecting) connected();
        else socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', connected);
      });
      req.on('error', (err) => {
        if (err instanceof OutboundRefusedError) fail(new OutboundError('outbound_address_refused', err.message));
        else fail(new OutboundError('outbound_failed', `${target.origin}: ${err.message}`));
      });
      req.end(init.body);
    });
  }
}
