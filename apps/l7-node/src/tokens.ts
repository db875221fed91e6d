// Case-insensitive matching of header names and list tokens against lower-case constants, pure. Names are
// ASCII tokens, so comparing char codes needs no lower-cased copy of each name a head carries: on a backend's
// usual response head those copies (and hashing them) were a visible part of the parse.

/** Whether `s[at..at+lower.length)` is `lower` (lower-case ASCII) in any ASCII letter case. */
function matchesAt(s: string, at: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = s.charCodeAt(at + i);
    const l = lower.charCodeAt(i);
    // Only A-Z fold: a byte that differs by 0x20 in any other range (CR and '-', say) is not the same letter.
    if (c !== l && !(c >= 65 && c <= 90 && c + 32 === l)) return false;
  }
  return true;
}

/** Whether `buf[at..at+lower.length)` is `lower` (lower-case ASCII) in any ASCII letter case: matchesAt on bytes. */
export function bytesMatch(buf: Uint8Array, at: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = buf[at + i]!;
    const l = lower.charCodeAt(i);
    if (c !== l && !(c >= 65 && c <= 90 && c + 32 === l)) return false;
  }
  return true;
}

/** Whether `name` is `lower` (a lower-case header name) in any ASCII letter case. */
export function isName(name: string, lower: string): boolean {
  return name.length === lower.length && matchesAt(name, 0, lower);
}

const isOws = (c: number): boolean => c === 32 || c === 9;

/**
 * Whether the comma list `list` (Connection, say) has the lower-case token `token` in any ASCII letter case,
 * elements trimmed of SP/HTAB as listTokens does.
 */
export function hasToken(list: string, token: string): boolean {
  const n = list.length;
  for (let i = 0; i <= n; ) {
    let end = list.indexOf(',', i);
    if (end < 0) end = n;
    let a = i;
    let b = end;
    while (a < b && isOws(list.charCodeAt(a))) a++;
    while (b > a && isOws(list.charCodeAt(b - 1))) b--;
    if (b - a === token.length && matchesAt(list, a, token)) return true;
    i = end + 1;
  }
  return false;
}
