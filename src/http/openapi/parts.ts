import { ERROR_TITLES } from '../../errors.js';

/** The building blocks of the OpenAPI description: references, media types and common answers. */
export type Json = Record<string, unknown>;
export type OpenApiDocument = Json & {
  paths: Record<string, Record<string, Json>>;
  components: Json & { schemas: Record<string, unknown> };
};

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });
export const jsonLd = (schema: unknown) => ({ 'application/ld+json': { schema } });
export const rdfText = {
  'text/turtle': { schema: { type: 'string' } },
  'application/n-triples': { schema: { type: 'string' } },
};

/** A compacted JSON-LD document whose `@type` is one of `types` (compact IRIs). */
export const typed = (...types: string[]) => ({
  allOf: [ref('JsonLdDocument'), { type: 'object', required: ['@type'], properties: { '@type': { enum: types } } }],
});

export const publicOperation = { security: [] };
export const apiErrors = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [String(s), { description: ERROR_TITLES[s], content: jsonLd(ref('ApiError')) }]),
  );
export const metricsText = { 'text/plain; version=0.0.4': { schema: { type: 'string' } } };
