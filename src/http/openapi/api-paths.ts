import { type Json, jsonLd, ref } from './parts.js';

const text = { schema: { type: 'string' } };
/** SPARQL answers: results for SELECT/ASK, RDF for CONSTRUCT/DESCRIBE (by Accept). */
const sparqlResults = {
  'application/sparql-results+json': { schema: { type: 'object', required: ['head'] } },
  'application/sparql-results+xml': text,
  'text/csv': text,
  'text/tab-separated-values': text,
  'text/turtle': text,
  'application/n-triples': text,
  'application/ld+json': { schema: { type: ['array', 'object'] } },
};
const sparqlDataset = [
  {
    name: 'default-graph-uri',
    in: 'query',
    required: false,
    schema: { type: 'array', items: { type: 'string', format: 'uri' } },
    description: "graphs whose union is the default graph (replaces the query's FROM)",
  },
  {
    name: 'named-graph-uri',
    in: 'query',
    required: false,
    schema: { type: 'array', items: { type: 'string', format: 'uri' } },
    description: "the named graphs (replaces the query's FROM NAMED)",
  },
  {
    name: 'view',
    in: 'query',
    required: false,
    schema: { enum: ['latest', 'events', 'revisions', 'audit'], default: 'latest' },
    description: 'what the query sees (README, "SPARQL analytics")',
  },
];
const sparqlAnswer = (extra: Json = {}) => ({
  '200': {
    description:
      'The answer; SPARQL-Results-Truncated when cut at sparql.maxRows; SPARQL-Replica-Lag: 0 when it shows ' +
      'every write acknowledged before the query, else `<ms>; writes=<n>` (README, "SPARQL analytics")',
    headers: {
      'SPARQL-Results-Truncated': { required: false, schema: { type: 'string' } },
      'SPARQL-Replica-Lag': { required: false, schema: { type: 'string' } },
    },
    content: { ...sparqlResults, ...extra },
  },
});

/** Routes of this server beside IATA's API: listings, bulk events, shapes and SPARQL. */
export const API_PATHS: Record<string, Record<string, Json>> = {
  '/action-requests': {
    get: {
      tags: ['Action Requests'],
      summary: 'INTERNAL: List action requests',
      description:
        'Action requests as an api:Collection, filtered by status, type and the Logistics Object they concern ' +
        '(internal actors only)',
      operationId: 'listActionRequests',
      parameters: [
        {
          name: 'status',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'REQUEST_PENDING, REQUEST_ACCEPTED, ... (short or IRI)',
        },
        {
          name: 'type',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'ChangeRequest, ... (short or IRI)',
        },
        { name: 'logistics-object', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
      ],
      responses: { '200': { description: 'The matching action requests', content: jsonLd(ref('CollectionDocument')) } },
    },
  },
  '/logistics-events': {
    post: {
      tags: ['Logistics Events'],
      summary: 'Post Logistics Events for several objects at once',
      description: 'Each event names its object (eventFor); the answer tells per event whether it was stored',
      operationId: 'createLogisticsEvents',
      requestBody: {
        required: true,
        content: { ...jsonLd(ref('JsonLdDocument')), 'text/turtle': { schema: { type: 'string' } } },
      },
      responses: { '207': { description: 'One status per event', content: jsonLd(ref('MultiStatusDocument')) } },
    },
  },
  '/shapes': {
    get: {
      tags: ['Operations'],
      summary: 'The SHACL shapes every write is checked against, generated from the ONE Record ontologies',
      operationId: 'getShapes',
      responses: {
        '200': { description: 'SHACL shapes as Turtle', content: { 'text/turtle': { schema: { type: 'string' } } } },
        '401': { description: 'Not authenticated' },
        '406': { description: 'Turtle is not acceptable' },
      },
    },
  },
  '/sparql': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: SPARQL 1.1 query, read-only (W3C SPARQL 1.1 Protocol)',
      description: 'A browser (Accept: text/html, no query) gets the query page, without a token',
      operationId: 'sparqlQuery',
      parameters: [{ name: 'query', in: 'query', required: false, schema: { type: 'string' } }, ...sparqlDataset],
      responses: sparqlAnswer({ 'text/html': text }),
    },
    post: {
      tags: ['Operations'],
      summary: 'INTERNAL: SPARQL 1.1 query as a form or an application/sparql-query body',
      operationId: 'sparqlQueryPost',
      parameters: sparqlDataset,
      requestBody: {
        required: true,
        content: {
          'application/sparql-query': text,
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              required: ['query'],
              properties: { query: { type: 'string' }, view: { type: 'string' } },
            },
          },
        },
      },
      responses: sparqlAnswer(),
    },
  },
};
