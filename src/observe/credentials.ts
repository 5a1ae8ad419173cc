import { log } from '../log.js';
import type { NotInRotation, OutReason, RotationListener } from '../forward/rotation.js';

/**
 * What the operator sees of the providers' credentials (forward/rotation.ts keeps their state):
 * a credential taken out of rotation is named once on stderr when it goes out (and when it comes
 * back), and /readyz lists every credential not in rotation and why, without changing its
 * status: the process still serves, with the other credentials and providers.
 *
 * Rotation is each process's own. In a cluster, each worker tells its primary its list whenever
 * it changes, and the primary tells every worker the others', so that /readyz says the same
 * whichever process answers it; a rest's end is read from its `until`, so a list needs no
 * message when a rest is over.
 */
export class CredentialWatch implements RotationListener {
  /** This process's list (set by the gateway once its credentials are built). */
  private local: () => NotInRotation[] = () => [];
  /** What the other processes of a cluster see (`seenElsewhere`). */
  private elsewhere: readonly NotInRotation[] = [];

  constructor(
    /** The clock rests are read against. */
    private readonly now: () => number = Date.now,
    /** Told this process's list whenever it changes (a cluster's worker tells its primary). */
    private readonly changed: ((list: readonly NotInRotation[]) => void) | null = null,
  ) {}

  /** Where this process's list comes from. */
  watch(local: () => NotInRotation[]): void {
    this.local = local;
  }

  out(provider: string, credential: string, reason: OutReason): void {
    if (reason === 'unauthenticated') {
      log('error', 'provider_credential_refused', {
        provider, credential,
        consequence: 'the provider answers 401 to this credential: it is out of rotation (its calls go to the provider\'s other credentials, else are answered 502 upstream_unavailable, nothing billed) until a call sent to it once a minute succeeds; check the variable its apiKeyEnv names',
      });
    } else {
      log('error', 'provider_credential_quota_exhausted', {
        provider, credential,
        consequence: 'the provider answers 429 insufficient_quota to this credential: it is out of rotation until a call sent to it once a minute succeeds; add credit to its organisation',
      });
    }
    this.tell();
  }

  back(provider: string, credential: string): void {
    log('info', 'provider_credential_back', { provider, credential });
    this.tell();
  }

  rested(): void {
    this.tell();
  }

  /** What the other processes of a cluster see (told by the primary). */
  seenElsewhere(list: readonly NotInRotation[]): void {
    this.elsewhere = list;
  }

  /** Every credential not in rotation now, here or elsewhere in the cluster, in a stable order. */
  notInRotation(): NotInRotation[] {
    return current([...this.local(), ...this.elsewhere], this.now());
  }

  private tell(): void {
    this.changed?.(this.local());
  }
}

/**
 * The entries of `list` still in force at `now` (rests not yet over), one per credential, reason
 * and model (the latest `since` kept), sorted by provider, credential, reason and model.
 */
export function current(list: readonly NotInRotation[], now: number): NotInRotation[] {
  const byWhat = new Map<string, NotInRotation>();
  for (const entry of list) {
    if (entry.until !== null && entry.until <= now) continue;
    const what = `${entry.provider}\n${entry.credential}\n${entry.reason}\n${entry.model ?? ''}`;
    const seen = byWhat.get(what);
    if (seen === undefined || entry.since > seen.since) byWhat.set(what, entry);
  }
  return [...byWhat.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, entry]) => entry);
}
