/**
 * No call is lost to a crash: a call's hold and its entry in flight are written before it is
 * forwarded, so when the process is killed (-9) with calls in flight, the next start (or a
 * surviving worker, within seconds) settles each of them exactly once, as a record marked
 * `error: "interrupted"`, `estimated: true`, charged its input estimate (a quarter of the
 * request's bytes, in tokens, at the input price). Nothing stays held; nothing is billed twice;
 * the balance is the opening balance minus the records' costs.
 */
import type { Socket } from 'node:net';
import t, { type Test } from 'tap';
import { eventually } from './helpers/client-gone.js';
import { allRecords, childPids, post, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { nextResponse, open, portOf, postBytes, processStem } from './helpers/raw-http.js';

const STREAM = { model: 'gpt-4o-mini', max_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Tell me a long story.' }] };
/** A stream of 1,000 events 50 ms apart: still running when the process is killed. */
const LONG = { ...STREAM, mock: { chunks: 1000, chunkDelayMs: 50 } };
/** What an interrupted call is charged: a quarter of its request's bytes, as input tokens. */
const interruptedTokens = (body: unknown): number => Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4);

/** Starts a stream and resolves once its first bytes arrived; `done` tells how it ended. */
async function streamStarted(url: string, key: string, body: unknown): Promise<{ done: Promise<'complete' | 'broken'> }> {
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const reader = res.body!.getReader();
  await reader.read();
  const done = (async () => {
    try {
      for (;;) if ((await reader.read()).done) return 'complete' as const;
    } catch {
      return 'broken' as const;
    }
  })();
  return { done };
}

/** Checks a key's records and account after the crash: one record per call, sums exact, nothing held. */
async function checkKey(t: Test, gw: Harness, key: string, mode: 'credit' | 'token', calls: number, interrupted: number, inputTokens: number): Promise<void> {
  const { records } = await allRecords(gw.base, key, 100);
  t.equal(records.length, calls, `${mode}: every admitted call listed`);
  t.equal(new Set(records.map((r: any) => r.callId)).size, calls, `${mode}: none listed twice`);
  const cut = records.filter((r: any) => r.error === 'interrupted');
  t.equal(cut.length, interrupted, `${mode}: ${interrupted} interrupted`);
  t.ok(cut.every((r: any) => r.estimated === true && r.inputTokens === inputTokens && r.outputTokens === 0), `${mode}: charged the input estimate`);
  const usage = await usageOf(gw.base, key);
  if (mode === 'credit') {
    t.ok(cut.every((r: any) => r.costNanoUsd === inputTokens * 150), 'at the input price');
    t.equal(usage.key.balanceNanoUsd, 1e9 - records.reduce((s: number, r: any) => s + r.costNanoUsd, 0), 'credit: balance = opening − records');
    t.equal(usage.key.heldNanoUsd, 0, 'credit: nothing held');
  } else {
    t.ok(cut.every((r: any) => r.tokensCharged === inputTokens), 'the input estimate in tokens');
    t.equal(usage.key.usedTokens, records.reduce((s: number, r: any) => s + r.tokensCharged, 0), 'token: used = records');
    t.equal(usage.key.heldTokens, 0, 'token: nothing held');
  }
}

t.test('kill -9 with 20 streams in flight, then restart: each call settled once', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '1000000']);
  for (const [key, s] of [[credit.key, ''], [token.key, '/token']] as const) {
    // Three calls that complete before the crash.
    for (let i = 0; i < 3; i++) t.equal((await post(`${gw.base}${s}/v1/chat/completions`, key, STREAM)).status, 200);
  }
  // Per key: 5 streams mid-way (first bytes received), 5 more held at the provider before it answers.
  const streams = [];
  for (const [key, s] of [[credit.key, ''], [token.key, '/token']] as const) {
    for (let i = 0; i < 5; i++) streams.push(await streamStarted(`${gw.base}${s}/v1/chat/completions`, key, LONG));
  }
  gw.mock.pause();
  const waiting = [];
  for (const [key, s] of [[credit.key, ''], [token.key, '/token']] as const) {
    for (let i = 0; i < 5; i++) waiting.push(post(`${gw.base}${s}/v1/chat/completions`, key, LONG).catch(() => 'broken'));
  }
  await eventually(async () => (gw.mock.held === 10 ? true : undefined));
  const during = await usageOf(gw.base, credit.key);
  t.ok(during.key.heldNanoUsd > 0, 'calls in flight hold funds');

  gw.proc.kill('SIGKILL');
  await gw.stop();
  t.same(await Promise.all(streams.map((s) => s.done)), Array(10).fill('broken'), 'the streams in flight broke');
  t.same(await Promise.all(waiting), Array(10).fill('broken'), 'the calls waiting for an answer broke');
  gw.mock.release();

  await gw.restart();
  await checkKey(t, gw, credit.key, 'credit', 13, 10, interruptedTokens(LONG));
  await checkKey(t, gw, token.key, 'token', 13, 10, interruptedTokens(LONG));
  t.match(gw.serverLog(), /orphaned_calls_settled/, 'the settlement is logged');

  // Restarting again settles nothing twice.
  await gw.stop();
  await gw.restart();
  await checkKey(t, gw, credit.key, 'credit', 13, 10, interruptedTokens(LONG));
  await checkKey(t, gw, token.key, 'token', 13, 10, interruptedTokens(LONG));
});

