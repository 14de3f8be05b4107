import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses an outbound call must never reach unless configuration allows it: loopback,
 * private and shared ranges, link-local (which holds the cloud metadata endpoints such as
 * 169.254.169.254), unspecified, multicast and reserved ranges, in IPv4 and IPv6, and IPv6
 * forms that carry an IPv4 address (mapped, NAT64).
 */
const REFUSED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  REFUSED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
] as const) {
  REFUSED.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (::ffff:a.b.c.d, 64:ff9b::/96), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const [hi, lo] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** True if an outbound call may connect to this IP address when private addresses are not allowed. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return isPublicAddress(v4);
    return !REFUSED.check(address, 'ipv6');
  }
  return !REFUSED.check(address, 'ipv4');
}

/** Why an outbound call was not made; `code` is stable. */
export class OutboundRefusedError extends Error {
  readonly code = 'outbound_address_refused';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Why a call to `host` is refused: every address it resolves to is one the guard keeps out. */
export function privateAddressRefusal(host: string, addresses: readonly string[]): string {
  return (
    `${host} resolves to ${addresses.join(', ')}: loopback, private, link-local and metadata addresses are not ` +
    'called (outbound.allowPrivateAddresses)'
  );
}

/**
 * A `lookup` for http.request that resolves the name and keeps only the addresses the call may
 * connect to, so the check applies to the address actually connected to (a name that resolves to
 * 127.0.0.1 is refused like the literal). Refuses when none is left.
 */
export function guardedLookup(
  hostname: string,
  options: LookupOneOptions | LookupAllOptions,
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const allowed = addresses.filter((a) => isPublicAddress(a.address));
    if (allowed.length === 0) {
      const refused = new OutboundRefusedError(
        privateAddressRefusal(
          hostname,
          addresses.map((a) => a.address),
        ),
      );
      return callback(refused as NodeJS.ErrnoException, []);
    }
    if ((options as LookupAllOptions).all) return callback(null, allowed);
    callback(null, allowed[0].address, allowed[0].family);
  });
}
