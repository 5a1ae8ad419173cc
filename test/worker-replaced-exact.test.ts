/**
 * A cluster worker killed under traffic is replaced, and the replacement opens the LMDB
 * environment while the surviving worker keeps committing: billing stays exact. Every call
 * answered 200 has its usage record, the killed worker's calls in flight are settled as
 * interrupted, a call it finished but could not deliver is billed as answered, no record is
 * listed twice, and the balance is the opening balance minus the records' sum, which is the
 * price of the calls recorded.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, childPids, post, startGateway, usageOf, type Reply } from './helpers/harness.js';
import { exchange, parseResponses, portOf, processStem } from './helpers/raw-http.js';

const BODY = { model: 'gpt-4o-mini', messages: [], mock: { inputTokens: 10, outputTokens: 5 } };
const COST_NANO = 10 * 150 + 5 * 600; // gpt-4o-mini: 10 input tokens at $0.15/M, 5 output at $0.60/M
// A call in flight on the killed worker: charged its input estimate, a quarter of its bytes.
const INTERRUPTED_NANO = Math.ceil(Buffer.byteLength(JSON.stringify(BODY)) / 4) * 150;

/** The process stem of the gateway's own request ids (`req_` + 12 hex), from a refused call on a new connection. */
async function workerStem(port: number): Promise<string> {
  const { data } = await exchange(port, 'GET /v1/nope HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
  return processStem(parseResponses(data).responses[0]!);
}

/** Waits until `condition()` holds, checking every 20 ms (throws after 30 s). */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; !(await condition()); await sleep(20)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

t.test('a worker killed under traffic is replaced and every call stays billed exactly', async (t) => {
  const gw = await startGateway(t, { workers: 2 });
  const opening = 100;
  const key = await gw.createKey(['--mode', 'credit', '--balance', String(opening)]);
  const primary = gw.proc.pid!;
  const before = childPids(primary);
  t.equal(before.length, 2, 'two workers');
  const port = portOf(gw.base);

  let running = true;
  const answered: Array<{ reply: Reply; at: number }> = [];
  let failed = 0;
  const lane = async (): Promise<void> => {
    while (running) {
      try {
        const reply = await post(`${gw.base}/v1/chat/completions`, key.key, BODY);
        answered.push({ reply, at: answered.length });
      } catch {
        failed++; // a connection to the killed worker
      }
    }
  };
  const lanes = Array.from({ length: 16 }, lane);

  // Under traffic, and with the request-id stems of both workers known (connections alternate).
  await until(() => answered.length >= 50, 'traffic');
  const stems = new Set<string>();
  await until(async () => stems.add(await workerStem(port)).size === 2, 'both workers to answer');
  const victim = before[0]!;
  process.kill(victim, 'SIGKILL');
  await until(() => childPids(primary).length === 2 && !childPids(primary).includes(victim), 'a replacement worker');
  t.pass('a replacement worker was started');
  // The replacement serves once a refused call comes back with a stem not seen before.
  let replacementStem = '';
  await until(async () => !stems.has((replacementStem = await workerStem(port))), 'the replacement to serve');
  const servingFrom = answered.length;
  // It opened the store while the other worker kept committing; now both serve and commit.
  await until(() => answered.length >= servingFrom + 200, '200 more calls');
  running = false;
  await Promise.all(lanes);

  t.match(gw.serverLog(), /"event":"worker_exited"/, 'the exit is logged');
  const ok = answered.filter((a) => a.reply.status === 200);
  t.same(answered.filter((a) => a.reply.status !== 200).map((a) => a.reply.text), [], 'every answered call succeeded');
  t.ok(ok.filter((a) => a.at >= servingFrom).length >= 200, 'calls kept succeeding once the replacement served');
  t.comment(`${ok.length} calls answered, ${failed} lost with the killed worker`);

  // The killed worker's calls in flight are settled by the others (as interrupted): wait until
  // nothing is held any more.
  await eventually(async () => ((await usageOf(gw.base, key.key)).key.heldNanoUsd === 0 ? true : undefined));
  const { records } = await allRecords(gw.base, key.key, 100);
  const ids = new Set(records.map((r) => r.requestId));
  t.equal(ids.size, records.length, 'no record listed twice');
  const missing = ok.map((a) => a.reply.headers.get('x-request-id')).filter((id) => !ids.has(id));
  t.same(missing, [], 'every call answered 200 has its record');
  // A call the killed worker finished and billed may still never reach its client: the kill
  // drops what the socket had not yet delivered. Such a call is billed as answered, and like
  // the interrupted ones it can only come from the killed worker.
  const interrupted = records.filter((r) => r.error === 'interrupted');
  const answeredIds = new Set(ok.map((a) => a.reply.headers.get('x-request-id')));
  const unanswered = records.filter((r) => !answeredIds.has(r.requestId));
  const finishedUnseen = unanswered.length - interrupted.length;
  t.comment(`${interrupted.length} interrupted, ${finishedUnseen} finished but not delivered`);
  t.ok(interrupted.length + finishedUnseen <= failed, 'at most the calls lost with the worker are billed without a 200');
  // The gateway's own id of the call (its process's stem), whatever id the client was shown.
  const allStems = new Set([...stems, replacementStem]);
  t.same(records.filter((r) => !allStems.has(r.callId.slice(0, 16))), [], 'every record is a call of one of the three workers');
  const unansweredStems = new Set(unanswered.map((r) => r.callId.slice(0, 16)));
  t.ok(unansweredStems.size <= 1 && [...unansweredStems].every((s) => stems.has(s)), 'every record without a 200 is a call of one worker that served before the kill');
  t.same(unanswered.filter((r) => r.error === null && r.status !== 200), [], 'a call finished but not delivered is recorded as the 200 it was');
  t.ok(interrupted.every((r) => unanswered.includes(r)), 'no call answered 200 is recorded as interrupted');
  const sum = records.reduce((s, r) => s + r.costNanoUsd, 0);
  t.equal(sum, (records.length - interrupted.length) * COST_NANO + interrupted.length * INTERRUPTED_NANO, 'the records are priced exactly');
  const balance = (await usageOf(gw.base, key.key)).key.balanceNanoUsd;
  t.equal(balance, opening * 1_000_000_000 - sum, 'balance = opening − the records’ sum');
});
