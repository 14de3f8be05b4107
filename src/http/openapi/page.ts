import type { Json, OpenApiDocument } from './parts.js';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const shown = (value: unknown) => escapeHtml(String(value));

const PAGE_STYLE =
  'body{font-family:sans-serif;max-width:60rem;margin:auto;padding:1rem}section{border-top:1px solid #ccc}' +
  '.m{display:inline-block;min-width:4.5rem;color:#fff;background:#345;padding:0 .3rem}';

function parameterItem(p: Json): string {
  return `<li><code>${shown(p.name)}</code> (${shown(p.in)}${p.required ? ', required' : ''})</li>`;
}

function responseItem(status: string, r: Json): string {
  const mediaTypes = Object.keys((r.content ?? {}) as Json)
    .map(escapeHtml)
    .join(', ');
  return `<li><b>${status}</b> ${shown(r.description ?? '')} <small>${mediaTypes}</small></li>`;
}

function operationSection(path: string, method: string, op: Json): string {
  const parameters = ((op.parameters ?? []) as Json[]).map(parameterItem).join('');
  const responses = Object.entries((op.responses ?? {}) as Record<string, Json>)
    .map(([status, r]) => responseItem(status, r))
    .join('');
  const heading = `<h2><span class="m">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h2>`;
  return (
    `<section id="${shown(op.operationId ?? `${method}-${path}`)}">${heading}<p>${shown(op.summary ?? '')}</p>` +
    `${parameters ? `<h3>Parameters</h3><ul>${parameters}</ul>` : ''}<h3>Answers</h3><ul>${responses}</ul></section>`
  );
}

/**
 * A page listing every operation with its parameters and answers; links to the JSON and YAML forms.
 * Its empty icon keeps browsers from asking for /favicon.ico, which would be a 401 like any path without a token.
 */
export function renderPage(doc: OpenApiDocument): string {
  const sections = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, op]) => operationSection(path, method, op)),
  );
  const info = doc.info as Json;
  const head =
    `<head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${shown(info.title)}</title>` +
    `<style>${PAGE_STYLE}</style></head>`;
  const links =
    '<p>Machine-readable: <a href="openapi.json">openapi.json</a>, <a href="openapi.yaml">openapi.yaml</a> ' +
    `(OpenAPI ${shown(doc.openapi)})</p>`;
  return (
    `<!doctype html><html lang="en">${head}<body><h1>${shown(info.title)} <small>${shown(info.version)}</small></h1>` +
    `<p>${shown(info.description)}</p>${links}${sections.join('')}</body></html>`
  );
}
