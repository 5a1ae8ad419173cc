import { log } from '../log.js';

/** At most one stderr line per provider in this long while it keeps refusing. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * Providers refusing the gateway's own credential (their 401): the operator's problem, never a
 * tenant's. The first refusal, and then at most one a minute per provider, is a stderr line
 * naming the provider; /readyz names every provider refusing until a call to it is answered
 * with a 2xx again (or the process restarts, which is how a changed credential is taken up).
 * Readiness itself is not changed: the process still serves, and the other providers with it.
 */
export class CredentialRefusals {
  private readonly refusing = new Set<string>();
  private readonly loggedAt = new Map<string, number>();
  /** Providers the other processes of a cluster see refusing (`seenElsewhere`). */
  private elsewhere: readonly string[] = [];

  constructor(
    /** The clock the one-line-a-minute rule reads (injected by tests). */
    private readonly now: () => number = Date.now,
    /**
     * Told the providers this process sees refusing whenever that list changes (a cluster's
     * worker tells its primary).
     */
    private readonly changed: ((providers: readonly string[]) => void) | null = null,
  ) {}

  refused(provider: string): void {
    const now = this.now();
    const last = this.loggedAt.get(provider);
    if (last === undefined || now - last >= REFUSAL_LOG_INTERVAL_MS) {
      this.loggedAt.set(provider, now);
      log('error', 'provider_credential_refused', {
        provider,
        consequence: 'the provider answers 401 to the gateway\'s own credential: its calls are answered 502 upstream_unavailable, nothing billed; check the credential its apiKeyEnv names',
      });
    }
    if (this.refusing.has(provider)) return;
    this.refusing.add(provider);
    this.changed?.([...this.refusing]);
  }

  /** A 2xx from this provider: its credential is accepted (cheap when none is refused). */
  accepted(provider: string): void {
    if (this.refusing.size === 0 || !this.refusing.delete(provider)) return;
    this.changed?.([...this.refusing]);
  }

  /** What the other processes of a cluster see refusing (told by the primary). */
  seenElsewhere(providers: readonly string[]): void {
    this.elsewhere = providers;
  }

  /** The providers refusing now, by name: seen here or elsewhere in the cluster. */
  providers(): string[] {
    return [...new Set([...this.refusing, ...this.elsewhere])].sort();
  }
}
