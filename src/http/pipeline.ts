import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler, Router } from 'express';
import type { RequestObservation } from '../observability/request-log.js';
import { authenticate, type Services } from './context.js';
import { redirectMoved } from './moved-redirect.js';
import { checkRequestHead } from './request-checks.js';
import { runStages, type Stage, type StageOutcome, stageMiddleware } from './stage.js';

/** Express routers at their places on the way: which stages a request has passed when they see it. */
export interface RouterPlaces {
  /** Seen by every request with a sound head, and not observed (health probes). */
  unobserved: (Router | RequestHandler)[];
  /** Observed, for anyone: no caller asked for (the token endpoint, the OpenAPI document, pages). */
  public: (Router | RequestHandler)[];
  /** The API: its caller known and admitted, moved objects redirected. */
  api: (Router | RequestHandler)[];
}

type Step = Stage | keyof RouterPlaces;

/** What the stages use. */
export type PipelineDeps = Pick<Services, 'verifier' | 'access' | 'callerBudget' | 'moves' | 'objects'>;

/**
 * The way of every request, declared once: the stages (plain functions over Node's request and
 * response, stage.ts) and where express's routers sit between them. The express app is built from
 * it (`expressHandlers`); the object fast path runs its stages (`runStages`) and then its route,
 * skipping routers none of which answers its paths. docs/ARCHITECTURE.md, "The request pipeline",
 * draws it.
 */
export class RequestPipeline {
  private readonly way: readonly Step[];
  /** The stages alone, in order: what an API request passes before its route. */
  readonly stages: readonly Stage[];

  constructor(deps: PipelineDeps, observation: RequestObservation) {
    this.way = [
      checkRequestHead,
      'unobserved',
      (req, res) => observation.start(req, res),
      'public',
      authenticate(deps),
      redirectMoved(deps.moves, deps.objects.objectsPrefix),
      'api',
    ];
    this.stages = this.way.filter((step): step is Stage => typeof step !== 'string');
  }

  /** The express app's handlers for the whole way: each stage as middleware, the routers at their places. */
  expressHandlers(routers: RouterPlaces): (Router | RequestHandler)[] {
    return this.way.flatMap((step) => (typeof step === 'string' ? routers[step] : [stageMiddleware(step)]));
  }

  /** Runs the stages on a request express does not see: undefined when its route is to answer it. */
  runStages(req: IncomingMessage, res: ServerResponse): StageOutcome {
    return runStages(this.stages, req, res);
  }
}
