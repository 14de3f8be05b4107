import { z } from 'zod';
import { integer, originSchema } from './fields.js';

/** How requests are served: CORS, and the limits that keep one body or one caller from taking the server. */
export const servingSettings = {
  http: z
    .strictObject({
      cors: z
        .strictObject({
          allowedOrigins: z
            .array(originSchema)
            .default([])
            .meta({
              env: 'CORS_ALLOWED_ORIGINS',
              description:
                'origins (`https://app.example.com`) whose web pages may call the API from a browser (CORS, ' +
                'docs/cors.md); `*`: any origin; none: CORS is off. In the env var, comma-separated or a JSON ' +
                'list',
            }),
        })
        .prefault({}),
    })
    .prefault({}),
  limits: z
    .strictObject({
      bodyBytes: integer(1)
        .default(1024 * 1024)
        .meta({ description: 'request body limit (413 above)' }),
      triples: integer(1).default(10_000).meta({ description: 'triples after expansion (400 above)' }),
      depth: integer(1).default(32).meta({ description: 'JSON nesting depth (400 above)' }),
      iriLength: integer(16).default(2048).meta({ description: 'IRI length (400 above)' }),
      contextTerms: integer(1)
        .default(2000)
        .meta({
          description:
            'JSON-LD term definitions, each `@context` counting its own terms and those of the contexts ' +
            'around it (400 above)',
        }),
      jsonLdMillis: integer(1)
        .default(3000)
        .meta({
          description:
            'time jsonld.js may spend on one body that the fast reader leaves to it; it runs on a worker ' +
            'thread and is stopped past this (400)',
        }),
      perCaller: z
        .strictObject({
          requestsInFlight: integer(1)
            .default(64)
            .meta({
              description:
                'requests of one caller (agent) the server works on at once; past it 429 with `Retry-After` ' +
                '(internal actors are not counted; docs/operations.md, "Fair share")',
            }),
          bodyBytesInFlight: integer(1)
            .default(8 * 1024 * 1024)
            .meta({
              description:
                'request body bytes of one caller held at once (received, or announced by `Content-Length`, ' +
                'until the answer): a body past it is refused with 429 and `Retry-After`; one body is always ' +
                'taken when the caller has none in flight',
            }),
          jsonLdDocuments: integer(1)
            .default(4)
            .meta({
              description:
                'JSON-LD bodies of one caller at the jsonld.js worker at once (those the fast reader leaves ' +
                "to it): while it has this many there, the caller's next body is refused with 429 and " +
                '`Retry-After` before it is read',
            }),
        })
        .prefault({}),
    })
    .prefault({}),
};
