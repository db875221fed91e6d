// A channel message's text assembled from JSON already serialised (each compiled listener's, once), instead of
// building its objects again to serialise them whole: the same bytes, without the cost at a fleet's size.

/**
 * An object's JSON with fields appended: the text of `{ ...object, ...fields }` when `fields` (JSON members,
 * without braces) name no key the object has, as the per-node fields (bindAddress, bindAddresses,
 * reusePort) never name a compiled listener's.
 */
export function withFields(objectJson: string, fields: string): string {
  return objectJson === '{}' ? `{${fields}}` : `${objectJson.slice(0, -1)},${fields}}`;
}

/**
 * A message's JSON, its empty array `key` filled with these elements' JSON. The first `"key":[]` is the array:
 * what precedes it in a channel message is the type, kind, versions and a timestamp, and nothing free-form
 * (a string can hold `"key":[]` only escaped).
 */
export function withListeners(messageJson: string, key: string, elements: string[]): string {
  const marker = `"${key}":[`;
  const at = messageJson.indexOf(`${marker}]`);
  if (at < 0) throw new Error(`no empty "${key}" array in the message`);
  const end = at + marker.length;
  return `${messageJson.slice(0, end)}${elements.join(',')}${messageJson.slice(end)}`;
}
