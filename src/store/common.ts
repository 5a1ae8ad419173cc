import { randomBytes } from 'node:crypto';
import type { CommitListener } from '../domain/interfaces.js';
import { errorText, log } from '../log.js';

/** What both backends do alike around a call: new ids, and telling listeners safely. */

/** A new key or account id: `key_…`, `acct_…` (64 random bits, hex). */
export function newId(kind: string): string {
  return `${kind}_${randomBytes(8).toString('hex')}`;
}

/**
 * Tells one listener of a commit; one that throws must not keep the others from being told.
 * The gateway's listeners end their own call on a throw (server.ts `failed`), so a throw that
 * reaches here cannot be tied to a call: once every listener was told, it is thrown again on
 * its own tick, where the process's handler (cli/serve.ts) logs it, drains and exits.
 */
export function tell<A, B>(listener: (a: A, b: B) => void, a: A, b: B): void {
  try {
    listener(a, b);
  } catch (err) {
    listenerFailed(err);
  }
}

/** Tells a settlement's listener that it is committed (`error` null) or why not, as `tell` does. */
export function tellCommitted(listener: CommitListener, error: unknown): void {
  try {
    listener.committed(error);
  } catch (err) {
    listenerFailed(err);
  }
}

/** A store listener threw (see `tell`): logged, and thrown again once the listeners of its commit were told. */
export function listenerFailed(err: unknown): void {
  log('error', 'store_listener_failed', { error: errorText(err) });
  process.nextTick(rethrow, err);
}

function rethrow(err: unknown): never {
  throw err;
}
