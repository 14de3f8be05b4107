import { spawn } from 'node:child_process';

const ISQL = 'isql-vt';

/**
 * Runs SQL statements (each ended by `;` and a line end) as dba through Virtuoso's isql, fed on
 * stdin: with `exec="..."` isql treats some characters (`%`) itself. Rejects on the first
 * statement Virtuoso refuses, since isql itself would go on and exit 0.
 */
export function runIsql(sqlPort: number, sql: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ISQL, [String(sqlPort), 'dba', 'dba', 'VERBOSE=OFF', 'BANNER=OFF', 'PROMPT=OFF'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const refused = output.match(/\*\*\* Error[^\n]*(\n[^\n]*)?/);
      if (refused) reject(new Error(`isql: ${refused[0].trim()}`));
      else if (code !== 0) reject(new Error(`isql exited with ${code}: ${output.slice(-500)}`));
      else resolve(output);
    });
    child.stdin.end(sql);
  });
}
