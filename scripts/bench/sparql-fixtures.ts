import { DEFAULTS } from '../../src/config.js';
import type { RunningServer } from '../../src/server.js';
import { parseBody } from '../../src/rdf/parse.js';
import { CARGO, CODE_LISTS } from '../../src/rdf/vocab.js';
import { BENCH_PIECE, addRevisions } from './fixtures.js';

const STATUS_CODE = 'https://onerecord.iata.org/ns/code-lists/StatusCode#';

const quads = (body: unknown) =>
  parseBody(Buffer.from(JSON.stringify(body)), 'jsonld', { base: 'http://bench.invalid/', limits: DEFAULTS.limits });

/**
 * The analytics data set: `objects` Logistics Objects (a Shipment per 4 Pieces), each with
 * `revisions` revisions, a DEP event for three pieces in four and an RCS event for every piece,
 * spread over 30 days. Written through the domain, as requests would; `lastEvent` is the last write.
 */
export async function loadAnalyticsData(
  server: RunningServer,
  objects: number,
  revisions: number,
): Promise<{ piece: string; lastEvent: string }> {
  const { objects: los, events, holder } = server.services;
  const caller = { agent: holder, internal: true };
  const day = (i: number) => `2024-05-${String(1 + (i % 30)).padStart(2, '0')}T10:00:00Z`;
  const event = (code: string, i: number) => ({
    '@context': { cargo: CARGO },
    '@type': 'cargo:LogisticsEvent',
    'cargo:eventDate': { '@type': 'http://www.w3.org/2001/XMLSchema#dateTime', '@value': day(i) },
    'cargo:eventCode': { '@id': `${STATUS_CODE}${code}` },
  });
  let firstPiece = '';
  let lastEvent = '';
  for (let s = 0; s < objects / 5; s++) {
    const pieces: string[] = [];
    for (let p = 0; p < 4; p++) {
      const body = {
        ...BENCH_PIECE,
        'cargo:grossWeight': {
          '@type': 'cargo:Value',
          'cargo:unit': { '@id': `${CODE_LISTS}MeasurementUnitCode#KGM` },
          'cargo:numericalValue': { '@value': String(5 + ((s * 4 + p) % 50)), '@type': 'xsd:double' },
        },
      };
      const created = await los.create(await quads(body), caller);
      pieces.push(created.iri);
    }
    const shipment = await los.create(
      await quads({
        '@context': { cargo: CARGO },
        '@type': 'cargo:Shipment',
        'cargo:goodsDescription': `shipment ${s}`,
        'cargo:pieces': pieces.map((p) => ({ '@id': p })),
      }),
      caller,
    );
    for (const iri of [...pieces, shipment.iri]) await addRevisions(server.store, los, iri, holder, revisions - 1);
    for (const [i, piece] of pieces.entries()) {
      const entry = los.index.get(piece)!;
      if (i < 3) await events.create(entry, await quads(event('DEP', s + i)), caller);
      lastEvent = (await events.create(entry, await quads(event('RCS', s + i)), caller)).iri;
    }
    firstPiece ||= pieces[0];
  }
  return { piece: firstPiece, lastEvent };
}
