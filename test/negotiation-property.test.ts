import { expect } from 'chai';
import fc from 'fast-check';
import { HttpError } from '../src/errors.js';
import { apiVersion, negotiate, type Negotiated, type ResponseFormat } from '../src/http/negotiation.js';

/** What each format is served as, and the other names a client may ask for it by. */
const SERVED: Record<ResponseFormat, string> = {
  jsonld: 'application/ld+json',
  turtle: 'text/turtle',
  ntriples: 'application/n-triples',
};
const ALIASES: Record<ResponseFormat, string[]> = {
  jsonld: ['application/json'],
  turtle: ['application/x-turtle'],
  ntriples: [],
};

/** One element of a generated Accept, as structure: the oracle reads this, the server the text made of it. */
interface Element {
  range: string;
  /** The weight as written; undefined for none (q=1). */
  q?: string;
  version?: string;
  /** Another parameter, quoted with separators inside, to be skipped as a whole. */
  profile?: boolean;
}

const VALID_Q = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;

/** How specifically `range` (lower case) names `format`: 3 its own name, 2 `type/*` of its type, 1 `*\/*`, else 0. */
function specificity(range: string, format: ResponseFormat): number {
  if (range === SERVED[format] || ALIASES[format].includes(range)) return 3;
  if (range === `${SERVED[format].split('/')[0]}/*`) return 2;
  return range === '*/*' ? 1 : 0;
}

/** RFC 9110 12.5.1 stated plainly over the structure: the expected answer, or 406. */
function expected(elements: Element[], offered: ResponseFormat[]): Negotiated | 406 {
  if (elements.length === 0) return { format: offered[0], version: apiVersion(undefined) };
  const valid = elements.filter((e) => e.q === undefined || VALID_Q.test(e.q));
  let best: { format: ResponseFormat; q: number; version?: string } | undefined;
  for (const format of offered) {
    const level = Math.max(0, ...valid.map((e) => specificity(e.range.toLowerCase(), format)));
    if (level === 0) continue;
    const deciding = valid.filter((e) => specificity(e.range.toLowerCase(), format) === level);
    const q = Math.max(...deciding.map((e) => Number(e.q ?? '1')));
    const first = deciding.find((e) => Number(e.q ?? '1') === q)!;
    if (q > 0 && (!best || q > best.q)) best = { format, q, version: first.version };
  }
  return best ? { format: best.format, version: apiVersion(best.version) } : 406;
}

const caseOf = (text: string, upper: boolean[]) =>
  [...text].map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c)).join('');

const rangeArb = fc
  .tuple(
    fc.constantFrom(
      'application/ld+json',
      'application/json',
      'text/turtle',
      'application/x-turtle',
      'application/n-triples',
      'text/*',
      'application/*',
      '*/*',
      'image/*',
      'text/html',
      'image/png',
      'application/xml',
      'text/plain',
    ),
    fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
  )
  .map(([range, upper]) => caseOf(range, upper));

const qArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('0', '0.0', '0.001', '0.1', '0.5', '0.50', '0.999', '1', '1.0', '1.000', '0.', '1.'),
  },
  { weight: 1, arbitrary: fc.constantFrom('2', '1.5', '-1', 'abc', '0.1234', '', '.5', '1.001') },
);

const elementArb: fc.Arbitrary<Element> = fc.record(
  {
    range: rangeArb,
    q: qArb,
    version: fc.constantFrom('2.0.0', '2.1.0', '2.2.0', '2.3.0', '9.9.9'),
    profile: fc.boolean(),
  },
  { requiredKeys: ['range'] },
);

/** The element as a client may write it: parameters in either order, spaces around `;`, `Q` or `q`. */
const written = (e: Element, spaced: boolean, upperQ: boolean): string => {
  const sep = spaced ? ' ; ' : ';';
  const params = [
    ...(e.version ? [`version=${e.version}`] : []),
    ...(e.profile ? ['profile="a,b;q=0"'] : []),
    ...(e.q !== undefined ? [`${upperQ ? 'Q' : 'q'}=${e.q}`] : []),
  ];
  return [e.range, ...params].join(sep);
};

const offeredArb = fc.constantFrom<ResponseFormat[]>(
  ['jsonld', 'turtle', 'ntriples'],
  ['jsonld'],
  ['turtle'],
  ['turtle', 'jsonld'],
);

function answer(accept: string | undefined, offered: ResponseFormat[]): Negotiated | 406 {
  try {
    return negotiate(accept, offered);
  } catch (error) {
    if (error instanceof HttpError && error.status === 406) return 406;
    throw error;
  }
}

describe('content negotiation follows RFC 9110 12.5.1 (fast-check)', () => {
  it('any Accept gets the acceptable format of highest q, ties to the server order, or 406', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(elementArb, fc.boolean(), fc.boolean()), { maxLength: 6 }),
        offeredArb,
        (parts, offered) => {
          const elements = parts.map(([e]) => e);
          const accept = parts.map(([e, spaced, upperQ]) => written(e, spaced, upperQ)).join(', ');
          expect(answer(accept, offered), accept).to.deep.equal(expected(elements, offered));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('examples: wildcards, q=0, case, invalid weights, no Accept', () => {
    const cases: [string | undefined, ResponseFormat | 406][] = [
      ['text/*', 'turtle'],
      ['application/ld+json;q=0, */*;q=0.1', 'turtle'],
      ['application/ld+json;q=0, application/n-triples;q=0.2, text/turtle;q=0.1', 'ntriples'],
      ['*/*;q=0', 406],
      ['*/*, application/ld+json;q=0, text/turtle;q=0, application/n-triples;q=0', 406],
      ['application/*;q=0.5, text/*', 'turtle'],
      ['TEXT/Turtle', 'turtle'],
      ['text/turtle;Q=0.5, application/n-triples;q=0.4', 'turtle'],
      ['text/turtle;q=2', 406],
      ['text/turtle;q=0.1234, */*;q=0.5', 'jsonld'],
      ['text/html, image/png', 406],
      [undefined, 'jsonld'],
      [' , ', 'jsonld'],
    ];
    for (const [accept, format] of cases) {
      const got = answer(accept, ['jsonld', 'turtle', 'ntriples']);
      expect(got === 406 ? 406 : got.format, String(accept)).to.equal(format);
    }
    const versioned = negotiate('application/ld+json;version=2.1.0;q=0.5, text/turtle;q=0.4');
    expect(versioned).to.deep.equal({ format: 'jsonld', version: '2.1.0' });
    const quoted = negotiate('application/ld+json;profile="x,y";version="2.2.0"');
    expect(quoted).to.deep.equal({ format: 'jsonld', version: '2.2.0' });
  });
});
