import { log } from '../log.js';
import type { UsageStore } from '../domain/interfaces.js';
import type { ResponseCursor } from '../domain/types.js';

const DAY_MS = 86_400_000;

export interface RetentionOptions {
  retentionDays: number;
  /** Owner records of stored responses older than this are deleted too, where the store does not expire them itself (unset: they are not swept). */
  responseRetentionDays?: number;
  /** Records deleted per transaction (default 500). */
  batch?: number;
  /** The clock (tests inject one). */
  now?: () => number;
  /** Time between sweeps (default one hour); the first runs `firstAfterMs` after start. */
  everyMs?: number;
  firstAfterMs?: number;
}

/**
 * Deletes usage records older than `retentionDays` (and, on LMDB, owner records of stored
 * responses older than `responseRetentionDays`: Redis expires those by a TTL), in small batches, off the request path:
 * each batch is one short transaction (LMDB) or script call (Redis), and the next batch waits for the event
 * loop to have served what arrived meanwhile (setImmediate). Daily totals are kept, so the
 * usage page's chart and the admin API's totals outlive the records. Cost per batch and data
 * growth: bench/retention.ts, README (Operating it).
 */
export class RetentionSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private stopped = false;
  private readonly batch: number;
  private readonly now: () => number;

  constructor(private readonly store: UsageStore, private readonly options: RetentionOptions) {
    this.batch = options.batch ?? 500;
    this.now = options.now ?? Date.now;
  }

  start(): void {
    const every = this.options.everyMs ?? 3_600_000;
    const tick = (): void => {
      this.timer = setTimeout(() => {
        void this.sweep().catch((err: unknown) => log('error', 'retention_sweep_failed', { error: String(err) })).finally(() => {
          if (!this.stopped) tick();
        });
      }, this.timer === null ? this.options.firstAfterMs ?? 60_000 : every);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One whole sweep; resolves to the number of records deleted (usage and owner records). */
  sweep(): Promise<number> {
    this.running ??= this.run().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async run(): Promise<number> {
    const now = this.now();
    const cutoff = now - this.options.retentionDays * DAY_MS;
    let from: string | null = '';
    let total = 0;
    while (from !== null && !this.stopped) {
      const { deleted, next } = await this.store.deleteUsageBefore(cutoff, this.batch, from);
      total += deleted;
      from = next;
      if (from !== null) await nextTurn();
    }
    if (total > 0) log('info', 'retention_swept', { deleted: total, before: new Date(cutoff).toISOString() });
    const days = this.options.responseRetentionDays;
    return days === undefined ? total : total + await this.sweepResponses(now - days * DAY_MS);
  }

  /** Owner records made before `cutoff`, where the store keeps them until deleted (LMDB). */
  private async sweepResponses(cutoff: number): Promise<number> {
    const store = this.store;
    if (store.deleteResponsesBefore === undefined) return 0;
    let from: ResponseCursor | null = null;
    let total = 0;
    do {
      if (this.stopped) break;
      const { deleted, next }: { deleted: number; next: ResponseCursor | null } = await store.deleteResponsesBefore(cutoff, this.batch, from);
      total += deleted;
      from = next;
      if (from !== null) await nextTurn();
    } while (from !== null);
    if (total > 0) log('info', 'retention_swept_responses', { deleted: total, before: new Date(cutoff).toISOString() });
    return total;
  }
}

/** Lets the event loop serve what arrived meanwhile before the next batch. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
