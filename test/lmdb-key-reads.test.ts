/**
 * On LMDB, the request path's key reads keep each key decoded while its stored row is unchanged,
 * and read a change made by another process (`tollgate keys …`) at once, on the next turn.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Store } from '../src/store/lmdb/store.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');

t.test('a key changed by another process is read changed at once; an unchanged one is decoded once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-key-reads-'));
  const server = Store.open(dir, { fsync: 'interval', fsyncIntervalMs: 1000 });
  t.teardown(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const hash = 'c'.repeat(64);
  const created = await server.createKey({ hash, prefix: 'gw_live_cccc', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000 });
  const first = await server.keyByHash(hash);
  t.equal(first?.status, 'active', 'read as created');
  t.equal(await server.keyByHash(hash), first, 'the same record while the row is unchanged');
  t.ok(Object.isFrozen(first), 'shared, so frozen');
  const keys = (...args: string[]): void => void execFileSync(process.execPath, [CLI, 'keys', ...args, created.id, '--data', dir], { stdio: 'ignore' });
  keys('suspend');
  keys('set', '--rpm', '7');
  await sleep(5); // reads see what was committed as of their turn (lmdb-js renews its read snapshot on a timer)
  const changed = await server.keyByHash(hash);
  t.same([changed?.status, changed?.rpm], ['suspended', 7], 'the other process\'s change is read at once');
  keys('resume');
  await sleep(5);
  t.same((await server.keyByHash(hash))?.status, 'active', 'and changed back');
  t.equal(await server.keyByHash('d'.repeat(64)), undefined, 'an unknown hash is none');
});
