/**
 * What observing one request costs on the hot path, in process: the notes the stages make, then
 * the end (metrics and/or the access-log line), against a response stand-in. Compares no
 * observation, metrics only, metrics + access log (to /dev/null through the real asynchronous
 * destination), and, for scale, prom-client with a label object per request (what binding
 * children avoids). Only the time spent in the loop counts; the log's own writes happen in the
 * event-loop turns between batches of 500, as in a server.
 *
 *   node --import tsx bench/observe-cost.ts [N=200000]
 */
import { EventEmitter } from 'node:events';
import { openSync, writeSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { Counter, Registry } from 'prom-client';
import type { Route } from '../src/http/routes.js';
import { stdoutAccessLog } from '../src/observe/access-log.js';
import { Call } from '../src/call.js';
import { expectRecord, noteDispatch, noteFirstByte, noteKey, noteRecord, noteRoute, Observer } from '../src/observe/call.js';
import { Metrics } from '../src/observe/metrics.js';
import { PLAIN_USAGE_DETAIL, type KeyRecord, type UsageRecord } from '../src/domain/types.js';

const N = Number(process.argv[2] ?? 200_000);
const route: Route = { kind: 'inference', method: 'POST', surface: 'credit', endpoint: 'chat', upstreamPath: '/chat/completions' };
const key = { prefix: 'gw_live_1a2b' } as KeyRecord;
const record: UsageRecord = { at: Date.now(), callId: 'req_0123456789ab000001', requestId: 'req_0123456789ab000001', endpoint: 'chat', model: 'gpt-4o-mini', stream: false, status: 200, inputTokens: 12, outputTokens: 34, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 22200, tokensCharged: 46, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL, attempts: 1, credential: 'default' };

/** The request and the error path are not used by the observation. */
const REQUEST = {} as IncomingMessage;
const ENDING = { fail(): void {} };

class FakeResponse extends EventEmitter {
  headersSent = true;
  statusCode = 200;
  writableFinished = true;
}

/** Yields to the event loop every 500 requests, as a server does, so the log's writes happen. */
async function run(observer: Observer): Promise<number> {
  let busy = 0;
  for (let i = 0; i < N; i++) {
    if (i % 500 === 0) {
      if (i > 0) busy += performance.now() - t0;
      await new Promise((r) => setTimeout(r, 2)); // time for the log's writes, not counted
      t0 = performance.now();
    }
    const res = new FakeResponse() as unknown as ServerResponse;
    const call = new Call(REQUEST, res, 'req_0123456789ab000001', '', observer, ENDING);
    observer.begin(call);
    noteRoute(call, route);
    noteKey(call, key);
    call.modelName = 'gpt-4o-mini';
    noteDispatch(call, 'openai', 'default');
    expectRecord(call);
    noteFirstByte(call);
    noteRecord(call, record);
    res.emit('close');
  }
  busy += performance.now() - t0;
  return (busy * 1000) / N;
}
let t0 = 0;

async function runLabelObjects(): Promise<number> {
  const registry = new Registry();
  const c = new Counter({ name: 'x_total', help: 'x', labelNames: ['surface', 'endpoint', 'status', 'code'], registers: [registry] });
  const t0 = performance.now();
  for (let i = 0; i < N; i++) c.inc({ surface: 'credit', endpoint: 'chat', status: String(200), code: 'ok' });
  return ((performance.now() - t0) * 1000) / N;
}

// /dev/null, written the way the access log writes to a file (fs.writeSync, as process.stdout does for one).
const nullFd = openSync('/dev/null', 'w');
const devNull = new Writable({
  write(chunk: Buffer, _encoding, done) {
    writeSync(nullFd, chunk);
    done();
  },
});
const variants: Array<[string, () => Promise<number>]> = [
  ['stand-in response only (no metrics, no log)', () => run(new Observer(null, null))],
  ['metrics', () => run(new Observer(new Metrics(), null))],
  ['metrics + access log', () => run(new Observer(new Metrics(), stdoutAccessLog(devNull)))],
  ['(one prom-client inc with a label object, for scale)', runLabelObjects],
];
for (let round = 0; round < 3; round++) {
  for (const [name, fn] of variants) console.log(`round ${round + 1}  ${name.padEnd(56)} ${(await fn()).toFixed(2)} µs/request`);
}
