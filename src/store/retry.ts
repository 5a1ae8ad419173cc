import { log } from '../log.js';

/**
 * What a failed commit leaves, the same on both backends: the settlements (and releases) of
 * calls that were forwarded but could not be committed. Their calls keep their holds and their
 * entries in flight; the charges are tried again, oldest first, until they commit or the
 * process exits. Whatever is left then is the fleet's, like any call of a dead process: settled
 * as `interrupted` once this process is gone (serveCalls). A settlement is idempotent by its call
 * id, so one that was committed after all (a lost reply) or settled meanwhile by the fleet is
 * not charged twice.
 *
 * Bounded: past MAX_PENDING, a failed settlement is not kept (logged `store_retry_full`); its
 * call stays in flight with its hold, for the fleet, as at exit.
 */
export const MAX_PENDING = 10_000;
/** How long after a failure (or a failed retry) the next retry runs. */
export const RETRY_MS = 1_000;

/** What one try of the kept items did: how many of them, from the first, are committed, and why it stopped short of the rest (null when it did not). */
export interface RetryOutcome {
  committed: number;
  failure: unknown;
}

export class RetryQueue<T> {
  private items: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private closed = false;

  /**
   * `commit` tries the items given, oldest first, and stops at the first that fails, so that they
   * commit in order; it resolves to how many it committed and what stopped it (or throws, when
   * none could be).
   */
  constructor(private readonly commit: (items: readonly T[]) => Promise<RetryOutcome>) {}

  get pending(): number {
    return this.items.length;
  }

  /** Keeps `item` to be tried again (false, logged, when MAX_PENDING are already kept). */
  add(item: T, requestId: string): boolean {
    if (this.items.length >= MAX_PENDING) {
      log('error', 'store_retry_full', { requestId, pending: this.items.length });
      return false;
    }
    this.items.push(item);
    this.arm();
    return true;
  }

  /** Tries the kept items now, oldest first; resolves to how many are still kept. */
  retry(): Promise<number> {
    if (this.running !== null) return this.running;
    if (this.items.length === 0) return Promise.resolve(0);
    // A commit that throws at once counts as one that failed.
    const running = new Promise<RetryOutcome>((resolve) => resolve(this.commit(this.items.slice())))
      .catch((failure: unknown): RetryOutcome => ({ committed: 0, failure }))
      .then(({ committed, failure }) => {
        // Whichever backend, and however far the try got: what is still kept is said, with why.
        if (committed < this.items.length) log('error', 'store_retry_failed', { pending: this.items.length - committed, error: String(failure) });
        this.items.splice(0, committed);
        this.running = null;
        if (this.items.length > 0) this.arm();
        return this.items.length;
      });
    this.running = running;
    return running;
  }

  /** At exit: one last try; what is still kept is left to the fleet (logged). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const left = await this.retry();
    if (left > 0) log('warn', 'settlements_left_to_fleet', { calls: left });
  }

  private arm(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.retry();
    }, RETRY_MS);
    this.timer.unref();
  }
}
