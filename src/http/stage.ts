import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/** What a stage returns when it answered the request itself: nothing after it runs. */
export const ANSWERED = 'answered';

/**
 * What a stage made of a request: `undefined` when the request goes on, ANSWERED when the stage
 * answered it; a promise of either when the stage has to wait (a token not verified before).
 */
export type StageOutcome = undefined | typeof ANSWERED | Promise<undefined | typeof ANSWERED>;

/**
 * One step every API request takes before its route, over Node's request and response, so that
 * express and the object fast path run the same function. A refusal is thrown (or rejected) as an
 * HttpError, which the one error answer turns into an api:Error.
 */
export type Stage = (req: IncomingMessage, res: ServerResponse) => StageOutcome;

/**
 * Runs `stages` in order from `from`: ANSWERED once one answers, undefined when all let the request
 * on; a promise from the first stage that waits. Throws (or rejects with) what a stage throws.
 */
export function runStages(stages: readonly Stage[], req: IncomingMessage, res: ServerResponse, from = 0): StageOutcome {
  for (let i = from; i < stages.length; i++) {
    const outcome = stages[i](req, res);
    if (outcome === undefined) continue;
    if (outcome === ANSWERED) return ANSWERED;
    return outcome.then((waited) => (waited === ANSWERED ? ANSWERED : runStages(stages, req, res, i + 1)));
  }
  return undefined;
}

/** A stage as express middleware: next when it lets the request on, its refusal to express's error handler. */
export function stageMiddleware(stage: Stage): RequestHandler {
  return (req, res, next) => {
    const outcome = stage(req, res);
    if (outcome === undefined) next();
    else if (outcome !== ANSWERED) outcome.then((waited) => (waited === ANSWERED ? undefined : next()), next);
  };
}
