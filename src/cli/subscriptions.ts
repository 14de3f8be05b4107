import { EXIT, flagOption, remoteCommand, textOption } from './command.js';
import { printText } from './output.js';

export const subscribeCommand = remoteCommand({
  name: 'subscribe',
  synopsis: '<topic> [--type] [--publisher <base URL>] [--body] [--status-changes] [--server <base URL>]',
  description: `Makes this server subscribe to a Logistics Object IRI (or, with --type, a Logistics Object class
at --publisher) at another server, through POST /internal/remote-subscriptions of this server
(--server, the same as --url); prints the SubscriptionRequest the publisher answered. --body asks for
the object in each notification, --status-changes for action-request status notifications.`,
  example:
    'CONFIG_FILE=a.json npx onerecord subscribe https://onerecord.iata.org/ns/cargo#Piece --type --publisher ' +
    'http://localhost:8082',
  options: {
    type: { type: 'boolean' },
    publisher: { type: 'string' },
    body: { type: 'boolean' },
    'status-changes': { type: 'boolean' },
    server: { type: 'string' },
  },
  arity: [1, 1],
  async run({ args, values }, client) {
    const publisher = textOption(values, 'publisher');
    const res = await client.expect([201], 'POST', '/internal/remote-subscriptions', {
      contentType: 'application/json',
      body: JSON.stringify({
        topic: args[0],
        topicType: flagOption(values, 'type') ? 'LOGISTICS_OBJECT_TYPE' : 'LOGISTICS_OBJECT_IDENTIFIER',
        ...(publisher ? { publisher } : {}),
        sendLogisticsObjectBody: flagOption(values, 'body'),
        notifyRequestStatusChange: flagOption(values, 'status-changes'),
      }),
    });
    printText(await res.text());
    return EXIT.ok;
  },
});
