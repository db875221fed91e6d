import type { NodeSnapshot, SnapshotListener } from '@slb/model';

interface BulkOptions {
  address: string;
  port: number;
  backends: number;
  /** Listeners in a row that share their servers, as one server group's do. Default 1. */
  group?: number;
  /** The listener's `sessionSync` switch. Default false. */
  sessionSync?: boolean;
}
/** One TCP or UDP listener (every third is UDP) on `address`:`port` with `backends` servers nobody serves (see `group`). */
export function bulkListener(n: number, options: BulkOptions): SnapshotListener;
/** A node snapshot of `listeners` bulk listeners from `portBase` on, after `first` (listeners kept as given). */
export function largeL4Snapshot(options: {
  version: number;
  listeners: number;
  backends: number;
  address: string;
  portBase: number;
  first?: SnapshotListener[];
  /** See BulkOptions.group. */
  group?: number;
  /** See BulkOptions.sessionSync. */
  sessionSync?: boolean;
}): NodeSnapshot;