/**
 * At least `count` keep-alive connections to the gateway, and at least one accepted by each of its
 * two workers: the kernel picks the worker of each connection, so more are opened until both have
 * shown, each by its worker's request-id stem on a refused call.
 */
async function connectionsOnBothWorkers(t: Test, port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  const stems = new Set<string>();
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  while (sockets.length < count || stems.size < 2) {
    if (sockets.length > 200) throw new Error('200 connections, all accepted by one worker');
    const socket = await open(port);
    sockets.push(socket);
    socket.write('GET /v1/nope HTTP/1.1\r\nhost: x\r\n\r\n');
    stems.add(processStem(await nextResponse(socket)));
  }
  return sockets;
}

/** Sends a call on a connection: 'complete' if its answer is a whole 200, else 'broken'. */
function callOn(socket: Socket, key: string, body: unknown): Promise<'complete' | 'broken'> {
  socket.write(postBytes('/v1/chat/completions', key, JSON.stringify(body)));
  return nextResponse(socket).then((r) => (r.status === 200 ? 'complete' : 'broken'), () => 'broken');
}

t.test('a worker killed -9 with calls in flight: the surviving worker settles them within seconds', async (t) => {
  const gw = await startGateway(t, { workers: 2 });
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const [victim] = childPids(gw.proc.pid!);
  const sockets = await connectionsOnBothWorkers(t, portOf(gw.base), 20);
  gw.mock.pause();
  const calls = sockets.map((socket) => callOn(socket, credit.key, STREAM));
  await eventually(async () => (gw.mock.held === sockets.length ? true : undefined));
  process.kill(victim!, 'SIGKILL');
  const killedAt = Date.now();
  // The killed worker's calls are settled by the other worker (or its replacement) while the
  // survivor's own calls are still held at the provider.
  const interrupted = await eventually(async () => {
    // A connection the cluster primary accepts in the instant the worker dies can be handed to
    // the dead worker and never answered: poll with a time-out, and try again.
    const res = await fetch(`${gw.base}/usage/api`, { headers: { authorization: `Bearer ${credit.key}` }, signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    const records = res?.status === 200 ? ((await res.json()) as { requests: unknown[] }).requests : [];
    return records.length > 0 ? records.length : undefined;
  });
  t.ok(Date.now() - killedAt < 15_000, 'settled within seconds');
  gw.mock.release();
  const outcomes = await Promise.all(calls);
  const broken = outcomes.filter((o) => o === 'broken').length;
  t.equal(broken, interrupted, 'one interrupted record per call that broke');
  t.equal(outcomes.filter((o) => o === 'complete').length, sockets.length - broken, 'the others completed');
  t.ok(broken > 0 && broken < sockets.length, 'the killed worker\'s calls broke, the other\'s did not');
  await checkKey(t, gw, credit.key, 'credit', sockets.length, broken, interruptedTokens(STREAM));
});
