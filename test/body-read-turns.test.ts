/**
 * Reading bodies within a scanning budget per turn of the event loop: whatever arrives in one
 * turn past the budget waits for later turns, yet every chunk is kept and shown to the
 * inspector exactly once, in order, every body is resolved, and a refusal found in a chunk that
 * waited still stops the body.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import t from 'tap';
import { InspectorFault, readBody as readBodyTelling, REFUSED, RequestBody, type BodyInspector, type BodyOutcome } from '../src/http/body.js';

/** readBody's outcome as a promise. */
function readBody(req: IncomingMessage, max: number, inspector: BodyInspector): Promise<BodyOutcome> {
  return new Promise((resolve) => readBodyTelling(req, max, inspector, null, (_owner, outcome) => resolve(outcome)));
}

const CHUNK = 64 * 1024;

/** A request whose body chunks are pushed by the test, all in the same turn when it likes. */
function request(): Readable & IncomingMessage {
  const req = new Readable({ read() {} }) as Readable & IncomingMessage;
  (req as { headers: Record<string, string> }).headers = {};
  return req;
}

/** An inspector that records what it was shown; refuses the chunk numbered `refuseAt`. */
function recorder(refuseAt = -1): { seen: number[]; write(chunk: Buffer): boolean } {
  const seen: number[] = [];
  return { seen, write: (chunk) => (seen.push(chunk[0]!), chunk[0] !== refuseAt) };
}

const chunk = (n: number): Buffer => Buffer.alloc(CHUNK, n);

t.test('ten bodies of 40 chunks arriving in one turn: all scanned in order, all resolved', async (t) => {
  const reads = Array.from({ length: 10 }, () => {
    const req = request();
    const inspector = recorder();
    return { req, inspector, outcome: readBody(req, 100 * CHUNK, inspector) };
  });
  // The inspectors are shown chunks as the stream emits them; push everything at once.
  for (const { req } of reads) {
    for (let i = 0; i < 40; i++) req.push(chunk(i));
    req.push(null);
  }
  for (const { inspector, outcome } of reads) {
    const body = await outcome;
    t.ok(body instanceof RequestBody, 'resolved to the body');
    t.equal((body as RequestBody).length, 40 * CHUNK, 'every byte kept');
    t.same(inspector.seen, Array.from({ length: 40 }, (_, i) => i), 'each chunk shown once, in order');
  }
});

t.test('a body that arrives after a turn used its whole budget is still read', async (t) => {
  // First a body that exhausts the budget exactly, then, a turn later, a small one.
  const big = request();
  const bigRead = readBody(big, 100 * CHUNK, recorder());
  for (let i = 0; i < 8; i++) big.push(chunk(i));
  big.push(null);
  await bigRead;
  const small = request();
  const smallRead = readBody(small, 100 * CHUNK, recorder());
  small.push(Buffer.from('{"model":"m"}'));
  small.push(null);
  t.ok((await smallRead) instanceof RequestBody);
});

t.test('a refusal found in a chunk that waited for a later turn stops the body', async (t) => {
  const req = request();
  const inspector = recorder(30);
  const outcome = readBody(req, 100 * CHUNK, inspector);
  for (let i = 0; i < 40; i++) req.push(chunk(i));
  req.push(null);
  t.equal(await outcome, REFUSED);
  t.equal(inspector.seen.at(-1), 30, 'nothing shown after the refused chunk');
});

t.test('an inspector that throws, in a chunk that waited for a later turn: the read ends with the fault, the process goes on', async (t) => {
  const req = request();
  const fault = new Error('inspector fault');
  const inspector = { seen: [] as number[], write(chunk: Buffer): boolean {
    this.seen.push(chunk[0]!);
    if (chunk[0] === 30) throw fault;
    return true;
  } };
  const outcome = readBody(req, 100 * CHUNK, inspector);
  for (let i = 0; i < 40; i++) req.push(chunk(i));
  req.push(null);
  const ended = await outcome;
  t.ok(ended instanceof InspectorFault, 'told the fault');
  t.equal((ended as InspectorFault).error, fault, 'with the error thrown');
  t.equal(inspector.seen.at(-1), 30, 'nothing shown after it');
  // Another body read after it is read as usual.
  const next = request();
  const nextRead = readBody(next, 100 * CHUNK, recorder());
  next.push(Buffer.from('{"model":"m"}'));
  next.push(null);
  t.ok((await nextRead) instanceof RequestBody);
});

t.test('an inspector that throws on the first chunk, shown at once', async (t) => {
  const req = request();
  const outcome = readBody(req, 100 * CHUNK, { write: () => { throw new Error('at once'); } });
  req.push(Buffer.from('{}'));
  req.push(null);
  t.ok((await outcome) instanceof InspectorFault);
});
