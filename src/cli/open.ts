import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { EXIT, flagOption, remoteCommand } from './command.js';

/**
 * What opens a URL in the user's browser. Only macOS's `open` is that: on Debian, `open` may be
 * an alternative for `openvt`.
 */
const OPENER = process.platform === 'darwin' ? 'open' : 'xdg-open';

/**
 * The console's sign-in link (docs/console.md): the token in the fragment, which never reaches the
 * server or its logs; with an object, `open=` names the console's own route of the object's page.
 */
function consoleLink(server: string, token: string, object?: string): string {
  const link = `${server}/console#token=${encodeURIComponent(token)}`;
  return object === undefined ? link : `${link}&open=/object?iri=${encodeURIComponent(object)}`;
}

/** Starts the opener without waiting for the browser; false when there is none on PATH. */
async function openInBrowser(url: string): Promise<boolean> {
  const opener = spawn(OPENER, [url], { detached: true, stdio: 'ignore' });
  try {
    await once(opener, 'spawn');
  } catch {
    return false;
  }
  opener.unref();
  return true;
}

export const openCommand = remoteCommand({
  name: 'open',
  synopsis: '[<iri|id>] [--browser]',
  description: `Prints a link that opens the web console signed in with the command's token: on the object list,
or on the object's page when one is given (an id is taken as {url}/logistics-objects/{id}). With
--browser, when stdout is a terminal, also opens it with ${OPENER}. The link holds the token: whoever
has it may use it until the token expires.`,
  example: 'npx onerecord open "$PIECE" --browser',
  options: { browser: { type: 'boolean' } },
  arity: [0, 1],
  async run({ args, values }, client) {
    const url = consoleLink(
      client.baseUrl,
      await client.bearerToken(),
      args[0] === undefined ? undefined : client.objectIri(args[0]),
    );
    console.log(url);
    // A script reading the link from a pipe gets the link only, never a browser.
    if (flagOption(values, 'browser') && process.stdout.isTTY && !(await openInBrowser(url)))
      console.error(`no ${OPENER} found: open the link above yourself`);
    return EXIT.ok;
  },
});
