/**
 * The console's landing modules as one module, made when the server starts (no build step): the entry
 * module and every module it imports statically. Loaded as six files, even from the browser's cache,
 * each request and each module cost the landing page's main thread a few ms before its first row
 * (scripts/bench/console.ts); as one, once.
 *
 * Each module runs in a function of its own, in import order, so top-level names stay apart as in
 * modules; the bundle exports what they export. The modules loaded later (the other pages) still import
 * `./api.js` and the like: each bundled module is served as a re-export of the bundle, so there is one
 * instance of each, as with modules. Only the forms the console's modules use are read (below); any
 * other `import` or `export` stops the server's start rather than break the page.
 */

/** `import { a, b } from './name.js';`, a line of its own. */
const STATIC_IMPORT = /^import\s*\{([^}]*)\}\s*from\s*'\.\/([\w.-]+\.js)';[ \t]*$/gm;
/** `export { a, b };`, a line of its own. */
const EXPORT_LIST = /^export\s*\{([^}]*)\};?[ \t]*$/gm;
/** `export` before a declaration at the start of a line: removed; the lookahead captures the declared name. */
const EXPORTED_DECLARATION = /^export\s+(?=(?:async\s+function\*?|function\*?|class|const|let)\s+([\w$]+))/gm;
/** What is left of an `import` or `export` statement the forms above do not read (a dynamic `import(` is no statement). */
const UNREAD_STATEMENT = /^(?:import\s*[{*\w'"]|export\b)/m;

interface ModuleSource {
  /** The modules it imports and the names it takes from each. */
  imports: Map<string, string[]>;
  exports: string[];
  /** Its text without its import and export statements. */
  body: string;
}

const namesIn = (list: string): string[] => list.split(',').map((name) => name.trim()).filter(Boolean);

function readModule(name: string, text: string): ModuleSource {
  const imports = new Map<string, string[]>();
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
  const unread = UNREAD_STATEMENT.exec(body) ?? [...imports.values(), exports].flat().find((n) => !/^[\w$]+$/.test(n));
  if (unread) throw new Error(`the console module ${name} has an import or export the bundle does not read: ${String(unread).slice(0, 80)}`);
  return { imports, exports, body };
}

export interface ConsoleBundle {
  /** The bundle's text, served in place of the entry module. */
  text: string;
  /** The other bundled modules, each served as this re-export of the bundle. */
  reExports: Map<string, string>;
}

/** `entry` and the modules it imports statically (`sources`: each module's text by file name) as one module. */
export function bundleModules(entry: string, sources: Map<string, string>): ConsoleBundle {
  // Depth first, imports before importers: the order in which modules run.
  const modules = new Map<string, ModuleSource>();
  const visiting = new Set<string>();
  const visit = (name: string) => {
    if (modules.has(name)) return;
    if (visiting.has(name)) throw new Error(`the console modules import each other in a cycle through ${name}`);
    const text = sources.get(name);
    if (text === undefined) throw new Error(`the console module ${name} is imported but not in src/http/console`);
    visiting.add(name);
    const module = readModule(name, text);
    for (const imported of module.imports.keys()) visit(imported);
    modules.set(name, module);
  };
  visit(entry);

  // A browser refuses a name a module does not export, and a bundle exports each name once: checked here,
  // since in the bundle the first would be undefined and the second would not load.
  const exporter = new Map<string, string>();
  for (const [name, module] of modules) {
    for (const [from, names] of module.imports) {
      const missing = names.find((n) => !modules.get(from)!.exports.includes(n));
      if (missing) throw new Error(`the console module ${name} imports ${missing}, which ${from} does not export`);
    }
    for (const exported of module.exports) {
      if (exporter.has(exported)) throw new Error(`the console modules ${exporter.get(exported)} and ${name} both export ${exported}`);
      exporter.set(exported, name);
    }
  }

  const scopes = [...modules].map(([name, module]) =>
    [
      `// ./${name}`,
      `bundled['${name}'] = (() => {`,
      ...[...module.imports].map(([from, names]) => `const { ${names.join(', ')} } = bundled['${from}'];`),
      module.body.trim(),
      module.exports.length > 0 ? `return { ${module.exports.join(', ')} };` : 'return {};',
      '})();',
    ].join('\n'),
  );
  const exports = [...modules].filter(([, module]) => module.exports.length > 0).map(([name, module]) => `export const { ${module.exports.join(', ')} } = bundled['${name}'];`);
  const reExports = new Map(
    [...modules].filter(([name]) => name !== entry).map(([name, module]) => [name, `// Bundled into ./${entry} (src/http/console-bundle.ts).\nexport { ${module.exports.join(', ')} } from './${entry}';\n`]),
  );
  return { text: [`// ${entry} and the modules it imports, bundled by src/http/console-bundle.ts.`, 'const bundled = {};', ...scopes, ...exports].join('\n') + '\n', reExports };
}
