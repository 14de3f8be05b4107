// HTTP Digest authentication, client side (RFC 7616): MD5 or SHA-256, qop "auth" or none. Virtuoso's
// /sparql-auth asks for it. Hand-written on node:crypto: the npm packages for it wrap their own
// fetch and bring their own hash libraries, and have no types.
import { createHash, randomBytes } from 'node:crypto';

export interface DigestChallenge {
  realm: string;
  nonce: string;
  opaque?: string;
  qop?: string;
  algorithm: 'MD5' | 'SHA-256';
}

const HASH = { MD5: 'md5', 'SHA-256': 'sha256' } as const;

/** The Digest challenge of a `WWW-Authenticate` header, if it holds one this client can answer. */
export function parseDigestChallenge(header: string | undefined): DigestChallenge | undefined {
  if (!header || !/^\s*digest\s/i.test(header)) return undefined;
  const params = new Map<string, string>();
  for (const [, name, quoted, bare] of header.matchAll(/([a-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/gi)) {
    params.set(name.toLowerCase(), quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare);
  }
  const realm = params.get('realm');
  const nonce = params.get('nonce');
  const algorithm = (params.get('algorithm') ?? 'MD5').toUpperCase();
  if (realm === undefined || nonce === undefined || (algorithm !== 'MD5' && algorithm !== 'SHA-256')) return undefined;
  const qops = params
    .get('qop')
    ?.split(',')
    .map((qop) => qop.trim());
  if (qops && !qops.includes('auth')) return undefined;
  return { realm, nonce, opaque: params.get('opaque'), qop: qops ? 'auth' : undefined, algorithm };
}

/**
 * One user's Digest credentials and the last challenge the server sent. Once a challenge is known,
 * each request carries an answer at once (with a new nonce count), so a large body is sent once.
 */
export class DigestCredentials {
  private challenge: DigestChallenge | undefined;
  private nonceCount = 0;

  constructor(
    private readonly user: string,
    private readonly password: string,
  ) {}

  get hasChallenge(): boolean {
    return this.challenge !== undefined;
  }

  accept(challenge: DigestChallenge): void {
    this.challenge = challenge;
    this.nonceCount = 0;
  }

  /** The `Authorization` header for a request; `uri` is the request target (path and query). */
  authorization(method: string, uri: string): string {
    const challenge = this.challenge;
    if (!challenge) throw new Error('no Digest challenge yet');
    const hash = (text: string) => createHash(HASH[challenge.algorithm]).update(text).digest('hex');
    const ha1 = hash(`${this.user}:${challenge.realm}:${this.password}`);
    const ha2 = hash(`${method}:${uri}`);
    const fields: [string, string, boolean][] = [
      ['username', this.user, true],
      ['realm', challenge.realm, true],
      ['nonce', challenge.nonce, true],
      ['uri', uri, true],
      ['algorithm', challenge.algorithm, false],
    ];
    if (challenge.qop) {
      this.nonceCount += 1;
      const nc = this.nonceCount.toString(16).padStart(8, '0');
      const cnonce = randomBytes(16).toString('hex');
      fields.push(['qop', challenge.qop, false], ['nc', nc, false], ['cnonce', cnonce, true]);
      fields.push(['response', hash(`${ha1}:${challenge.nonce}:${nc}:${cnonce}:${challenge.qop}:${ha2}`), true]);
    } else {
      fields.push(['response', hash(`${ha1}:${challenge.nonce}:${ha2}`), true]);
    }
    if (challenge.opaque !== undefined) fields.push(['opaque', challenge.opaque, true]);
    const quote = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;
    return `Digest ${fields.map(([name, value, quoted]) => `${name}=${quoted ? quote(value) : value}`).join(', ')}`;
  }
}
