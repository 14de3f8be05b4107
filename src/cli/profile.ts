import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { UsageError } from './command.js';

/** A profile file: where the server is and how to get a token for it. Strict, so a misspelt key is reported. */
const profileSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).optional(),
  token: z.string().min(1).optional(),
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
  /** Token endpoint of the client credentials; default: the embedded provider's, `{url}/idp/token`. */
  tokenUrl: z.url({ protocol: /^https?$/ }).optional(),
});
export type Profile = z.output<typeof profileSchema>;

/** The profile in `path`; one that cannot be read or does not fit the schema is a usage error. */
export function readProfileFile(path: string): Profile {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`profile ${path}: ${(err as Error).message}`);
  }
  const parsed = profileSchema.safeParse(json);
  if (!parsed.success)
    throw new UsageError(
      `profile ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}
