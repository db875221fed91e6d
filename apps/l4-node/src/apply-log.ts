/** Per-listener lines an apply logs at info; past this they go to debug and one info line counts them. */
export const LISTENER_LINES_PER_APPLY = 100;

interface ApplyLogger {
  info(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/**
 * The listener lines of one apply ('listener started', 'listener removed', …). A node joining a fleet
 * started 10,000 listeners and wrote 10,000 info lines, a sixth of its apply's CPU and nothing an operator
 * reads one by one: an apply that touches more than LISTENER_LINES_PER_APPLY listeners logs them at debug,
 * and `summary()` says how many of each there were.
 */
export class ApplyLog {
  private readonly counts = new Map<string, number>();
  private readonly quiet: boolean;

  /** @param touched how many listeners this apply may log a line for */
  constructor(
    private readonly logger: ApplyLogger,
    touched: number,
  ) {
    this.quiet = touched > LISTENER_LINES_PER_APPLY;
  }

  listener(fields: object, msg: string): void {
    if (!this.quiet) {
      this.logger.info(fields, msg);
      return;
    }
    this.counts.set(msg, (this.counts.get(msg) ?? 0) + 1);
    this.logger.debug(fields, msg);
  }

  /** One line with the count of each kind logged at debug; nothing when every line went out at info. */
  summary(version: number): void {
    if (this.counts.size === 0) return;
    this.logger.info({ version, listeners: Object.fromEntries(this.counts) }, 'listener changes (each at debug)');
  }
}
