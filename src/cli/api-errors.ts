import { compactIri } from '../rdf/jsonld-writer.js';
import { api } from '../rdf/vocab.js';
import type { Graph } from './graph.js';

/** An api:Error as the command line shows it: the HTTP status, the title, a message per detail. */
export interface ApiErrorReport {
  status: number;
  title: string;
  details: { message: string; property?: string }[];
}

/**
 * One line: `400: <message> [<property>]; … (<title>)`. The status comes first so that scripts can
 * match on it; the title closes the line because the messages are what a reader acts on.
 */
export function formatApiError(error: ApiErrorReport): string {
  const details = error.details.map((d) => (d.property ? `${d.message} [${compactIri(d.property)}]` : d.message));
  return `${error.status}: ${details.join('; ') || '(no details)'}${error.title ? ` (${error.title})` : ''}`;
}

/** A refused request: its message is the formatted api:Error. */
export class ApiFailure extends Error {
  constructor(readonly report: ApiErrorReport) {
    super(formatApiError(report));
  }
}

type JsonNode = Record<string, unknown>;

/** The text of a compacted JSON-LD value: a string, or `{"@value": …}`. */
const jsonText = (value: unknown): string | undefined => {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as JsonNode)['@value'] === 'string')
    return (value as JsonNode)['@value'] as string;
  return undefined;
};

/**
 * The api:Error of a failed answer. The server writes errors as compacted JSON-LD with its own
 * prefixes; anything else (a proxy's page, an OAuth error of the token endpoint) is shown as text.
 */
export async function readErrorAnswer(res: Response): Promise<ApiErrorReport> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const node = typeof body === 'object' && body !== null ? (body as JsonNode) : {};
  const details = [node['api:hasErrorDetail']].flat().filter((d): d is JsonNode => typeof d === 'object' && d !== null);
  if (typeof node['api:hasTitle'] !== 'string' && details.length === 0) {
    const oauth = jsonText(node.error_description) ?? jsonText(node.error);
    return {
      status: res.status,
      title: res.statusText,
      details: [{ message: oauth ?? (text.trim().slice(0, 500) || '(empty answer)') }],
    };
  }
  return {
    status: res.status,
    title: jsonText(node['api:hasTitle']) ?? '',
    details: details.map((d) => ({
      message: jsonText(d['api:hasMessage']) ?? '',
      property: jsonText(d['api:hasProperty']),
    })),
  };
}

/** The api:Error nodes a resource holds under `api:hasError` (a failed or rejected ChangeRequest). */
export function storedErrors(graph: Graph, subject: string): ApiErrorReport[] {
  return graph.values(subject, api.hasError).map((error) => {
    const details = graph.values(error, api.hasErrorDetail).map((d) => ({
      message: graph.value(d, api.hasMessage),
      property: graph.value(d, api.hasProperty) || undefined,
    }));
    const code = graph
      .values(error, api.hasErrorDetail)
      .map((d) => graph.value(d, api.hasCode))
      .find(Boolean);
    return { status: Number(code ?? 0), title: graph.value(error, api.hasTitle), details };
  });
}
