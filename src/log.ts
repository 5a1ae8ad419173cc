/**
 * Operational log: one JSON line per event on stderr. Callers pass only what is safe to show —
 * request ids, key prefixes, model ids — never a key, a body or a header value.
 */
export function log(level: 'info' | 'warn' | 'error', event: string, fields: Record<string, unknown> = {}): void {
  if (level === 'info' && process.env.TOLLGATE_QUIET) return;
  process.stderr.write(`${JSON.stringify({ t: new Date().toISOString(), level, event, ...fields })}\n`);
}
