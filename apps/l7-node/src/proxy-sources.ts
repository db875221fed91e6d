import { BlockList, isIPv6 } from 'node:net';

// Who may open a connection on a listener's PROXY port: the fleet's L4 nodes. A PROXY header names the
// client the node then trusts (ACLs, X-Forwarded-For), so a peer that could send one could claim any
// address, past another tenant's allow-list, directly or through a TCP listener aimed at an L7 port. The
// set comes with every snapshot (`l4Nodes`); without one (a standalone `--config` file that names no
// fleet) any peer is accepted, as before.

export class ProxySources {
  private list: BlockList | null = null;

  /** The L4 node addresses of the latest snapshot; undefined: no fleet known, every peer allowed. */
  update(addresses: readonly string[] | undefined): void {
    if (addresses === undefined) {
      this.list = null;
      return;
    }
    const list = new BlockList();
    for (const a of addresses) list.addAddress(a, isIPv6(a) ? 'ipv6' : 'ipv4');
    this.list = list;
  }

  /** Whether `address` (the connection's peer, IPv4-mapped addresses unmapped) may send a PROXY header. */
  allows(address: string): boolean {
    return this.list === null || this.list.check(address, isIPv6(address) ? 'ipv6' : 'ipv4');
  }
}
