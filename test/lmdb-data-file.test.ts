/**
 * LMDB commits write into the memory-mapped data file (WRITEMAP), and a process that maps the
 * file that way sets its length to its map's. A process opening the store maps just the data it
 * finds, so it would cut off what another process had written past that point; the binding
 * scripts/build-lmdb.mjs builds only ever lengthens the file. Here a serving store has grown the
 * file past its data, `tollgate keys list` opens the store beside it, and the file keeps its
 * length; the server's later commits read back whole. (test/cli-concurrent-writes.test.ts shows
 * the corruption this prevents, under load.)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Store } from '../src/store/lmdb/store.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');

interface EnvStats { pageSize: number; lastPageNumber: number }

t.test('a process opening the store beside a server never shortens the data file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-data-file-'));
  const server = Store.open(dir, { fsync: 'interval', fsyncIntervalMs: 1000 });
  t.teardown(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const createKeys = async (from: number, count: number): Promise<void> => {
    for (let i = from; i < from + count; i++) {
      await server.createKey({ hash: i.toString(16).padStart(64, '0'), prefix: `gw_live_${i.toString(16).padStart(4, '0')}`, name: `key ${i}`, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1_000 });
    }
  };
  await createKeys(0, 1500);

  const file = join(dir, 'data.mdb');
  const before = statSync(file).size;
  const stats = (server as unknown as { root: { getStats(): EnvStats } }).root.getStats();
  const dataBytes = (stats.lastPageNumber + 1) * stats.pageSize;
  t.ok(before > dataBytes, `the file (${before} bytes) runs past the data (${dataBytes}): what a process mapping only the data would cut off`);

  execFileSync(process.execPath, [CLI, 'keys', 'list', '--data', dir], { stdio: 'ignore' });
  t.equal(statSync(file).size, before, 'after `keys list` opened the store, the file is as long as before');

  await createKeys(1500, 1500);
  t.equal((await server.allKeys()).length, 3000, 'every key the server wrote before and after reads back');
  const listed = execFileSync(process.execPath, [CLI, 'keys', 'list', '--data', dir], { encoding: 'utf8' });
  t.equal(listed.split('\n').filter((line) => line.includes('gw_live_')).length, 3000, 'and another process reads them all');
});
