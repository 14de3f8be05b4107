import { apiErrors, type Json, metricsText, publicOperation, ref } from './parts.js';

/** The routes around the API: the console, the identity provider, health, metrics and this description. */
export const SERVICE_PATHS: Record<string, Record<string, Json>> = {
  '/console': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'The web console (a page; its scripts call this API with the token signed in with)',
      operationId: 'getConsole',
      responses: {
        '200': { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } },
        '304': { description: 'Not modified (ETag)' },
      },
    },
  },
  '/idp/token': {
    post: {
      ...publicOperation,
      tags: ['Identity provider'],
      summary: 'Embedded identity provider: client-credentials token',
      operationId: 'issueToken',
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              required: ['grant_type'],
              properties: {
                grant_type: { const: 'client_credentials' },
                client_id: { type: 'string' },
                client_secret: { type: 'string' },
              },
            },
          },
        },
      },
      responses: {
        '200': {
          description: "A signed JWT for the client's logistics agent",
          content: { 'application/json': { schema: ref('TokenResponse') } },
        },
        '400': {
          description: 'Unsupported grant or malformed request',
          content: { 'application/json': { schema: ref('OAuthError') } },
        },
        '401': {
          description: 'Unknown client or wrong secret',
          content: { 'application/json': { schema: ref('OAuthError') } },
        },
      },
    },
  },
  '/idp/.well-known/jwks.json': {
    get: {
      ...publicOperation,
      tags: ['Identity provider'],
      summary: 'Embedded identity provider: public keys',
      operationId: 'getJwks',
      responses: {
        '200': {
          description: 'The key set (with x5c and x5t)',
          content: { 'application/json': { schema: ref('JsonWebKeySet') } },
        },
      },
    },
  },
  '/health/live': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'Liveness probe',
      operationId: 'getLiveness',
      responses: {
        '200': { description: 'The process answers', content: { 'application/json': { schema: ref('Health') } } },
      },
    },
  },
  '/health/ready': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'Readiness probe',
      operationId: 'getReadiness',
      responses: {
        '200': {
          description: 'The store is loaded: traffic is served',
          content: { 'application/json': { schema: ref('Health') } },
        },
        '503': {
          description: 'Starting (store loading) or stopping',
          content: { 'application/json': { schema: ref('Health') } },
        },
      },
    },
  },
  '/metrics': {
    get: {
      security: [{ metricsToken: [] }],
      tags: ['Operations'],
      summary: 'Prometheus metrics',
      description: 'On the main port only with metrics.token configured (bearer); without a token on ' + 'metrics.port',
      operationId: 'getMetrics',
      responses: { '200': { description: 'Prometheus text format', content: metricsText }, ...apiErrors(401) },
    },
  },
  '/openapi.json': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'This description, as JSON',
      operationId: 'getOpenApiJson',
      responses: {
        '200': {
          description: 'OpenAPI 3.1',
          content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'paths'] } } },
        },
      },
    },
  },
  '/openapi.yaml': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'This description, as YAML',
      operationId: 'getOpenApiYaml',
      responses: {
        '200': { description: 'OpenAPI 3.1', content: { 'application/yaml': { schema: { type: 'string' } } } },
      },
    },
  },
  '/openapi': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'This description as a web page',
      operationId: 'getOpenApiPage',
      responses: { '200': { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  },
};
