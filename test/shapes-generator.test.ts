import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { generateShapes, readOntologies } from '../scripts/generate-shapes.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

describe('Shapes generated from the ontologies', () => {
  const generated = generateShapes(readOntologies());

  for (const [path, text] of Object.entries(generated.files)) {
    it(`${path} is what \`npm run shapes\` writes from ontology/ (rerun it after changing the ontologies or the generator)`, () => {
      expect(readFileSync(`${REPO}${path}`, 'utf8') === text, `${path} is stale: run npm run shapes`).to.equal(true);
    });
  }

  it('reports the three "[-9]+" patterns instead of enforcing them, and enforces the sound one (anchored)', () => {
    const typos = generated.reports.filter((r) => r.includes('"[-9]+"'));
    expect(typos.map((r) => `${r.split(':')[0]}:${r.split(':')[1]}`)).to.deep.equal([
      'cargo:iataCargoAgentCode',
      'cargo:iataCargoAgentLocationIdentifier',
      'cargo:prefix',
    ]);
    const shapes = generated.files['shapes/onerecord-shapes.ttl'];
    expect(shapes).not.to.include('[-9]+');
    expect(shapes).to.include('sh:pattern "^(?:[A-Z0-9]+)$"');
  });

  it('turns notifyRequestStatusChange "exactly once" into "at most once" with the spec default false', () => {
    const shapes = generated.files['shapes/onerecord-shapes.ttl'];
    const change = /^shapes:api-Change-api-notifyRequestStatusChange ([^.]*)\./m.exec(shapes)![1];
    expect(change)
      .to.include('sh:maxCount 1')
      .and.to.include('sh:defaultValue false')
      .and.not.to.include('sh:minCount');
    expect(generated.reports.filter((r) => r.includes('notifyRequestStatusChange'))).to.have.length(4);
  });

  it('maps maxCardinality to sh:maxCount only (no minimum), and allValuesFrom narrower than the range to the class shape', () => {
    const shapes = generated.files['shapes/onerecord-shapes.ttl'];
    expect(/^shapes:cargo-Piece-cargo-goodsDescription ([^.]*)\./m.exec(shapes)![1].trim()).to.equal(
      'sh:path cargo:goodsDescription ;\n    sh:maxCount 1',
    );
    // StatusUpdateEvent restricts eventFor (range LogisticsObject) to Shipment.
    expect(/^shapes:cargo-StatusUpdateEvent-cargo-eventFor ([^.]*)\./m.exec(shapes)![1]).to.include(
      'sh:class cargo:Shipment',
    );
  });
});
