/** One problem found in a request, mapped to an api:ErrorDetails. */
export interface ErrorDetail {
  message: string;
  /** IRI of the property (or name of the query parameter) at fault. */
  property?: string;
  /** IRI of the resource concerned. */
  resource?: string;
}

export const ERROR_TITLES: Readonly<Record<number, string>> = {
  400: 'Invalid body request',
  401: 'Not authenticated or expired token',
  403: 'Not authorized to perform action',
  404: 'Resource not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  409: 'Identifier conflict',
  413: 'Payload too large',
  415: 'Unsupported content type',
  422: 'Unprocessable content',
  429: 'Too many requests',
  500: 'Internal server error',
  503: 'Service unavailable',
  507: 'Insufficient storage',
};

/**
 * An error that carries its HTTP status. `code` is stable and meant for tests and logs;
 * the HTTP layer turns every HttpError into an api:Error body in one place.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly details: ErrorDetail[];

  constructor(status: number, code: string, details: ErrorDetail | ErrorDetail[], title?: string) {
    const list = Array.isArray(details) ? details : [details];
    super(list.map((d) => d.message).join('; '));
    this.status = status;
    this.code = code;
    this.title = title ?? ERROR_TITLES[status] ?? 'Error';
    this.details = list;
  }
}

export const badRequest = (code: string, message: string, property?: string) =>
  new HttpError(400, code, { message, property });

export const INVALID_QUERY_TITLE = 'Invalid query parameter request';

export const badQuery = (parameter: string, message: string) =>
  new HttpError(400, 'invalid_query_parameter', { message, property: parameter }, INVALID_QUERY_TITLE);

export const notFound = (resource: string, message = 'Resource not found') =>
  new HttpError(404, 'not_found', { message, resource });
