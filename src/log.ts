import pino from 'pino';

/**
 * Operational log: one JSON line per event on stderr (pino), the same shape as the access log
 * on stdout: `time` (ISO-8601), `level`, `event`, then the event's fields. Callers pass only
 * what is safe to show — request ids, key prefixes, model ids — never a key, a body or a
 * header value. Synchronous: these lines are rare, and the last ones before an exit must not
 * be lost.
 */
const logger = pino(
  {
    base: null,
    messageKey: 'event',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  },
  pino.destination({ fd: 2, sync: true }),
);

export function log(level: 'info' | 'warn' | 'error', event: string, fields: Record<string, unknown> = {}): void {
  if (level === 'info' && process.env.TOLLGATE_QUIET) return;
  logger[level](fields, event);
}

/** An error as a log field: its stack where it has one. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.stack ?? err.message : String(err);
}
