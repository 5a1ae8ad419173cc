import { randomBytes } from 'node:crypto';
import type { CommitListener } from '../domain/interfaces.js';
import { log } from '../log.js';

/** What both backends do alike around a call: new ids, and telling listeners safely. */

/** A new key or account id: `key_…`, `acct_…` (64 random bits, hex). */
export function newId(kind: string): string {
  return `${kind}_${randomBytes(8).toString('hex')}`;
}

/** Tells one listener of a commit; one that throws must not keep the others from being told. */
export function tell<A, B>(listener: (a: A, b: B) => void, a: A, b: B): void {
  try {
    listener(a, b);
  } catch (err) {
    log('error', 'commit_listener_failed', { error: String(err) });
  }
}

/** Tells a settlement's listener that it is committed (`error` null) or why not, as `tell` does. */
export function tellCommitted(listener: CommitListener, error: unknown): void {
  try {
    listener.committed(error);
  } catch (err) {
    log('error', 'commit_listener_failed', { error: String(err) });
  }
}
