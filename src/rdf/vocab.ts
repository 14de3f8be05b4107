/** Every vocabulary IRI the server uses, in one place. */

export const CARGO = 'https://onerecord.iata.org/ns/cargo#';
export const API = 'https://onerecord.iata.org/ns/api#';
export const XSD = 'http://www.w3.org/2001/XMLSchema#';
export const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
export const RDFS = 'http://www.w3.org/2000/01/rdf-schema#';
export const OWL = 'http://www.w3.org/2002/07/owl#';
export const CODE_LISTS = 'https://onerecord.iata.org/ns/code-lists/';
/** Server-side bookkeeping (revision metadata); never served to clients. */
export const STORE = 'urn:onerecord:store:';
/** Scheme of embedded-object identifiers. */
export const INTERNAL_SCHEME = 'internal:';

export const ONTOLOGY_IRIS = {
  cargo: 'https://onerecord.iata.org/ns/cargo',
  cargoVersion: 'https://onerecord.iata.org/ns/cargo/3.3.0',
  api: 'https://onerecord.iata.org/ns/api',
  apiVersion: 'https://onerecord.iata.org/ns/api/2.3.0',
} as const;

export const rdf = {
  type: `${RDF}type`,
  langString: `${RDF}langString`,
} as const;

export const rdfs = { subClassOf: `${RDFS}subClassOf` } as const;
export const owl = { Class: `${OWL}Class` } as const;

export const xsd = {
  string: `${XSD}string`,
  boolean: `${XSD}boolean`,
  integer: `${XSD}integer`,
  nonNegativeInteger: `${XSD}nonNegativeInteger`,
  positiveInteger: `${XSD}positiveInteger`,
  double: `${XSD}double`,
  decimal: `${XSD}decimal`,
  dateTime: `${XSD}dateTime`,
  anyURI: `${XSD}anyURI`,
} as const;

export const cargo = {
  LogisticsObject: `${CARGO}LogisticsObject`,
  LogisticsEvent: `${CARGO}LogisticsEvent`,
  Organization: `${CARGO}Organization`,
  name: `${CARGO}name`,
  eventFor: `${CARGO}eventFor`,
  eventDate: `${CARGO}eventDate`,
  creationDate: `${CARGO}creationDate`,
  eventCode: `${CARGO}eventCode`,
  eventTimeType: `${CARGO}eventTimeType`,
  events: `${CARGO}events`,
} as const;

export const api = {
  ServerInformation: `${API}ServerInformation`,
  Error: `${API}Error`,
  ErrorDetails: `${API}ErrorDetails`,
  Collection: `${API}Collection`,
  hasRevision: `${API}hasRevision`,
  hasLatestRevision: `${API}hasLatestRevision`,
  hasLogisticsEvent: `${API}hasLogisticsEvent`,
} as const;

/** Bookkeeping predicates of the metadata graph. */
export const store = {
  metaGraph: `${STORE}meta`,
  revisionOf: `${STORE}revisionOf`,
  revisionNumber: `${STORE}revisionNumber`,
  revisionCreatedAt: `${STORE}createdAt`,
  revisionCreatedBy: `${STORE}createdBy`,
  revisionTypeHeader: `${STORE}typeHeader`,
} as const;

/** The JSON-LD context of every document the server writes. */
export const OUTPUT_CONTEXT = { cargo: CARGO, api: API, xsd: XSD } as const;
