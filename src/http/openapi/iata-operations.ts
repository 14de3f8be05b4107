import { type Json, jsonLd, rdfText, ref } from './parts.js';

/** The IATA operations this server implements, and the schema of each success body it answers. */
export const FROM_IATA: Record<string, Record<string, Record<string, Json>>> = {
  '/': { get: { '200': jsonLd(ref('ServerInformationDocument')) } },
  '/logistics-objects': { post: {} },
  '/logistics-objects/{logisticsObjectId}': {
    get: { '200': { ...jsonLd(ref('LogisticsObjectDocument')), ...rdfText } },
    patch: {},
  },
  '/logistics-objects/{logisticsObjectId}/audit-trail': {
    get: { '200': { ...jsonLd(ref('AuditTrailDocument')), 'text/turtle': { schema: { type: 'string' } } } },
  },
  '/logistics-objects/{logisticsObjectId}/logistics-events': {
    get: { '200': jsonLd(ref('CollectionDocument')) },
    post: {},
  },
  '/logistics-objects/{logisticsObjectId}/logistics-events/{logisticsEventsId}': {
    get: { '200': jsonLd(ref('LogisticsEventDocument')) },
  },
  '/action-requests/{actionRequestId}': { get: { '200': jsonLd(ref('ActionRequestDocument')) }, patch: {}, delete: {} },
  '/access-delegations': { post: {} },
  '/subscriptions': { get: { '200': jsonLd(ref('SubscriptionDocument')) }, post: {} },
  '/notifications': { post: {} },
};
