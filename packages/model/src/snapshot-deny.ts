import { type Static, Type } from '@sinclair/typebox';
import { Port, StrictObject } from './common.js';

/** A backend deny entry as the nodes and health workers receive it: a network and, when set, only that port. */
export const SnapshotBackendDeny = StrictObject(
  {
    cidr: Type.String({ minLength: 2, maxLength: 49, pattern: '^[0-9a-fA-F:.]+/[0-9]{1,3}$' }),
    port: Type.Optional(Port),
  },
  { title: 'SnapshotBackendDeny' },
);
export type SnapshotBackendDeny = Static<typeof SnapshotBackendDeny>;

/** Most deny entries a snapshot carries (cloud endpoints, node addresses, the operator's extras). */
export const MAX_BACKEND_DENY_ENTRIES = 10_000;

/** The deny set field of both snapshot kinds: backends matching it are never connected to or probed. */
export const SnapshotBackendDenyList = Type.Array(SnapshotBackendDeny, {
  maxItems: MAX_BACKEND_DENY_ENTRIES,
  description: "the cloud's own endpoints: a backend matching one is skipped (never connected to)",
});
