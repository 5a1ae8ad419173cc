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
 * call stays in flight with its hold, for the fleet, as at exit. Releases give way to
 * settlements: while the store fails, every admission refused 503 keeps a release (its script
 * may have run and taken a slot or a hold, its reply lost), hundreds a second, where the
 * settlements are a few; a full queue drops its oldest release for a settlement, and a new release
 * rather than a settlement. A release dropped leaves at most a slot or a hold taken, never a
 * charge lost, and the fleet frees it as at exit.
 */
export const MAX_PENDING = 10_000;
/** How long after a failure (or a failed retry) the next retry runs. */
export const RETRY_MS = 1_000;

/** What one try of the kept items did: how many of them, from the first, are committed, and why it stopped short of the rest (null when it did not). */
export interface RetryOutcome {
  committed: number;
  failure: unknown;
}

/** What a kept item does: a settlement charges a call; a release only frees what a call took. */
export type RetryKind = 'settlement' | 'release';

export class RetryQueue<T> {
  private items: T[] = [];
  /** Each item's kind and request id, in the items' order. */
  private kinds: RetryKind[] = [];
  private ids: string[] = [];
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

  /**
   * Keeps `item` to be tried again. When MAX_PENDING are already kept, a settlement takes the
   * place of the oldest release kept; otherwise the item is not kept (false). What is dropped is
   * logged, `store_retry_full`, with its request id and kind.
   */
  add(item: T, requestId: string, kind: RetryKind = 'settlement'): boolean {
    if (this.items.length >= MAX_PENDING) {
      const release = kind === 'settlement' ? this.kinds.indexOf('release') : -1;
      if (release === -1) {
        log('error', 'store_retry_full', { requestId, kind, pending: this.items.length });
        return false;
      }
      log('error', 'store_retry_full', { requestId: this.ids[release], kind: 'release', pending: this.items.length });
      this.items.splice(release, 1);
      this.kinds.splice(release, 1);
      this.ids.splice(release, 1);
    }
    this.items.push(item);
    this.kinds.push(kind);
    this.ids.push(requestId);
    this.arm();
    return true;
  }

  /** Tries the kept items now, oldest first; resolves to how many are still kept. */
  retry(): Promise<number> {
    if (this.running !== null) return this.running;
    if (this.items.length === 0) return Promise.resolve(0);
    // A commit that throws at once counts as one that failed.
    const tried = this.items.slice();
    const running = new Promise<RetryOutcome>((resolve) => resolve(this.commit(tried)))
      .catch((failure: unknown): RetryOutcome => ({ committed: 0, failure }))
      .then(({ committed, failure }) => {
        // The committed are the first of those tried. Taken out by identity: a release may have
        // given way to a settlement meanwhile, so they are not always the first kept.
        if (committed > 0) this.forget(new Set(tried.slice(0, committed)));
        // Whichever backend, and however far the try got: what is still kept is said, with why.
        if (committed < tried.length) log('error', 'store_retry_failed', { pending: this.items.length, error: String(failure) });
        this.running = null;
        if (this.items.length > 0) this.arm();
        return this.items.length;
      });
    this.running = running;
    return running;
  }

  private forget(done: ReadonlySet<T>): void {
    let kept = 0;
    for (let i = 0; i < this.items.length; i++) {
      if (done.has(this.items[i]!)) continue;
      this.items[kept] = this.items[i]!;
      this.kinds[kept] = this.kinds[i]!;
      this.ids[kept] = this.ids[i]!;
      kept++;
    }
    this.items.length = this.kinds.length = this.ids.length = kept;
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
