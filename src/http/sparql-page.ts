import type { RequestHandler } from 'express';
import type { QueryFile } from '../domain/analytics/query-files.js';
import { RESULT_MEDIA_TYPES, VIEWS } from '../domain/analytics/analytics.js';
import { chooseOffer, CONTENT_LANGUAGE } from './negotiation.js';
import { sha256 } from './console.js';

/** JSON inside a <script> element: `<` escaped so no text in it can close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
textarea { width: 100%; height: 14rem; font-family: ui-monospace, monospace; font-size: 0.9rem; }
label { margin-right: 1rem; }
table { border-collapse: collapse; margin-top: 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
#status { margin-top: 0.75rem; }
.error { color: #b00020; }
pre { background: #f7f7f7; padding: 0.5rem; overflow: auto; }`;

/*
 * The page's script: sends the query with the token the user pastes (kept in sessionStorage
 * only), shows SELECT/ASK answers as a table and CONSTRUCT/DESCRIBE answers as N-Triples text.
 * Every value goes into the page as text, never as markup.
 */
const SCRIPT = `
const examples = JSON.parse(document.getElementById('examples-data').textContent);
const $ = (id) => document.getElementById(id);
const picker = $('example');
for (const [i, q] of examples.entries()) picker.add(new Option(q.name + ' - ' + q.description, String(i)));
picker.addEventListener('change', () => {
  const q = examples[Number(picker.value)];
  if (q) { $('query').value = q.text; $('view').value = q.view; }
});
$('token').value = sessionStorage.getItem('onerecord-token') || '';
function cell(term) {
  if (!term) return '';
  if (term.type === 'literal' && term['xml:lang']) return term.value + '@' + term['xml:lang'];
  return term.value;
}
async function runQuery(event) {
  event.preventDefault();
  const token = $('token').value.trim();
  sessionStorage.setItem('onerecord-token', token);
  const status = $('status');
  const results = $('results');
  results.replaceChildren();
  status.className = '';
  status.textContent = 'Running...';
  const started = performance.now();
  const res = await fetch('sparql?view=' + encodeURIComponent($('view').value), {
    method: 'POST',
    headers: {
      Authorization: 'Bearer ' + token,
      'Content-Type': 'application/sparql-query',
      Accept: 'application/sparql-results+json, application/n-triples;q=0.9',
    },
    body: $('query').value,
  });
  const text = await res.text();
  const millis = Math.round(performance.now() - started);
  if (!res.ok) {
    let message = text;
    try {
      message = [].concat(JSON.parse(text)['api:hasErrorDetail']).map((d) => d['api:hasMessage']).join('; ');
    } catch {}
    status.className = 'error';
    status.textContent = res.status + ': ' + message;
    return;
  }
  const truncated = res.headers.get('SPARQL-Results-Truncated') ? ' (cut at the row cap)' : '';
  if (!(res.headers.get('Content-Type') || '').startsWith('application/sparql-results+json')) {
    const pre = document.createElement('pre');
    pre.textContent = text;
    results.append(pre);
    status.textContent = 'Triples in ' + millis + ' ms' + truncated;
    return;
  }
  const body = JSON.parse(text);
  if (typeof body.boolean === 'boolean') {
    status.textContent = 'Answer: ' + body.boolean + ' (' + millis + ' ms)';
    return;
  }
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const v of body.head.vars) head.append(Object.assign(document.createElement('th'), { textContent: v }));
  const rows = table.createTBody();
  for (const b of body.results.bindings) {
    const row = rows.insertRow();
    for (const v of body.head.vars) row.insertCell().textContent = cell(b[v]);
  }
  results.append(table);
  status.textContent = body.results.bindings.length + ' rows in ' + millis + ' ms' + truncated;
}
$('form').addEventListener('submit', (event) =>
  runQuery(event).catch((err) => {
    $('status').className = 'error';
    $('status').textContent = String(err);
  }),
);`;

/** What GET /sparql may answer: query results (preferred on a tie, as the endpoint's own answer) or this page. */
const PAGE_OR_RESULTS = ['results', 'page'] as const;
const mediaTypesOf = (offer: (typeof PAGE_OR_RESULTS)[number]): readonly string[] =>
  offer === 'page' ? ['text/html'] : Object.values(RESULT_MEDIA_TYPES);

/** The page's own script and style only, allowed by their hashes: no other script can run in it. */
const CONTENT_SECURITY_POLICY =
  `default-src 'none'; script-src 'sha256-${sha256(SCRIPT)}'; style-src 'sha256-${sha256(STYLE)}'; ` +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function page(examples: readonly QueryFile[]): string {
  const viewOptions = VIEWS.map((v) => `<option value="${v}">${v}</option>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SPARQL - ONE Record server</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head>
<body>
<h1>SPARQL</h1>
<p>Read-only SPARQL 1.1 queries over this server's data. Views: <b>latest</b> (latest revision of every object),
<b>events</b> (the same plus Logistics Events), <b>revisions</b> (one named graph per revision, revision metadata
in the default graph), <b>audit</b> (action requests and access grants). Queries need a bearer token of an internal
actor (<code>npx onerecord token</code>).</p>
<form id="form">
<p><label>Token <input id="token" type="password" size="40" autocomplete="off"></label>
<label>Example <select id="example"><option value="">(choose a shipped query)</option></select></label>
<label>View <select id="view">${viewOptions}</select></label></p>
<textarea id="query" spellcheck="false" aria-label="SPARQL query">SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 20</textarea>
<p><button id="run" type="submit">Run query</button></p>
</form>
<div id="status" role="status"></div>
<div id="results"></div>
<script type="application/json" id="examples-data">${scriptJson(examples)}</script>
<script>${SCRIPT}</script>
</body></html>`;
}

/**
 * GET /sparql from a browser (Accept: text/html, no query): the query page. It holds no data
 * (only the shipped example queries), so it is served without a token; the queries it sends
 * carry the token the user pastes and are checked like any other.
 */
export function sparqlPage(examples: readonly QueryFile[]): RequestHandler {
  const body = page(examples);
  return (req, res, next) => {
    const wantsHtml = chooseOffer(req.headers.accept ?? '', PAGE_OR_RESULTS, mediaTypesOf)?.offer === 'page';
    if (!wantsHtml || (req.query as Record<string, unknown>).query !== undefined) return next();
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Content-Language', CONTENT_LANGUAGE);
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  };
}
