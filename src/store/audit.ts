import type { AuditEntry } from '../domain/types.js';

/**
 * The audit entry an issuer change is to write with itself, for both backends: `audited()` sets
 * how to make it from the change's result, and the store method making the change takes it, once,
 * and writes it in the same transaction or script as the change.
 */
export class PendingAudit {
  private make: ((result: unknown) => AuditEntry | undefined) | null = null;

  async around<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    this.make = entry as (result: unknown) => AuditEntry | undefined;
    try {
      return await change();
    } finally {
      this.make = null;
    }
  }

  /**
   * How to make the pending entry from the change's result (null when none is pending), taken
   * once, synchronously, before the change's first await.
   */
  take(): ((result: unknown) => AuditEntry | undefined) | null {
    const make = this.make;
    this.make = null;
    return make;
  }
}
