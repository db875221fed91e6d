import type { Store } from '@slb/db';
import type { CompiledLb, L4ListenerConfig } from './compile-lb.js';
import { compileLbs } from './compiler.js';
import { type LbSummary, lbOfListener, lbsByIds, listLbs } from './lb-rows.js';

/**
 * The hub's work, counted in LBs: what a write costs, in a unit that tests can hold against the fleet's size
 * (a write to one LB should compile and diff that LB, not the fleet).
 */
export interface ControlWork {
  /** LBs compiled from their rows. */
  lbsCompiled: number;
  /** LBs diffed against what a node was sent, summed over the nodes. */
  lbsDiffed: number;
}

/** What a refresh compiled again, and whether the change can reach beyond those LBs. */
export interface Refreshed {
  changed: string[];
  beyond: boolean;
}

/**
 * The fleet's compiled LBs, reused while their configVersion holds and no health report touched them.
 * Writes name the LB they changed, so a refresh re-reads only those; without a name, the whole fleet.
 */
export class CompileCache {
  /** Every LB, as last read. */
  lbs: LbSummary[] = [];
  private readonly compiled = new Map<string, CompiledLb>();
  /** LBs a health report touched: compiled again even at the same configVersion. */
  private readonly dirty = new Set<string>();
  /** LBs named by writes since the last refresh, or every LB (`scanAll`). */
  private readonly touched = new Set<string>();
  private scanAll = true;

  constructor(
    private readonly store: Store,
    private readonly openKey: (stored: string) => string,
    private readonly work: ControlWork = { lbsCompiled: 0, lbsDiffed: 0 },
  ) {}

  get(lbId: string): CompiledLb | undefined {
    return this.compiled.get(lbId);
  }

  get all(): ReadonlyMap<string, CompiledLb> {
    return this.compiled;
  }

  /** A write changed this LB (undefined: something the fleet shares). */
  touch(lbId?: string): void {
    if (lbId === undefined) this.scanAll = true;
    else this.touched.add(lbId);
  }

  /** A health report changed a listener's backends: its LB is compiled again. Returns that LB. */
  async healthChanged(listenerId: string): Promise<string | undefined> {
    const lb = await lbOfListener(this.store, listenerId);
    if (lb !== undefined) this.dirty.add(lb);
    return lb;
  }

  /**
   * Compiles what changed since the last call; LBs whose version and health are unchanged are reused.
   * `beyond`: the change can reach beyond the LBs compiled again (an LB's VIP changed, the L4 ports of an LB
   * without one, which shares the node's address with others, or a placement mode; on a full read, LBs
   * added or removed): every node then needs a full diff. One refresh at a time (the hub's recompiles are);
   * what is touched while it reads is kept for the next. A refresh that fails (the database unreachable)
   * leaves the next one to read the whole fleet: what it was to compile is not lost.
   */
  async refresh(): Promise<Refreshed> {
    const dirty = new Set(this.dirty);
    this.dirty.clear();
    const scope = this.scanAll ? null : [...new Set([...this.touched, ...dirty])];
    this.scanAll = false;
    this.touched.clear();
    try {
      return scope ? await this.refreshScoped(scope) : await this.refreshAll(dirty);
    } catch (err) {
      this.scanAll = true;
      for (const id of dirty) this.dirty.add(id);
      throw err;
    }
  }

  /**
   * Re-reads only the named LBs: an LB created is appended (where a full read, in id order, puts it too: ids grow with time),
   * one deleted is dropped. Nothing here reads the whole fleet.
   */
  private async refreshScoped(scope: string[]): Promise<Refreshed> {
    const rows = await lbsByIds(this.store, scope);
    const gone = new Set(scope.filter((id) => !rows.has(id) && this.compiled.has(id)));
    const known = new Set(this.compiled.keys());
    let beyond = false;
    this.lbs = this.lbs.flatMap((lb) => {
      if (gone.has(lb.id)) return [];
      const row = rows.get(lb.id);
      if (row === undefined) return [lb];
      if (row.mode !== lb.mode || row.nodeCount !== lb.nodeCount) beyond = true;
      return [row];
    });
    for (const id of scope) {
      const row = rows.get(id);
      if (row !== undefined && !known.has(id)) this.lbs.push(row);
    }
    for (const id of gone) {
      if (sharesNodeAddress(this.compiled.get(id))) beyond = true;
      this.compiled.delete(id);
    }
    if (await this.compile(scope.filter((id) => rows.has(id)))) beyond = true;
    return { changed: scope.filter((id) => rows.has(id) || gone.has(id)), beyond };
  }

  private async refreshAll(dirty: ReadonlySet<string>): Promise<Refreshed> {
    const before = this.lbs;
    this.lbs = await listLbs(this.store);
    const live = new Set(this.lbs.map((lb) => lb.id));
    for (const id of this.compiled.keys()) if (!live.has(id)) this.compiled.delete(id);
    let beyond =
      before.length !== this.lbs.length ||
      this.lbs.some(
        (lb, i) => before[i]?.id !== lb.id || before[i]?.mode !== lb.mode || before[i]?.nodeCount !== lb.nodeCount,
      );
    const stale = this.lbs
      .filter((lb) => {
        const cached = this.compiled.get(lb.id);
        return !cached || cached.configVersion !== lb.configVersion || dirty.has(lb.id);
      })
      .map((lb) => lb.id);
    if (await this.compile(stale)) beyond = true;
    return { changed: stale, beyond };
  }

  /**
   * Compiles these LBs into the cache; true when the ports one claims on the node's own address moved (an
   * LB without a VIP shares it, so its ports can collide with another LB's), or its VIP did. An LB on its
   * own VIP meets no other LB: its ports moving concerns it alone.
   */
  private async compile(lbIds: string[]): Promise<boolean> {
    let moved = false;
    this.work.lbsCompiled += lbIds.length;
    for (const [id, lb] of await compileLbs(this.store, lbIds, this.openKey)) {
      const old = this.compiled.get(id);
      if (old === undefined) moved ||= sharesNodeAddress(lb);
      else if (old.address !== lb.address) moved = true;
      else if ((sharesNodeAddress(old) || sharesNodeAddress(lb)) && l4PortKeys(old) !== l4PortKeys(lb)) moved = true;
      this.compiled.set(id, lb);
    }
    return moved;
  }
}

/** An LB without a VIP whose L4 listeners bind the node's own address, where other such LBs' do. */
function sharesNodeAddress(lb: CompiledLb | undefined): boolean {
  return lb !== undefined && lb.address === null && lb.l4.length > 0;
}

/** An L4 listener's claim on an address of its node: transport, address and port. */
export function l4PortKey(config: L4ListenerConfig, address: string): string {
  return `${config.protocol === 'udp' ? 'udp' : 'tcp'}/${address}/${config.port}`;
}

function l4PortKeys(lb: CompiledLb): string {
  return `${lb.address}:${lb.l4.map((l) => l4PortKey(l.config, '')).join(',')}`;
}
