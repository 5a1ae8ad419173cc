/**
 * A throw the gateway cannot tie to a call (here from a timer of no call's, loaded beside
 * `tollgate serve`) is logged; the process drains the calls in flight, which end whole and are
 * billed, and exits 1. With --workers, the primary replaces the worker and the gateway goes on.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

const PRELOAD = fileURLToPath(new URL('./fixtures/unowned-fault-preload.mjs', import.meta.url));
const STREAM = { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }], mock: { inputTokens: 40, outputTokens: 30, chunks: 20, chunkDelayMs: 25 } };
const PLAIN = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], mock: { inputTokens: 12, outputTokens: 7 } };

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('one process: logged, drained, exit 1; the streams in flight end whole and are billed', async (t) => {
  const gw = await startGateway(t, { env: { NODE_OPTIONS: `--import ${PRELOAD}` } });
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const url = `${gw.base}/v1/chat/completions`;
  const streams = await Promise.all([0, 1].map(() => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${k.key}` }, body: JSON.stringify(STREAM) })));
  const exited = new Promise<number | null>((resolve) => gw.proc.once('exit', (code) => resolve(code)));
  gw.proc.kill('SIGUSR2');
  for (const body of await Promise.all(streams.map((s) => s.text()))) t.match(body, /data: \[DONE\]/, 'a stream in flight ended whole');
  t.equal(await exited, 1, 'the process exited 1');
  const logged = gw.serverLog().split('\n').filter((l) => l.includes('"uncaught_exception"')).map((l) => JSON.parse(l));
  t.equal(logged.length, 1, 'logged once');
  t.match(logged[0].error, /a fault no call owns/, 'with the exception');
  await gw.restart();
  const usage = await usageOf(gw.base, k.key);
  t.equal(usage.requests.length, 2, 'both streams recorded');
  for (const r of usage.requests) t.match(r, { status: 200, error: null, inputTokens: 40, outputTokens: 30 }, 'billed their usage');
  t.equal(usage.key.heldNanoUsd, 0, 'nothing left held');
});

t.test('--workers 2: the primary replaces the worker, and the gateway goes on', async (t) => {
  const gw = await startGateway(t, { workers: 2, env: { NODE_OPTIONS: `--import ${PRELOAD}` } });
  const k = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const workers = (): number[] => childrenOf(gw.proc.pid!);
  const before = workers();
  t.equal(before.length, 2, 'two workers');
  process.kill(before[0]!, 'SIGUSR2');
  await until('the worker to exit and be replaced', () => {
    const now = workers();
    return /"worker_exited"/.test(gw.serverLog()) && now.length === 2 && !now.includes(before[0]!);
  });
  t.match(gw.serverLog(), /"uncaught_exception"/, 'the worker logged the throw');
  for (let i = 0; i < 4; i++) t.equal((await post(url(gw.base), k.key, PLAIN)).status, 200, 'served after the replacement');
  t.equal(gw.proc.exitCode, null, 'the primary goes on');
});

const url = (base: string): string => `${base}/v1/chat/completions`;

/** The pids whose parent is `pid`, read from /proc (field 4 of /proc/PID/stat, after the command's parenthesis). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}
