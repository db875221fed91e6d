/**
 * Names the backend sets of one message or saved file (WireNodeSnapshot): each distinct key (the backends'
 * JSON text on the controller, the backends array itself on a node) gets an id on first sight, and the sets
 * are written once, in that order, after the listeners that name them.
 */
export class BackendSetNames<K> {
  private readonly ids = new Map<K, string>();

  get size(): number {
    return this.ids.size;
  }

  /** The id of the set with these backends, new on first sight. */
  name(key: K): string {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = `s${this.ids.size}`;
      this.ids.set(key, id);
    }
    return id;
  }

  /** Each set as a JSON element of `backendSets`, its backends' text from `backendsJson`. */
  *texts(backendsJson: (key: K) => string): Generator<string> {
    for (const [key, id] of this.ids) yield `{"id":"${id}","backends":${backendsJson(key)}}`;
  }
}
