/**
 * How the access log reaches stdout: lines in order and whole, one write in flight at a time,
 * whole-line writes of at most PIPE_BUF bytes in a cluster worker (atomic on a pipe), lines
 * dropped (not held) past the limit when stdout is not read, a flush that waits for the last
 * write but not for ever, and a failed stdout that stops the log without stopping the caller.
 * The destination is driven with a Writable whose writes complete when the test says.
 */
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { stdoutAccessLog, type AccessLine } from '../src/observe/access-log.js';

/** Past the batch's wait (10 ms): its write has been made. */
const tick = (): Promise<void> => sleep(15);

function line(n: number, model = 'gpt-4o-mini'): AccessLine {
  return {
    time: '2026-11-27T00:00:00.000Z', requestId: `req_${String(n).padStart(6, '0')}`, keyPrefix: 'gw_live_1a2b', surface: 'credit', endpoint: 'chat', model,
    status: 200, code: 'ok', stream: false, inputTokens: n, outputTokens: 1, costUsd: '0.000001', tokensCharged: 0, durationMs: 1, clientGone: false,
    estimated: false, estimateReason: null, attempts: 1, credential: 'default',
  };
}

/** A stdout whose writes complete only when `release` is called (all pending) or at once with `auto`. */
class HeldOut extends Writable {
  writes: string[] = [];
  pending: Array<() => void> = [];
  inFlight = 0;
  mostInFlight = 0;
  constructor(public auto = false) {
    super({ decodeStrings: false });
  }
  override _write(chunk: string, _enc: BufferEncoding, done: (err?: Error) => void): void {
    this.writes.push(chunk);
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    const finish = (): void => {
      this.inFlight--;
      done();
    };
    if (this.auto) setImmediate(finish);
    else this.pending.push(finish);
  }
  release(): void {
    const pending = this.pending;
    this.pending = [];
    for (const finish of pending) finish();
  }
  get text(): string {
    return this.writes.join('');
  }
}

const ids = (text: string): number[] => text.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as AccessLine).inputTokens);

t.test('lines arrive whole and in order, with one write in flight at a time', async (t) => {
  const out = new HeldOut();
  const log = stdoutAccessLog(out);
  let n = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 7; i++) log.write(line(n++));
    await tick();
    await tick();
    // The write of an earlier turn is still held: what came since waits in the batch.
    t.ok(out.inFlight <= 1, `round ${round}: at most one write in flight`);
    if (round % 2 === 1) out.release();
  }
  const flushed = log.flush();
  while (out.pending.length > 0 || out.inFlight > 0) {
    out.release();
    await tick();
  }
  await flushed;
  t.equal(out.mostInFlight, 1, 'never two writes in flight');
  t.same(ids(out.text), Array.from({ length: 35 }, (_, i) => i), 'every line once, in order');
  t.ok(out.writes.length <= 6, `lines that come together go out together (${out.writes.length} writes for 35 lines)`);
});

t.test('a quiet log writes at the end of the turn; a busy one at most once per window', async (t) => {
  const out = new HeldOut(true);
  // A window the twenty lines below cannot outlast on a loaded machine (the log's timer for it
  // then keeps the test's process alive until it ends: 5 s, not more).
  const log = stdoutAccessLog(out, { batchMs: 5_000 });
  log.write(line(0));
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(out.writes.length, 1, 'the first line goes out at the end of its turn');
  // Lines over the next ~20 ms, well inside the window: they wait for it, together.
  for (let i = 1; i <= 20; i++) {
    log.write(line(i));
    await sleep(1);
  }
  t.equal(out.writes.length, 1, 'nothing more is written inside the window');
  await log.flush();
  t.equal(out.writes.length, 2, 'the twenty lines went out in one write');
  t.same(ids(out.text), Array.from({ length: 21 }, (_, i) => i), 'in order');
});

t.test('with a write limit (a cluster worker: 4096), every write is whole lines within it', async (t) => {
  const out = new HeldOut(true);
  const log = stdoutAccessLog(out, { maxWrite: 4096 });
  // Lines of varied length, a few with non-ASCII text (3 bytes per character in UTF-8).
  for (let i = 0; i < 400; i++) log.write(line(i, i % 9 === 0 ? 'modèle-€'.repeat(1 + (i % 5)) : 'gpt-4o-mini'));
  await log.flush();
  t.equal(ids(out.text).length, 400, 'all 400 lines written');
  t.same(ids(out.text), Array.from({ length: 400 }, (_, i) => i), 'in order');
  t.ok(out.writes.length > 1, `cut into ${out.writes.length} writes`);
  for (const w of out.writes) {
    if (Buffer.byteLength(w) > 4096 || !w.endsWith('\n')) t.fail(`a write of ${Buffer.byteLength(w)} bytes ending ${JSON.stringify(w.slice(-3))}`);
  }
  t.pass('each write at most 4096 bytes and ends at a line end');
});

t.test('a stdout nobody reads: lines past the limit are dropped, and flush does not wait for ever', async (t) => {
  const out = new HeldOut();
  const log = stdoutAccessLog(out, { maxBuffered: 10_000, flushWaitMs: 50 });
  for (let i = 0; i < 1000; i++) {
    log.write(line(i));
    if (i % 50 === 0) await tick();
  }
  const started = Date.now();
  await log.flush();
  t.ok(Date.now() - started < 1000, 'flush gave up waiting for the stuck write');
  out.release();
  await tick();
  await tick();
  const kept = ids(out.text).length + out.pending.length;
  t.ok(out.writes.length >= 1, 'the first batch went out');
  // Held: the first write (≤ one turn's 51 lines) and a batch of at most 10,000 characters and one line.
  const lineChars = JSON.stringify(line(999)).length + 1;
  t.ok(ids(out.text).length <= 51 + Math.ceil(10_000 / lineChars) + 1, `${ids(out.text).length} of 1000 lines kept, the rest dropped`);
  t.ok(kept < 1000, 'lines were dropped rather than held');
});

t.test('a failed stdout ends the log, not the caller', async (t) => {
  let writes = 0;
  const out = new Writable({
    write(_chunk, _enc, done) {
      writes++;
      done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    },
  });
  const log = stdoutAccessLog(out);
  log.write(line(1));
  await tick();
  await tick();
  t.equal(writes, 1, 'the first batch was tried');
  for (let i = 2; i < 50; i++) log.write(line(i));
  await tick();
  await tick();
  t.equal(writes, 1, 'nothing more is written once stdout failed');
  const started = Date.now();
  await log.flush();
  t.ok(Date.now() - started < 500, 'flush resolves at once');
});

t.test('flush resolves once the last line is written', async (t) => {
  const out = new HeldOut();
  const log = stdoutAccessLog(out);
  log.write(line(1));
  log.write(line(2));
  let done = false;
  const flushed = log.flush().then(() => (done = true));
  await tick();
  t.notOk(done, 'not while the write is held');
  out.release();
  await flushed;
  t.same(ids(out.text), [1, 2], 'both lines written before it resolved');
});
