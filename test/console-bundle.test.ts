import { expect } from 'chai';
import { runInThisContext } from 'node:vm';
import { bundleModules } from '../src/http/console-bundle.js';

/** Runs a module as the browser would: a module of its own. */
const runModule = async (text: string): Promise<Record<string, unknown>> =>
  (await import(`data:text/javascript,${encodeURIComponent(text)}`)) as Record<string, unknown>;

describe('console bundle (the landing modules as one script in the page)', () => {
  const sources = new Map([
    [
      'main.js',
      "import { twice } from './math.js';\nimport { label } from './text.js';\nconst local = 'main';\nglobalThis.shown = label(twice(21)) + local;\nglobalThis.later = () => import('./later.js');\n",
    ],
    ['math.js', "const local = 'math';\nexport const twice = (n) => n * 2;\nexport { local as unused };\n"],
    [
      'text.js',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: module source text with a template literal in it
      "import { twice } from './math.js';\nconst local = 'text';\nexport function label(n) {\n  return `${local}:${n}:${twice(1)}:`;\n}\n",
    ],
    ['later.js', "import { label } from './text.js';\nexport const later = label(0);\n"],
  ]);

  it('runs each module once, imports first, with its top-level names apart; keeps what they export for the modules loaded later', async () => {
    // `export { local as unused }` is a form the bundle does not read: left out of this case.
    const readable = new Map(sources).set('math.js', "const local = 'math';\nexport const twice = (n) => n * 2;\n");
    const { text, reExports } = bundleModules('main.js', readable, './console/assets/v1/');
    expect(text.indexOf("bundled['math.js']")).to.be.lessThan(text.indexOf("bundled['text.js']"));
    // A classic script: no import or export statement; its top-level names stay in it.
    expect(text).to.not.match(/^(import|export)\b/m);
    runInThisContext(text);
    const global = globalThis as {
      shown?: string;
      local?: unknown;
      later?: unknown;
      consoleModules?: Record<string, Record<string, unknown>>;
    };
    expect(global.shown).to.equal('text:42:2:main');
    expect(global.local).to.equal(undefined);
    expect(Object.keys(global.consoleModules!).sort()).to.deep.equal(['main.js', 'math.js', 'text.js']);
    expect(global.consoleModules!['math.js'].twice).to.be.a('function');
    // A module loaded later is named with the folder the modules are served from; it is not in the script.
    expect(text).to.contain(`import("./console/assets/v1/later.js")`);
    expect(text).to.not.contain("bundled['later.js']");
    // Modules outside the script import the ones in it from modules that export what the script kept: the same instances.
    expect([...reExports.keys()].sort()).to.deep.equal(['math.js', 'text.js']);
    const textModule = await runModule(reExports.get('text.js')!);
    expect(textModule.label).to.equal(global.consoleModules!['text.js'].label);
    for (const name of ['shown', 'later', 'consoleModules'] as const) delete global[name];
  });

  it('refuses what it cannot bundle faithfully, when the server starts', () => {
    const bundle = (modules: Map<string, string>) => bundleModules('main.js', modules, './');
    expect(() => bundle(sources)).to.throw(/math\.js has an import or export the bundle does not read/);
    const missing = new Map([
      ['main.js', "import { nothing } from './text.js';\n"],
      ['text.js', 'export const something = 1;\n'],
    ]);
    expect(() => bundle(missing)).to.throw(/main\.js imports nothing, which text\.js does not export/);
    const cycle = new Map([
      ['main.js', "import { a } from './a.js';\nexport const b = 1;\n"],
      ['a.js', "import { b } from './main.js';\nexport const a = b;\n"],
    ]);
    expect(() => bundle(cycle)).to.throw(/cycle/);
    expect(() => bundle(new Map([['main.js', "import { a } from './gone.js';\n"]]))).to.throw(
      /gone\.js is imported but not in/,
    );
    expect(() => bundle(new Map([['main.js', "const page = () => import('./gone.js');\n"]]))).to.throw(
      /main\.js loads gone\.js, which is not in/,
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a module's source text, importing a computed path.
    expect(() => bundle(new Map([['main.js', 'const page = (name) => import(`./${name}`);\n']]))).to.throw(
      /main\.js has an import or export the bundle does not read/,
    );
  });
});
