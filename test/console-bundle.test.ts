import { expect } from 'chai';
import { bundleModules } from '../src/http/console-bundle.js';

/** Runs a bundle as the browser would: a module of its own. */
const run = async (text: string): Promise<Record<string, unknown>> => (await import(`data:text/javascript,${encodeURIComponent(text)}`)) as Record<string, unknown>;

describe('console bundle (the landing modules as one module)', () => {
  const sources = new Map([
    ['main.js', "import { twice } from './math.js';\nimport { label } from './text.js';\nconst local = 'main';\nglobalThis.shown = label(twice(21)) + local;\n"],
    ['math.js', "const local = 'math';\nexport const twice = (n) => n * 2;\nexport { local as unused };\n"],
    ['text.js', "import { twice } from './math.js';\nconst local = 'text';\nexport function label(n) {\n  return `${local}:${n}:${twice(1)}:`;\n}\n"],
    ['later.js', "import { label } from './text.js';\nexport const later = label(0);\n"],
  ]);

  it('runs each module once, imports first, with its top-level names apart; exports what they export', async () => {
    // `export { local as unused }` is a form the bundle does not read: left out of this case.
    const readable = new Map(sources).set('math.js', "const local = 'math';\nexport const twice = (n) => n * 2;\n");
    const { text, reExports } = bundleModules('main.js', readable);
    expect(text.indexOf("bundled['math.js']")).to.be.lessThan(text.indexOf("bundled['text.js']"));
    const bundle = await run(text);
    expect((globalThis as { shown?: string }).shown).to.equal('text:42:2:main');
    expect(Object.keys(bundle).sort()).to.deep.equal(['label', 'twice']);
    // Modules outside the bundle import the bundled ones from the bundle, by re-exports.
    expect([...reExports.keys()].sort()).to.deep.equal(['math.js', 'text.js']);
    expect(reExports.get('text.js')).to.contain("export { label } from './main.js';");
    expect(text).to.not.contain('later');
  });

  it('refuses what it cannot bundle faithfully, when the server starts', () => {
    expect(() => bundleModules('main.js', sources)).to.throw(/math\.js has an import or export the bundle does not read/);
    const missing = new Map([['main.js', "import { nothing } from './text.js';\n"], ['text.js', 'export const something = 1;\n']]);
    expect(() => bundleModules('main.js', missing)).to.throw(/main\.js imports nothing, which text\.js does not export/);
    const cycle = new Map([['main.js', "import { a } from './a.js';\nexport const b = 1;\n"], ['a.js', "import { b } from './main.js';\nexport const a = b;\n"]]);
    expect(() => bundleModules('main.js', cycle)).to.throw(/cycle/);
    const twice = new Map([['main.js', "import { a } from './a.js';\nexport const a2 = a;\nexport const same = 1;\n"], ['a.js', 'export const a = 1;\nexport const same = 2;\n']]);
    expect(() => bundleModules('main.js', twice)).to.throw(/both export same/);
    expect(() => bundleModules('main.js', new Map([['main.js', "import { a } from './gone.js';\n"]]))).to.throw(/gone\.js is imported but not in/);
  });
});
