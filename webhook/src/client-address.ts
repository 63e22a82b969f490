// Who a connection's client is, for sharing the webhook's limits fairly between clients: its
// address, an IPv4 client the same whether it reached an IPv4 or a dual-stack listener
// (::ffff:10.0.0.1 is 10.0.0.1). An IPv6 client is its whole address, not its /64: in a cluster
// a node's pods, or every node, can share a /64 with the API server, and a source address that
// could not be answered cannot finish a TLS handshake, so one pod cannot pose as many clients.

const MAPPED_IPV4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** The client an address belongs to; '' when the address is not known (a closed socket). */
export function clientOf(address: string | undefined): string {
  if (address === undefined) return '';
  return MAPPED_IPV4.exec(address)?.[1] ?? address;
}
