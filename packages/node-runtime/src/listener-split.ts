import { type Static, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  CredentialMessage,
  ErrorMessage,
  L4DeltaMessage,
  L4SnapshotMessage,
  L7DeltaMessage,
  L7Listener,
  L7NodeSnapshot,
  L7SnapshotMessage,
  type ListenerFailure,
  MAX_LISTENERS_PER_NODE,
  MAX_SERVERS_PER_GROUP,
  NodeSnapshot,
  SnapshotListener,
} from '@slb/model';
import { LooseBackendSets } from './backend-sets.js';
import { Slicer } from './slicer.js';

// One tenant's listener that a node cannot read must not stop every other tenant's config on that node.
// So a controller message is checked in two steps: the envelope (versions, the L7 pool, that listeners
// are objects with an id), then each listener on its own. A listener that fails is reported in the ack
// and the node keeps what it had for it; the rest of the config is applied.

const ListenerItem = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
const Items = Type.Array(ListenerItem);
const strict = { additionalProperties: false } as const;

const Envelope = Type.Union([
  Type.Object(
    {
      ...L4SnapshotMessage.properties,
      snapshot: Type.Object(
        { ...NodeSnapshot.properties, listeners: Items, backendSets: Type.Optional(LooseBackendSets) },
        strict,
      ),
    },
    strict,
  ),
  Type.Object(
    {
      ...L7SnapshotMessage.properties,
      snapshot: Type.Object({ ...L7NodeSnapshot.properties, listeners: Items }, strict),
    },
    strict,
  ),
  Type.Object({ ...L4DeltaMessage.properties, upsert: Items, backendSets: Type.Optional(LooseBackendSets) }, strict),
  Type.Object({ ...L7DeltaMessage.properties, upsert: Items }, strict),
  ErrorMessage,
  CredentialMessage,
]);

/** The controller message with its listeners not yet checked one by one. */
export const checkEnvelope = TypeCompiler.Compile(Envelope);
export type EnvelopeMessage = Static<typeof Envelope>;

const listenerCheck = { l4: TypeCompiler.Compile(SnapshotListener), l7: TypeCompiler.Compile(L7Listener) };
/**
 * An L4 listener whose backends came from a set, checked once for every listener naming it. Its addresses'
 * uniqueness is checked apart (ownFieldsProblem): TypeBox's `uniqueItems` hashes every item byte by byte, and
 * at 10,000 listeners that hashing was most of the check.
 */
const checkOwnFields = TypeCompiler.Compile(
  Type.Object(
    {
      ...SnapshotListener.properties,
      bindAddresses: Type.Array(SnapshotListener.properties.bindAddresses.items, {
        minItems: SnapshotListener.properties.bindAddresses.minItems,
        maxItems: SnapshotListener.properties.bindAddresses.maxItems,
      }),
      backends: Type.Array(Type.Unknown(), { maxItems: MAX_SERVERS_PER_GROUP }),
    },
    strict,
  ),
);

/** The first problem of a listener whose backends came from a set; undefined when it has none. */
function ownFieldsProblem(item: { id: string }): string | undefined {
  if (!checkOwnFields.Check(item)) {
    const first = checkOwnFields.Errors(item).First();
    return `${first?.path || '/'}: ${first?.message ?? 'invalid listener'}`;
  }
  const addresses = (item as { bindAddresses: string[] }).bindAddresses;
  return new Set(addresses).size === addresses.length
    ? undefined
    : '/bindAddresses: Expected array elements to be unique';
}

/** The first problem of a listener as its kind's schema sees it; undefined when it has none. */
function listenerProblem(kind: 'l4' | 'l7', item: { id: string }): string | undefined {
  const check = listenerCheck[kind];
  if (check.Check(item)) return undefined;
  const first = check.Errors(item).First();
  return `${first?.path || '/'}: ${first?.message ?? 'invalid listener'}`;
}

export interface SplitListeners<L> {
  /** The listeners to apply: the valid ones, in their order. */
  valid: L[];
  failed: ListenerFailure[];
}

/**
 * Checks each listener against its kind's schema; a duplicate id and those past MAX_LISTENERS_PER_NODE
 * fail too. Each failure names the listener and the first problem found in it. Checked in slices (a fleet's
 * snapshot takes seconds to check), so the node keeps heartbeating and forwarding meanwhile.
 * `backendsChecked`: listeners whose backends came from a set already checked (resolveBackendSets).
 */
export async function splitListeners<L extends { id: string }>(
  kind: 'l4' | 'l7',
  items: { id: string }[],
  slicer = new Slicer(),
  backendsChecked: WeakSet<object> = new WeakSet(),
): Promise<SplitListeners<L>> {
  const valid: L[] = [];
  const failed: ListenerFailure[] = [];
  const seen = new Set<string>();
  for (const [i, item] of items.entries()) {
    await slicer.pause();
    if (seen.has(item.id)) {
      failed.push({ listenerId: item.id, reason: `listeners/${i}: duplicate listener id` });
      continue;
    }
    seen.add(item.id);
    const problem = backendsChecked.has(item) ? ownFieldsProblem(item) : listenerProblem(kind, item);
    if (problem !== undefined) {
      failed.push({ listenerId: item.id, reason: problem.slice(0, 500) });
      continue;
    }
    if (valid.length >= MAX_LISTENERS_PER_NODE) {
      failed.push({ listenerId: item.id, reason: `past the ${MAX_LISTENERS_PER_NODE} listeners a node runs` });
      continue;
    }
    valid.push(item as unknown as L);
  }
  return { valid, failed };
}
