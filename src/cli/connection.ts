import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from './api-client.js';
import { readErrorAnswer, formatApiError } from './api-errors.js';
import { UsageError } from './command.js';
import { localConfig } from './local-config.js';
import { holderToken } from './local-token.js';
import type { Profile } from './profile.js';

export const PROFILE_HELP = [
  'The server is --url, else ONERECORD_URL, else "url" of the profile, else the configured baseUrl.',
  'The token is ONERECORD_TOKEN, else "token" of the profile, else one fetched with its "clientId" and',
  '"clientSecret" (from "tokenUrl", default {url}/idp/token), else one of the embedded identity provider',
  "for the data holder when run beside the server's data directory (DATA_DIR or CONFIG_FILE).",
  'The profile is --profile <file>, else ~/.config/onerecord/profile.json if it exists, e.g.',
  '  {"url": "https://onerecord.example.com", "clientId": "my-client", "clientSecret": "…"}',
].join('\n');

function defaultProfilePath(): string {
  return join(process.env.XDG_CONFIG_HOME ?? join(homedir(), '.config'), 'onerecord', 'profile.json');
}

async function readProfile(explicit: string | undefined): Promise<Profile> {
  const path = explicit ?? defaultProfilePath();
  if (!explicit && !existsSync(path)) return {};
  // Loaded only for a profile: its schema library is a good part of a command's start.
  const { readProfileFile } = await import('./profile.js');
  return readProfileFile(path);
}

async function clientCredentialsToken(tokenUrl: string, clientId: string, clientSecret: string): Promise<string> {
  const res = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  if (res.status !== 200) throw new Error(`no token from ${tokenUrl}: ${formatApiError(await readErrorAnswer(res))}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

async function dataDirectoryToken(): Promise<string> {
  try {
    return await holderToken(undefined, undefined);
  } catch (err) {
    throw new Error(
      'no token: set ONERECORD_TOKEN or a profile (onerecord <command> --help), ' +
        `or run beside the server's data directory (${(err as Error).message})`,
    );
  }
}

/**
 * The client of a remote command: flags, then environment variables, then the profile, then the local server's
 * configuration.
 */
export async function connect(flags: { url?: string; profile?: string }): Promise<ApiClient> {
  const profile = await readProfile(flags.profile);
  const url = (flags.url ?? process.env.ONERECORD_URL ?? profile.url ?? (await localConfig()).baseUrl).replace(
    /\/+$/,
    '',
  );
  if (!URL.canParse(url)) throw new UsageError(`not a URL: ${url}`);
  const token = process.env.ONERECORD_TOKEN ?? profile.token;
  const { clientId, clientSecret } = profile;
  if (token !== undefined) return new ApiClient(url, async () => token);
  if (clientId && clientSecret)
    return new ApiClient(
      url,
      () => clientCredentialsToken(profile.tokenUrl ?? `${url}/idp/token`, clientId, clientSecret),
      true,
    );
  return new ApiClient(url, dataDirectoryToken, true);
}
