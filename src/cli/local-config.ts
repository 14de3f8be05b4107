import type { Config } from '../config.js';

/**
 * The configuration the server beside this command runs with (DATA_DIR, CONFIG_FILE, ...). Loaded
 * on first use: its validation library takes about a third of a command's start, and a command
 * given its server and token (flags, environment, profile) never needs it.
 */
export async function localConfig(): Promise<Config> {
  const { loadConfig } = await import('../config.js');
  return loadConfig();
}
