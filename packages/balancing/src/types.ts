/** A backend as the algorithms see it: a stable id (e.g. `srv-…`) and a weight. */
export interface WeightedBackend {
  /** Stable identifier; Maglev tables are built in the order of these ids, so they must be unique. */
  readonly id: string;
  /** Relative capacity, 0–100 (0 takes no new flows). */
  readonly weight: number;
}

/** The transport 5-tuple of a flow. Addresses are textual (as node:net reports them). */
export interface FlowKey {
  readonly srcAddr: string;
  readonly srcPort: number;
  readonly dstAddr: string;
  readonly dstPort: number;
  readonly protocol: 'tcp' | 'udp';
}
