/**
 * The console's landing modules as one classic script written into the page at start, so they run as the page is
 * parsed instead of being fetched first (no build step). Each runs in its own function, in import order; exports
 * go to `globalThis.consoleModules` so later pages importing `./api.js` share one instance. An import or export
 * form the console does not use stops the start rather than break the page.
 */

/** `import { a, b } from './name.js';`, a line of its own. */
const STATIC_IMPORT = /^import\s*\{([^}]*)\}\s*from\s*'\.\/([\w.-]+\.js)';[ \t]*$/gm;
/** `export { a, b };`, a line of its own. */
const EXPORT_LIST = /^export\s*\{([^}]*)\};?[ \t]*$/gm;
/** `export` before a declaration at the start of a line: removed; the lookahead captures the declared name. */
const EXPORTED_DECLARATION = /^export\s+(?=(?:async\s+function\*?|function\*?|class|const|let)\s+([\w$]+))/gm;
/** Where the script keeps each module's exports, for the modules loaded later. */
const MODULES_GLOBAL = 'consoleModules';
/** `import("./name.js")`, a module loaded when it is needed. */
const DYNAMIC_IMPORT = /\bimport\(\s*'\.\/([\w.-]+\.js)'\s*\)/g;
/** What is left of an `import` or `export` statement the forms above do not read, or an `import(` of another form. */
const UNREAD_STATEMENT = /^(?:import\s*[{*\w'"]|export\b)|\bimport\s*\(/m;

interface ModuleSource {
  /** The modules it imports and the names it takes from each. */
  imports: Map<string, string[]>;
  /** The modules it imports when they are needed (`import("./name.js")`). */
  loads: string[];
  exports: string[];
  /** Its text without its import and export statements, its dynamic imports naming `modulesUrl`. */
  body: string;
}

const namesIn = (list: string): string[] =>
  list
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);

function readModule(name: string, text: string, modulesUrl: string): ModuleSource {
  const imports = new Map<string, string[]>();
  const loads: string[] = [];
  const exports: string[] = [];
  const body = text
    .replace(STATIC_IMPORT, (_, names: string, from: string) => {
      imports.set(from, namesIn(names));
      return '';
    })
    .replace(EXPORT_LIST, (_, names: string) => {
      exports.push(...namesIn(names));
      return '';
    })
    .replace(EXPORTED_DECLARATION, (_, declared: string) => {
      exports.push(declared);
      return '';
    });
  const unread =
    UNREAD_STATEMENT.exec(body.replace(DYNAMIC_IMPORT, '')) ??
    [...imports.values(), exports].flat().find((n) => !/^[\w$]+$/.test(n));
  if (unread)
    throw new Error(
      `the console module ${name} has an import or export the bundle does not read: ${String(unread).slice(0, 80)}`,
    );
  const loaded = body.replace(DYNAMIC_IMPORT, (_, module: string) => {
    loads.push(module);
    return `import(${JSON.stringify(modulesUrl + module)})`;
  });
  return { imports, loads, exports, body: loaded };
}

export interface ConsoleBundle {
  /** The script: the modules, run in order as the page is parsed. */
  text: string;
  /** The bundled modules but the entry, each served as this module, which exports what the script kept for it. */
  reExports: Map<string, string>;
}

/**
 * `entry` and the modules it imports statically (`sources`: each module's text by file name) as one
 * classic script; `modulesUrl`, where the modules are served, relative to the page (the folder, ending in `/`).
 */
export function bundleModules(entry: string, sources: Map<string, string>, modulesUrl: string): ConsoleBundle {
  // Depth first, imports before importers: the order in which modules run.
  const modules = new Map<string, ModuleSource>();
  const visiting = new Set<string>();
  const visit = (name: string) => {
    if (modules.has(name)) return;
    if (visiting.has(name)) throw new Error(`the console modules import each other in a cycle through ${name}`);
    const text = sources.get(name);
    if (text === undefined) throw new Error(`the console module ${name} is imported but not in src/http/console`);
    visiting.add(name);
    const module = readModule(name, text, modulesUrl);
    for (const imported of module.imports.keys()) visit(imported);
    modules.set(name, module);
  };
  visit(entry);

  // A browser refuses a name a module does not export, or a module it cannot load: checked here, since
  // in the script the first would be undefined and the second would fail only when its page is shown.
  for (const [name, module] of modules) {
    for (const [from, names] of module.imports) {
      const missing = names.find((n) => !modules.get(from)!.exports.includes(n));
      if (missing) throw new Error(`the console module ${name} imports ${missing}, which ${from} does not export`);
    }
    const absent = module.loads.find((loaded) => !sources.has(loaded));
    if (absent) throw new Error(`the console module ${name} loads ${absent}, which is not in src/http/console`);
  }

  const scopes = [...modules].map(([name, module]) =>
    [
      `// ./${name}`,
      `bundled['${name}'] = (() => {`,
      ...[...module.imports].map(([from, names]) => `const { ${names.join(', ')} } = bundled['${from}'];`),
      module.body.trim(),
      `return { ${module.exports.join(', ')} };`,
      '})();',
    ].join('\n'),
  );
  const reExports = new Map(
    [...modules]
      .filter(([name]) => name !== entry)
      .map(([name, module]) => [
        name,
        "// Run as part of the console page's script (src/http/console-bundle.ts).\n" +
          `export const { ${module.exports.join(', ')} } = globalThis.${MODULES_GLOBAL}['${name}'];\n`,
      ]),
  );
  const lines = [
    `// ${entry} and the modules it imports, bundled by src/http/console-bundle.ts.`,
    '(() => {',
    "'use strict';",
    `const bundled = (globalThis.${MODULES_GLOBAL} = {});`,
    ...scopes,
    '})();',
  ];
  const text = `${lines.join('\n')}\n`;
  return { text, reExports };
}
