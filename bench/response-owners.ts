/**
 * What the owner records of stored responses cost: the size per million records on each backend,
 * and (LMDB) what the retention sweep of them costs. N records of realistic ids (OpenAI's
 * `resp_` and 48 hex digits, accounts `acct_` and 16) over 100 accounts:
 * - LMDB: written into the `responses` sub-database as the store keeps them ([account id,
 *   response id] → ResponseRow, 32 per transaction as in a group commit at c=32); the growth of
 *   the data file; then the sweep (the store's deleteResponsesBefore, in the sweeper's batches)
 *   with a clock past their retention, each batch timed.
 * - Redis: written as `store migrate` writes them (RedisStore.load: SET with a TTL, the same
 *   name and value the settlement writes), on a redis-server of its own; the growth of
 *   INFO memory's used_memory.
 *
 *   node --import tsx bench/response-owners.ts [N=1000000]
 */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { open } from 'lmdb';
import { Store } from '../src/store/lmdb/store.js';
import type { StoreDump } from '../src/store/dump.js';
import { RedisStore } from '../src/store/redis/store.js';
import { RetentionSweeper } from '../src/store/retention.js';
import { responseToRow, type ResponseRow } from '../src/store/rows.js';
import { runMain, tempDir } from './lib.js';
import { hasRedisServer, startRedisForBench } from './redis-server.js';

const N = Number(process.argv[2] ?? 1_000_000);
const ACCOUNTS = 100;
const GROUP = 32;
const DAY = 86_400_000;
const RETENTION_DAYS = 30;
const START = Date.UTC(2026, 0, 1);
const MADE = { provider: 'openai', credential: 'default' };

const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `acct_${i.toString(16).padStart(16, '0')}`);
/** The n-th record: its account, its id, when it was made (spread over the retention). */
function nth(n: number): { account: string; id: string; at: number } {
  return { account: accounts[n % ACCOUNTS]!, id: `resp_${n.toString(16).padStart(48, '0')}`, at: START + Math.floor((n / N) * RETENTION_DAYS * DAY) };
}

function sizeOf(dir: string): number {
  return readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
const perMillion = (bytes: number): string => `${((bytes / N) * 1e6 / 1e6).toFixed(1)} MB per million records (${(bytes / N).toFixed(0)} bytes each)`;

async function lmdb(): Promise<void> {
  const dir = tempDir('tollgate-owners-bench-');
  // Opened as the server opens it (noSync: the server's commits are flushed apart).
  const root = open({ path: dir, maxDbs: 16, noSync: true, overlappingSync: false });
  const db = root.openDB<ResponseRow, [string, string]>({ name: 'responses' });
  await root.flushed;
  const empty = sizeOf(dir);
  const t0 = performance.now();
  for (let i = 0; i < N; i += GROUP) {
    root.transactionSync(() => {
      for (let n = i; n < Math.min(N, i + GROUP); n++) {
        const r = nth(n);
        db.put([r.account, r.id], responseToRow(MADE, r.at));
      }
    });
  }
  await root.close();
  const full = sizeOf(dir);
  console.log(`LMDB: ${N.toLocaleString()} owner records written in ${((performance.now() - t0) / 1000).toFixed(1)} s; data directory ${mb(empty)} → ${mb(full)}: ${perMillion(full - empty)}`);

  // The hourly sweep, first with nothing past retention (each record read once: owner records
  // have no index by time), then with a clock past every record's retention (all of them go).
  const store = Store.open(dir, { fsync: 'interval', fsyncIntervalMs: 1000 });
  const original = store.deleteResponsesBefore.bind(store);
  let batches: number[] = [];
  store.deleteResponsesBefore = (before, limit, from) => {
    const b0 = performance.now();
    const r = original(before, limit, from);
    batches.push(performance.now() - b0);
    return r;
  };
  for (const [what, now] of [['nothing past retention', START], ['everything past retention', START + 2 * RETENTION_DAYS * DAY]] as const) {
    batches = [];
    const s0 = performance.now();
    const deleted = await new RetentionSweeper(store, { retentionDays: 400, responseRetentionDays: RETENTION_DAYS, now: () => now }).sweep();
    const sweepMs = performance.now() - s0;
    batches.sort((a, b) => a - b);
    const pct = (p: number): string => batches[Math.min(batches.length - 1, Math.floor(p * batches.length))]!.toFixed(2);
    console.log(`LMDB sweep, ${what}: ${deleted.toLocaleString()} deleted, ${batches.length} batches of ≤ 500 records read, ${(sweepMs / 1000).toFixed(1)} s (${((sweepMs * 1000) / N).toFixed(1)} µs per record); one batch (the event loop held): p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${batches.at(-1)!.toFixed(2)} ms`);
  }
  await store.close();
}

async function redis(): Promise<void> {
  if (!(await hasRedisServer())) {
    console.log('Redis: skipped (no redis-server; scripts/install-system-packages.sh installs it)');
    return;
  }
  const server = await startRedisForBench();
  const port = new URL(server.url).port;
  const usedMemory = (): Promise<number> => new Promise((resolve, reject) => {
    execFile('redis-cli', ['-p', port, 'info', 'memory'], (err, out) => (err ? reject(err) : resolve(Number(/^used_memory:(\d+)/m.exec(out)![1]))));
  });
  const store = await RedisStore.open(server.url);
  const before = await usedMemory();
  const t0 = performance.now();
  const SLICE = 100_000;
  for (let i = 0; i < N; i += SLICE) {
    const responses: StoreDump['responses'] = [];
    for (let n = i; n < Math.min(N, i + SLICE); n++) responses.push({ ...nth(n), ...MADE });
    // With "now" at the start, each keeps what is left of its retention as its TTL.
    await store.load({ keys: [], accounts: [], calls: [], usage: [], daily: [], switches: [], audit: [], responses }, RETENTION_DAYS, START);
  }
  const after = await usedMemory();
  console.log(`Redis: ${(await store.responseCount()).toLocaleString()} owner records written in ${((performance.now() - t0) / 1000).toFixed(1)} s; used_memory ${mb(before)} → ${mb(after)}: ${perMillion(after - before)} (each expires by its TTL: no sweep)`);
  await store.close();
}

await runMain('response-owners', async () => {
  await lmdb();
  await redis();
});
