import { localConfig } from './local-config.js';

/**
 * A token of the embedded provider, with the issuer and holder recorded by the server, not this
 * process's defaults: a token is only useful if its iss matches what the server that owns the
 * data directory verifies.
 */
export async function holderToken(agent: string | undefined, lifetime: number | undefined): Promise<string> {
  const config = await localConfig();
  // Loaded here only (its JWT and certificate libraries): most commands get their token otherwise.
  const { IdentityProvider } = await import('../auth/identity-provider.js');
  const { idp, holder } = await IdentityProvider.openRecorded(
    config.dataDir,
    config.identityProvider.tokenLifetimeSeconds,
  );
  return idp.issue(agent ?? holder, lifetime);
}
