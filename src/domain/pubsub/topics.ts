import { badQuery, badRequest } from '../../errors.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { API, CARGO, api, apiLocalName } from '../../rdf/vocab.js';

/** What a subscription is about: a Logistics Object class (and its subclasses) or one Logistics Object. */
export interface Topic {
  /** api:LOGISTICS_OBJECT_TYPE or api:LOGISTICS_OBJECT_IDENTIFIER. */
  type: string;
  /** The class IRI or the object IRI. */
  topic: string;
}

const TOPIC_TYPES: readonly string[] = [api.LOGISTICS_OBJECT_TYPE, api.LOGISTICS_OBJECT_IDENTIFIER];
/** A vocabulary namespace as it arrives when the `#` of an IRI in the query was not encoded. */
const WITHOUT_FRAGMENT = [API.slice(0, -1), CARGO.slice(0, -1)];
const OBJECT_PATH = /\/logistics-objects\/[^/?#]+$/;

/** How a problem is reported: as a query parameter or as a property of a body. */
type Blame = (name: string, message: string) => Error;
const inQuery: Blame = (name, message) => badQuery(name, message);
/** Reports a problem of a Subscription body, on the property at fault. */
export const inBody: Blame = (name, message) => badRequest('invalid_subscription', message, name);

/** A TopicType given as full IRI (`#` as `%23` or as `/`), `api:` name or short name. */
export function parseTopicType(value: string, name: string, blame: Blame = inQuery): string {
  if (WITHOUT_FRAGMENT.includes(value))
    throw blame(name, `${name} ${value} lost its fragment: a '#' in a query must be sent as %23 (or replaced by '/')`);
  const iri = `${API}${apiLocalName(value.trim())}`;
  if (!TOPIC_TYPES.includes(iri))
    throw blame(
      name,
      `${name} must be LOGISTICS_OBJECT_TYPE or LOGISTICS_OBJECT_IDENTIFIER ` +
        `(as ${API}…, with '#' sent as %23 or '/')`,
    );
  return iri;
}

/**
 * Checks a topic against its type: a Logistics Object class of the cargo ontology, or the IRI of
 * a Logistics Object (`…/logistics-objects/{id}`, on this or another server).
 */
export function checkTopic(
  type: string,
  topic: string,
  ontology: CargoOntology,
  name: string,
  blame: Blame = inQuery,
): Topic {
  if (WITHOUT_FRAGMENT.includes(topic))
    throw blame(name, `${name} ${topic} lost its fragment: a '#' in a query must be sent as %23`);
  if (type === api.LOGISTICS_OBJECT_TYPE) {
    if (!ontology.isLogisticsObjectClass(topic))
      throw blame(
        name,
        `${topic} is not a Logistics Object type of the cargo ontology: Logistics Object Type not supported`,
      );
    return { type, topic };
  }
  let url: URL | undefined;
  try {
    url = new URL(topic);
  } catch {
    url = undefined;
  }
  if (
    !url ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.hash !== '' ||
    url.search !== '' ||
    !OBJECT_PATH.test(url.pathname)
  ) {
    throw blame(name, `${topic} is not a Logistics Object IRI (…/logistics-objects/{id})`);
  }
  return { type, topic };
}
