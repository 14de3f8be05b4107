import { z } from 'zod';

/** The building blocks of the configuration schema, shared by its sections. */
export const integer = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
export const httpUrl = z.url({ protocol: /^https?$/ });
export const iri = z.url();

export const clientSchema = z.strictObject({
  id: z.string().min(1),
  secret: z.string().min(1),
  /** URI of the logistics agent the tokens of this client speak for. */
  agent: iri,
});

export const trustedIssuerSchema = z.strictObject({
  issuer: z.string().min(1),
  jwksUrl: httpUrl,
  /** When set, tokens must carry this audience. */
  audience: z.string().min(1).optional(),
});

/** Where notifications for an organisation go, when not to `{origin of the organisation}/notifications`. */
export const callbackSchema = z.strictObject({ organization: iri, url: httpUrl });

/** What a browser sends in `Origin` (scheme, host, port if not the default; no path), or `*`: any origin. */
export const originSchema = z
  .string()
  .refine((text) => text === '*' || (URL.canParse(text) && new URL(text).origin === text), {
    message:
      'expected an origin as a browser sends it (`https://app.example.com`, lowercase, no path or trailing ' +
      'slash) or `*`',
  });

/**
 * A partner server asked, when an object of one of `types` (or their subclasses; none: any) is created,
 * which subscription it wants.
 */
export const partnerSchema = z.strictObject({ url: httpUrl, types: z.array(iri).default([]) });

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
