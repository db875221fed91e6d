import type { SnapshotBackend, SnapshotListener } from '@slb/model';

/**
 * Makes the listeners of one apply share equal backend objects, and equal backends arrays. Every listener
 * of a server group carries the group's servers, and JSON.parse makes each its own copy: a fleet's 10,000
 * listeners held 500,000 backend objects (and their id strings) for 100,000 servers. Listeners only read
 * their backends, so equal ones can be one object; a shared array is also serialised once when the
 * snapshot is saved (state-file.ts). Per apply, so no table outlives it.
 */
export class BackendInterner {
  private readonly seen = new Map<string, SnapshotBackend>();
  /** Arrays seen so far, by their first backend. */
  private readonly arrays = new Map<SnapshotBackend, SnapshotBackend[][]>();

  /**
   * Each array already interned, and the array it became: the listeners naming one backend set of the
   * channel come with one array, which needs interning once.
   */
  private readonly done = new Map<SnapshotListener['backends'], SnapshotListener['backends']>();

  /** Replaces in place each backend of `l` equal to one seen before in this apply, then its array. */
  intern(l: SnapshotListener): void {
    const given = l.backends;
    const known = this.done.get(given);
    if (known !== undefined) {
      l.backends = known;
      return;
    }
    this.internArray(l);
    this.done.set(given, l.backends);
  }

  private internArray(l: SnapshotListener): void {
    const backends = l.backends as SnapshotBackend[];
    for (let i = 0; i < backends.length; i++) {
      const b = backends[i]!;
      const known = this.seen.get(b.serverId);
      if (known === undefined) this.seen.set(b.serverId, b);
      else if (known !== b && sameBackend(known, b)) backends[i] = known;
    }
    const first = backends[0];
    if (first === undefined) return;
    const candidates = this.arrays.get(first);
    const twin = candidates?.find((a) => a.length === backends.length && a.every((b, i) => b === backends[i]));
    if (twin !== undefined) l.backends = twin;
    else if (candidates !== undefined) candidates.push(backends);
    else this.arrays.set(first, [backends]);
  }
}

/** The schema allows no other fields (StrictObject), so these five are the whole object. */
function sameBackend(a: SnapshotBackend, b: SnapshotBackend): boolean {
  return a.address === b.address && a.port === b.port && a.weight === b.weight && a.healthy === b.healthy;
}
