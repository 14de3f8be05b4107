import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';

/** Characters that start a parameter, wildcard or group in a path-to-regexp path: the static text ends there. */
const PATTERN_START = /[:*?+!(){}[\]\\]/;
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** What the router's layers expose; read defensively, since it is the router package's and not a typed API. */
interface LayerLike {
  route?: { path?: unknown };
  slash?: boolean;
  rawPath?: unknown;
}

/**
 * The regular expression source a layer's path can only match within, or undefined when the layer
 * may take any path. A route matches its whole path (case-insensitive, trailing slashes loosened);
 * a `use` layer, and a route with a parameter, match paths that start with their static text.
 */
function layerPattern(layer: LayerLike): string | undefined {
  const isRoute = layer.route !== undefined;
  const path = isRoute ? layer.route!.path : layer.slash ? undefined : layer.rawPath;
  if (typeof path !== 'string' || path === '' || !path.startsWith('/')) return undefined;
  const cut = path.search(PATTERN_START);
  if (cut >= 0 || !isRoute) return escapeRegExp(cut >= 0 ? path.slice(0, cut) : path);
  return `${escapeRegExp(path.replace(/\/+$/, ''))}/*$`;
}

/**
 * A test of the request path that passes at least every path one of the router's layers matches;
 * undefined: any path may match.
 */
function mayMatch(handler: Router | RequestHandler): RegExp | undefined {
  const stack = (handler as Partial<Router>).stack as LayerLike[] | undefined;
  if (!Array.isArray(stack) || stack.length === 0) return undefined;
  const patterns = stack.map(layerPattern);
  if (patterns.some((p) => p === undefined)) return undefined;
  return new RegExp(`^(?:${[...new Set(patterns)].join('|')})`, 'i');
}

/** The one middleware of `gatedRouters`, with the handlers it gates, for whoever lists the app's routes. */
export type GatedRouters = RequestHandler & { readonly gated: readonly (Router | RequestHandler)[] };

/**
 * Routers (or middleware) mounted at the root as one middleware, each entered only when the path may
 * match one of its layers, since every layer passed and every router left unanswered costs each request
 * a match, allocations and a `setImmediate`. Routers must be complete when given (the tests come from
 * their own paths); one whose paths cannot be read, and a plain middleware, is always entered.
 */
export function gatedRouters(handlers: (Router | RequestHandler)[]): GatedRouters {
  const gated = handlers.map((handler) => ({ handler, test: mayMatch(handler) }));
  const middleware = (req: Request, res: Response, next: NextFunction) => {
    const path = req.path;
    let i = 0;
    const step = (err?: unknown) => {
      // `'route'` only skips the rest of a route's handlers, as on the app's stack.
      if (err && err !== 'route') return next(err);
      while (i < gated.length) {
        const { handler, test } = gated[i++];
        if (test && !test.test(path)) continue;
        // As express does for a layer that throws or returns a promise that rejects (`step` may run
        // from a router's setImmediate, outside express's own catch).
        try {
          const returned = handler(req, res, step) as unknown;
          if (returned instanceof Promise)
            returned.catch((error: unknown) => next(error ?? new Error('Rejected promise')));
        } catch (thrown) {
          next(thrown);
        }
        return;
      }
      next();
    };
    step();
  };
  return Object.assign(middleware, { gated: handlers });
}
