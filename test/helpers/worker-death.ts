/**
 * A cluster worker that dies leaves no client connection hanging. With node:cluster's default
 * round-robin, the primary accepts each connection and hands it to a worker over IPC; a worker
 * that dies before acknowledging the handoff leaves the connection open in the primary,
 * unanswered, for ever (the client waits out its own timeout: ten minutes for the OpenAI SDK).
 * The workers accept from the shared socket themselves instead: a connection is in the kernel's
 * queue until a live worker takes it, or closed with the worker that had taken it.
 *
 * Made deterministic with SIGSTOP: a stopped worker takes nothing, as a worker a moment from
 * death would; under round-robin it is handed one of the connections all the same.
 */
import type { Test } from 'tap';
import { childPids, type Harness } from './harness.js';
import { exchange, parseResponses, portOf } from './raw-http.js';

/** A refused call on a connection of its own (raw-http's exchange): how it ended, and whether it was answered (false until it ended). */
function refusedCall(port: number): { ended: Promise<'answered' | 'closed'>; answered: () => boolean } {
  let answered = false;
  const ended = exchange(port, 'GET /v1/nope HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n').then(({ data }) => {
    answered = parseResponses(data).responses.length === 1;
    return answered ? 'answered' : 'closed';
  });
  return { ended, answered: () => answered };
}

/** `promise`'s value, or null when it has not settled within `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * On a gateway serving with `--workers 2`: stops one worker, opens eight connections, each with a
 * refused call, then kills the stopped worker. Every connection is answered by the other.
 */
export async function connectionsOutliveAStoppedWorker(t: Test, gw: Harness): Promise<void> {
  const port = portOf(gw.base);
  const [victim, survivor] = childPids(gw.proc.pid!);
  process.kill(victim!, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(victim!, 'SIGKILL');
    } catch {}
  });
  // Every connection is answered by the live worker while the other is stopped.
  const calls = Array.from({ length: 8 }, () => refusedCall(port));
  const outcomes = Promise.all(calls.map((c) => c.ended));
  const allAnswered = await within(outcomes, 10_000);
  t.equal(calls.filter((c) => !c.answered()).length, 0, 'no connection waits on the stopped worker');
  process.kill(victim!, 'SIGKILL');
  // Whatever was waiting ends now: answered, or closed so the client can retry. None hangs.
  const ended = allAnswered ?? (await within(outcomes, 10_000));
  t.not(ended, null, 'every connection ended once the stopped worker was killed');
  t.same(ended, calls.map(() => 'answered'), 'every connection answered');
  t.ok(childPids(gw.proc.pid!).includes(survivor!), 'the other worker is still running');
}
