import type { MovedObjects } from '../domain/moves/moved-objects.js';
import { callerOf } from './context.js';
import { CONTENT_LANGUAGE } from './negotiation.js';
import { ANSWERED, type Stage } from './stage.js';

/** An object's path and what follows it (a path under the object, a query); matched as express matches routes. */
const UNDER_OBJECT = /^\/logistics-objects\/([^/?]+)/i;

/**
 * The stage that answers 301/302 with `Location` and no body for every method on a moved object,
 * its audit trail and its events (ONE Record API, "Endpoints", Conventions; docs/behaviour.md,
 * "Moved objects"), once the caller is known: one who may not read the object gets its 403 or 404.
 */
export function redirectMoved(moves: MovedObjects, objectsPrefix: string): Stage {
  return (req, res) => {
    if (!moves.any) return undefined;
    const url = req.url!;
    const match = UNDER_OBJECT.exec(url);
    if (!match) return undefined;
    // What the object's new URL is followed by: `/audit-trail`, `?at=...`; nothing for a bare `/`.
    const rest = url.slice(match[0].length);
    const under = rest === '/' || rest.startsWith('/?') ? rest.slice(1) : rest;
    // The request head's check (request-checks.ts) refused malformed percent-encoding before.
    const redirect = moves.redirect(objectsPrefix + decodeURIComponent(match[1]), under, callerOf(res));
    return redirect?.then((to) => {
      res.statusCode = to.status;
      res.setHeader('Location', to.location);
      res.setHeader('Content-Language', CONTENT_LANGUAGE);
      res.end();
      return ANSWERED;
    });
  };
}
