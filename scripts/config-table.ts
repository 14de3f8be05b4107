/**
 * Rewrites the configuration table of README.md from the schema in src/config.ts:
 *   npm run config:table
 * test/config.test.ts fails while the README and the schema differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configurationTable, withConfigurationTable } from '../src/config.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
writeFileSync(README, withConfigurationTable(readFileSync(README, 'utf8'), configurationTable()));
console.log('README.md: configuration table written');
