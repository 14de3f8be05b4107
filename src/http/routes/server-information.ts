import express, { type Router } from 'express';
import { withContext } from '../../rdf/jsonld-writer.js';
import { ONTOLOGY_IRIS, api } from '../../rdf/vocab.js';
import { CONTENT_TYPES, SUPPORTED_API_VERSIONS, CONTENT_LANGUAGE, negotiate } from '../negotiation.js';
import { setRepresentationHeaders } from '../responses.js';

const anyUri = (value: string) => ({ '@value': value, '@type': 'xsd:anyURI' });

export interface ServerInformationRouteDeps {
  baseUrl: string;
  /** The data holder's IRI. */
  holder: string;
  /** When the server started: its information last changed then. */
  startedAt: Date;
}

/** GET / : the api:ServerInformation of this server (ONE Record API, "GET /"). */
export function serverInformationRoutes({ baseUrl, holder, startedAt }: ServerInformationRouteDeps): Router {
  const router = express.Router();
  const body = Buffer.from(
    withContext({
      '@id': `${baseUrl}/`,
      '@type': 'api:ServerInformation',
      'api:hasDataHolder': { '@id': holder },
      'api:hasServerEndpoint': anyUri(baseUrl),
      'api:hasSupportedApiVersion': [...SUPPORTED_API_VERSIONS],
      'api:hasSupportedContentType': Object.values(CONTENT_TYPES),
      'api:hasSupportedEncoding': ['utf-8'],
      'api:hasSupportedLanguage': [CONTENT_LANGUAGE],
      'api:hasSupportedOntology': [anyUri(ONTOLOGY_IRIS.cargo), anyUri(ONTOLOGY_IRIS.api)],
      'api:hasSupportedOntologyVersion': [anyUri(ONTOLOGY_IRIS.cargoVersion), anyUri(ONTOLOGY_IRIS.apiVersion)],
    }),
  );
  router.get('/', (req, res) => {
    const negotiated = negotiate(req.headers.accept, ['jsonld']);
    setRepresentationHeaders(res, negotiated, startedAt).setHeader('Type', api.ServerInformation);
    res.send(body);
  });
  return router;
}
