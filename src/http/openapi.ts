import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';
import { ERROR_TITLES } from '../errors.js';
import { API_PATHS } from './openapi/api-paths.js';
import { FROM_IATA } from './openapi/iata-operations.js';
import { INTERNAL_PATHS } from './openapi/internal-paths.js';
import { type Json, jsonLd, type OpenApiDocument, ref } from './openapi/parts.js';
import { renderPage } from './openapi/page.js';
import { SERVER_SCHEMAS } from './openapi/schemas.js';
import { SERVICE_PATHS } from './openapi/service-paths.js';

/**
 * The OpenAPI 3.1 description served at `/openapi.json`, `/openapi.yaml` and `/openapi`: the operations
 * of IATA's ONE Record API description (`ontology/ONE-Record-API-OpenAPI.yaml`, OpenAPI 3.0) this server
 * implements, upgraded to 3.1, plus our own routes. Response bodies use our schemas, since IATA's
 * describe expanded JSON-LD and our answers are compacted.
 */
const IATA_FILE = fileURLToPath(new URL('../../../ontology/ONE-Record-API-OpenAPI.yaml', import.meta.url));

/** Routes of this server that IATA's description does not have. */
const SERVER_PATHS: Record<string, Record<string, Json>> = { ...API_PATHS, ...INTERNAL_PATHS, ...SERVICE_PATHS };

/** OpenAPI 3.0 schema → 3.1 (JSON Schema 2020-12): `nullable` becomes a `null` type. */
function upgradeSchemas(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(upgradeSchemas);
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) if (key !== 'nullable') out[key] = upgradeSchemas(value);
  const nullable = (node as Json).nullable === true;
  if (nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/**
 * An operation with every api:Error answer a route can give; an IATA operation also gets our
 * success bodies (`successBodies`), while ours keep theirs.
 */
function adaptOperation(operation: Json, successBodies?: Record<string, Json>): Json {
  const responses: Record<string, Json> = {};
  for (const [status, response] of Object.entries((operation.responses ?? {}) as Record<string, Json>)) {
    const code = Number(status);
    if (code >= 400) responses[status] = { description: response.description, content: jsonLd(ref('ApiError')) };
    else if (!successBodies) responses[status] = response;
    else if (successBodies[status]) responses[status] = { ...response, content: successBodies[status] };
    else {
      const { content: _dropped, ...rest } = response;
      responses[status] = rest;
    }
  }
  for (const status of Object.keys(ERROR_TITLES))
    responses[status] ??= { description: ERROR_TITLES[Number(status)], content: jsonLd(ref('ApiError')) };
  return { ...operation, responses };
}

export async function buildOpenApi(baseUrl: string): Promise<OpenApiDocument> {
  // The YAML parser is loaded with the first request for the description, not at start.
  const { parse } = await import('yaml');
  const iata = parse(readFileSync(IATA_FILE, 'utf8')) as Json & {
    paths: Record<string, Record<string, Json>>;
    components: { schemas: Record<string, unknown> };
  };
  const paths: Record<string, Record<string, Json>> = {};
  for (const [path, operations] of Object.entries(FROM_IATA)) {
    paths[path] = {};
    for (const [method, bodies] of Object.entries(operations))
      paths[path][method] = upgradeSchemas(adaptOperation(iata.paths[path][method], bodies)) as Json;
  }
  const getObject = paths['/logistics-objects/{logisticsObjectId}'].get as { parameters: Json[] };
  getObject.parameters.push({
    name: 'revision',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 1 },
    description: 'a revision number instead of the latest (our extension)',
  });
  for (const [path, operations] of Object.entries(SERVER_PATHS)) {
    paths[path] = {};
    for (const [method, operation] of Object.entries(operations))
      paths[path][method] = operation.security ? operation : adaptOperation(operation);
  }
  const schemas = { ...(upgradeSchemas(iata.components.schemas) as Record<string, unknown>), ...SERVER_SCHEMAS };
  // IATA's description refers to classes (code lists, Thing) it never defines: described as open objects.
  for (const [, name] of JSON.stringify(schemas).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
    schemas[name] ??= { type: 'object', description: `${name} (referred to by IATA's description, not defined there)` };
  }
  return {
    openapi: '3.1.0',
    info: {
      ...(iata.info as Json),
      title: 'ONE Record server API',
      description:
        'The ONE Record API (IATA, version 2.3.0) as this server implements it, with its own routes ' +
        '(operations, identity provider, action request list, bulk events). Answers are compacted JSON-LD; ' +
        'requests may use any JSON-LD form or Turtle.',
    },
    servers: [{ url: baseUrl }],
    tags: [
      ...(iata.tags as Json[]).filter((t) =>
        Object.values(paths).some((ops) =>
          Object.values(ops).some((op) => (op.tags as string[] | undefined)?.includes(t.name as string)),
        ),
      ),
      { name: 'Identity provider' },
      { name: 'Operations' },
    ],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A JWT from the embedded or a trusted identity provider, carrying logistics_agent_uri',
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'metrics.token from the configuration' },
      },
    },
  };
}

/** `/openapi.json`, `/openapi.yaml` and `/openapi` (a page), public; built on first request. */
export function openApiRoutes(baseUrl: string): Router {
  const router = express.Router();
  let built: Promise<{ json: string; yaml: string; html: string }> | undefined;
  const forms = () =>
    (built ??= (async () => {
      const doc = await buildOpenApi(baseUrl);
      const { stringify } = await import('yaml');
      return {
        json: JSON.stringify(doc),
        yaml: stringify(doc, { aliasDuplicateObjects: false }),
        html: renderPage(doc),
      };
    })());
  router.get('/openapi.json', async (_req, res) => {
    res.type('application/json').send((await forms()).json);
  });
  router.get('/openapi.yaml', async (_req, res) => {
    res.type('application/yaml').send((await forms()).yaml);
  });
  router.get('/openapi', async (_req, res) => {
    res.type('text/html').send((await forms()).html);
  });
  return router;
}
