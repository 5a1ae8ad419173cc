import type { ServerResponse } from 'node:http';
import type { NotInRotation } from '../forward/rotation.js';
import { CORS_RESPONSE_HEADERS, withRequestId } from '../http/headers.js';
import { noteCode } from '../observe/call.js';

/** What /readyz asks of the process it runs in. */
export interface Readiness {
  /** Stopping: SIGTERM arrived, so a load balancer should stop sending at once. */
  draining(): boolean;
  /** The store answers a read. */
  storeAnswers(): boolean;
  /** Anything else that must be up (the workers, in a cluster); null when ready. */
  notReady?(): string | null;
  /**
   * Provider credentials not in rotation now, and why (observe/credentials.ts): listed in the
   * body, without changing the status (the process still serves, with the others).
   */
  notInRotation?(): readonly NotInRotation[];
}

const HEADERS = ['content-type', 'application/json', 'cache-control', 'no-store', ...CORS_RESPONSE_HEADERS];

/** GET /healthz: 200 while the process serves. */
export function serveHealthz(res: ServerResponse, requestId: string): void {
  res.writeHead(200, withRequestId(HEADERS, requestId));
  res.end('{"status":"ok"}');
}

/**
 * GET /readyz: 200 when the store answers and the process is not draining, else 503 saying which;
 * `notInRotation` lists the provider credentials not in rotation and why, if any.
 */
export function serveReadyz(res: ServerResponse, requestId: string, readiness: Readiness): void {
  const why = readiness.draining() ? 'draining' : !readiness.storeAnswers() ? 'store_unavailable' : readiness.notReady?.() ?? null;
  // A 503 is counted and logged with its reason as its code, not as a provider's failure.
  if (why !== null) noteCode(res, why);
  const out = readiness.notInRotation?.() ?? [];
  res.writeHead(why === null ? 200 : 503, withRequestId(HEADERS, requestId));
  res.end(JSON.stringify(out.length === 0 ? { status: why ?? 'ready' } : { status: why ?? 'ready', notInRotation: out.map(shown) }));
}

/** An entry as /readyz shows it: its times in ISO-8601. */
function shown(entry: NotInRotation): Record<string, unknown> {
  return {
    provider: entry.provider, credential: entry.credential, reason: entry.reason, ...(entry.model === undefined ? {} : { model: entry.model }),
    since: new Date(entry.since).toISOString(), until: entry.until === null ? null : new Date(entry.until).toISOString(),
  };
}
