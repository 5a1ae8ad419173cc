/**
 * Bounded storage: how much the data directory grows per million requests, and what the
 * retention sweep costs. Writes N usage records through the store's group commit (32 per
 * commit, as at c=32), measures the environment's size, then sweeps them all away in the
 * sweeper's batches and times each batch.
 *
 *   node --import tsx bench/retention.ts [N=1000000]
 */
import { mkdtempSync, rmSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Store } from '../src/store/lmdb/store.js';
import { RetentionSweeper } from '../src/store/retention.js';
import { PLAIN_USAGE_DETAIL, type KeyRecord, type UsageRecord } from '../src/domain/types.js';

const N = Number(process.argv[2] ?? 1_000_000);
const KEYS = 100;
const GROUP = 32;
const DAY = 86_400_000;

function sizeOf(dir: string): number {
  return readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

const dir = mkdtempSync(join(tmpdir(), 'tollgate-retention-bench-'));
const store = Store.open(dir, { fsync: 'interval', fsyncIntervalMs: 1000 });
const keys: KeyRecord[] = [];
for (let k = 0; k < KEYS; k++) keys.push(await store.createKey({ hash: `hash${k}`, prefix: `gw_live_${String(k).padStart(4, '0')}`, name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e15 }));
const empty = sizeOf(dir);
const start = Date.UTC(2026, 0, 1);
const writeStart = performance.now();
for (let i = 0; i < N; i += GROUP) {
  await new Promise<void>((resolve) => {
    let left = Math.min(GROUP, N - i);
    for (let j = 0; j < left; j++) {
      const n = i + j;
      const id = `req_0123456789ab${n.toString(36).padStart(6, '0')}`;
      const r: UsageRecord = { at: start + Math.floor((n / N) * 30 * DAY), callId: id, requestId: id, endpoint: 'chat', model: 'gpt-4o-mini', stream: false, status: 200, inputTokens: 1200, outputTokens: 350, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, costNano: 390000, tokensCharged: 1550, error: null, estimated: false, clientGone: false, ...PLAIN_USAGE_DETAIL, attempts: 1, credential: 'default' };
      store.record(keys[n % KEYS]!, r, { nano: 390000, tokens: 0 }, { committed: () => { if (--left === 0) resolve(); } }, false);
    }
  });
}
const writeMs = performance.now() - writeStart;
const full = sizeOf(dir);
console.log(`wrote ${N.toLocaleString()} usage records for ${KEYS} keys over 30 days in ${(writeMs / 1000).toFixed(1)} s`);
console.log(`data directory: ${(empty / 1e6).toFixed(1)} MB empty → ${(full / 1e6).toFixed(1)} MB: ${(((full - empty) / N) * 1e6 / 1e6).toFixed(1)} MB per million requests (${((full - empty) / N).toFixed(0)} bytes each)`);

// Sweep with a clock 500 days later: everything goes, in the sweeper's batches.
const batches: number[] = [];
const deleteBefore = store.deleteUsageBefore.bind(store);
store.deleteUsageBefore = (before, limit, from) => {
  const t0 = performance.now();
  const r = deleteBefore(before, limit, from);
  batches.push(performance.now() - t0);
  return r;
};
const sweeper = new RetentionSweeper(store, { retentionDays: 400, now: () => start + 500 * DAY });
const sweepStart = performance.now();
const deleted = await sweeper.sweep();
const sweepMs = performance.now() - sweepStart;
batches.sort((a, b) => a - b);
const pct = (p: number): string => batches[Math.min(batches.length - 1, Math.floor(p * batches.length))]!.toFixed(2);
console.log(`sweep: ${deleted.toLocaleString()} records in ${batches.length} batches of ≤ 500, ${(sweepMs / 1000).toFixed(1)} s in all (${((sweepMs * 1000) / deleted).toFixed(1)} µs per record); one batch (the longest the event loop is held): p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${batches.at(-1)!.toFixed(2)} ms`);
const swept = sizeOf(dir);
console.log(`after the sweep the file stays ${(swept / 1e6).toFixed(1)} MB (LMDB reuses freed pages rather than shrinking the file): growth stops once records age out`);
await store.close();
rmSync(dir, { recursive: true, force: true });
