/** Reconnect delays: doubling from `baseMs`, capped, with ±50% jitter so a fleet does not reconnect in lockstep. */
export function reconnectDelay(
  attempt: number,
  baseMs = 200,
  capMs = 3000,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 16));
  return Math.min(capMs, Math.round(ceiling * (0.5 + random())));
}
