/** Every route that reads a request body, as [method, path], for the object at `objectPath`. */
export function writeRoutes(objectPath: string): [method: string, path: string][] {
  return [
    ['POST', '/logistics-objects'],
    ['PATCH', objectPath],
    ['POST', `${objectPath}/logistics-events`],
    ['POST', '/logistics-events'],
    ['POST', '/access-delegations'],
    ['POST', '/subscriptions'],
    ['POST', '/notifications'],
    ['POST', '/internal/acl'],
    ['POST', '/internal/remote-subscriptions'],
    ['PUT', `/internal/moves/${objectPath.split('/').pop()}`],
    ['POST', '/sparql'],
    ['POST', '/idp/token'],
  ];
}
