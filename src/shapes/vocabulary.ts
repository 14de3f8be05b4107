import { RDF, XSD } from '../rdf/vocab.js';

export const SH = 'http://www.w3.org/ns/shacl#';
/** Namespace of the shapes this server generates (not IATA's: the shapes are ours). */
export const SHAPES = 'urn:onerecord:shapes:';
/** The node shape "has no rdf:type": a link or an untyped node, whose class the data does not say. */
export const UNTYPED_SHAPE = `${SHAPES}Untyped`;

/**
 * The literal datatypes a property of each ontology datatype accepts. JSON-LD makes any JSON number an
 * xsd:integer or xsd:double and the store keeps integer subtypes as xsd:integer, so a numeric property
 * accepts every numeric datatype and an integer one every integer datatype (with its type's lower
 * bound). An xsd:anyURI property also takes a plain string or an IRI (`iris`), the ways clients (IATA's
 * own test material among them) commonly write it; the domain stores both as xsd:anyURI literals.
 */
export interface DatatypeFamily {
  accepted: string[];
  minInclusive?: number;
  /** How a message names what is expected: "must be <expected>". */
  expected: string;
  /** An IRI (a link) is accepted as well as the literal datatypes. */
  iris?: true;
}

const INTEGERS = [`${XSD}integer`, `${XSD}int`, `${XSD}long`, `${XSD}nonNegativeInteger`, `${XSD}positiveInteger`];
const NUMBERS = [`${XSD}double`, `${XSD}float`, `${XSD}decimal`, ...INTEGERS];

export const DATATYPE_FAMILIES: Readonly<Record<string, DatatypeFamily>> = {
  [`${XSD}string`]: { accepted: [`${XSD}string`, `${RDF}langString`], expected: 'a string' },
  [`${XSD}boolean`]: { accepted: [`${XSD}boolean`], expected: 'a boolean (true or false)' },
  [`${XSD}double`]: { accepted: NUMBERS, expected: 'a number' },
  [`${XSD}decimal`]: { accepted: NUMBERS, expected: 'a number' },
  [`${XSD}integer`]: { accepted: INTEGERS, expected: 'an integer' },
  [`${XSD}nonNegativeInteger`]: { accepted: INTEGERS, minInclusive: 0, expected: 'an integer >= 0' },
  [`${XSD}positiveInteger`]: { accepted: INTEGERS, minInclusive: 1, expected: 'an integer >= 1' },
  [`${XSD}dateTime`]: { accepted: [`${XSD}dateTime`], expected: 'an xsd:dateTime' },
  [`${XSD}date`]: { accepted: [`${XSD}date`], expected: 'an xsd:date' },
  [`${XSD}duration`]: { accepted: [`${XSD}duration`], expected: 'an xsd:duration' },
  [`${XSD}anyURI`]: {
    accepted: [`${XSD}anyURI`, `${XSD}string`],
    iris: true,
    expected: 'an IRI (an xsd:anyURI, a string or a link)',
  },
};
