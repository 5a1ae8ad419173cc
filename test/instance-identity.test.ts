/**
 * A fleet upgraded host by host: builds that took `host/pid` for proof (an owner id split on
 * '/' on Redis, the host and pid of a process row on LMDB) and builds that know processes by
 * identity share one store. Neither may take a live process of the other for dead:
 * - old reading new: a new owner id holds no '/', and a new LMDB process row holds no host name
 *   and no pid, so the old check (`host === hostname() && !pidAlive(pid)`) never fires on them;
 * - new reading old: an old owner (`HOST/PID/…` whose PID is absent here, beating) keeps its
 *   calls until its heartbeat stops; then they are settled.
 * And the proof itself: the same boot, the same PID namespace, the same start time.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import t from 'tap';
import { newInstanceId, ownProof, proofFrom, proofText, provenGone } from '../src/store/instance.js';
import { openStore } from '../src/store/store.js';
import { startRedis } from './helpers/redis.js';

/** A pid with no process here. */
function absentPid(): number {
  for (let pid = 31_000; ; pid--) if (spawnSync('test', ['-e', `/proc/${pid}`]).status !== 0) return pid;
}

t.test('the proof: same boot, same namespace, same start time', async (t) => {
  const mine = ownProof();
  t.ok(mine, 'this process has one (Linux)');
  if (mine === null) return;
  t.strictSame(proofFrom(proofText(mine)), mine, 'its text reads back');
  t.notOk(provenGone(mine), 'a live process is not proven gone');
  t.ok(provenGone({ ...mine, pid: absentPid() }), 'an absent pid of this boot and namespace is');
  t.ok(provenGone({ ...mine, startTime: String(Number(mine.startTime) + 1) }), 'a pid now started at another time (reused) is');
  t.notOk(provenGone({ ...mine, pid: absentPid(), pidNamespace: 'pid:[1]' }), 'another namespace proves nothing');
  t.notOk(provenGone({ ...mine, pid: absentPid(), boot: 'another-boot' }), 'another boot (machine) proves nothing');
  t.equal(proofFrom('1795597458054'), null, 'an older heartbeat holds none');
});

t.test('old reading new: a new owner id is not HOST/PID', async (t) => {
  const id = newInstanceId();
  t.notOk(id.includes('/'), id);
  t.not(id.split('/')[0], hostname(), 'an old build reads no host of its own from it');
});

t.test('LMDB: new rows carry no host or pid; an old live owner keeps its calls', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-identity-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await openStore({ backend: 'lmdb', dataDir: dir }, { fsync: 'interval' });
  const key = await store.createKey({ hash: 'a'.repeat(64), prefix: 'gw_live_aaaa', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 });
  await store.serveCalls();
  const env = open({ path: dir, maxDbs: 16, overlappingSync: false, noSync: true });
  const processes = env.openDB<unknown[], string>({ name: 'processes' });
  const rows = [...processes.getRange()];
  t.equal(rows.length, 1, 'this process is registered');
  const [row0, row1] = rows[0]!.value as [string, number];
  t.not(row0, hostname(), 'no host name an old build would take for its own');
  t.equal(row1, 0, 'no pid');
  // An old build's process on this host, beating, at a pid absent here (another namespace), with a hold in flight.
  const old = `${hostname()}/${absentPid()}/0a0b0c0d`;
  const calls = env.openDB<unknown[], [string, string]>({ name: 'calls' });
  env.transactionSync(() => {
    processes.put(old, [hostname(), absentPid(), Date.now()]);
    calls.put([key.id, 'req_old_owner'], [key.account, old, Date.now(), 1000, 10, 1, 'chat', 'm', 0, 1]);
  });
  const lmdb = store as unknown as { settleOrphans(now: number): number };
  t.equal(lmdb.settleOrphans(Date.now()), 0, 'its call is kept while it beats');
  t.equal(lmdb.settleOrphans(Date.now() + 60_000), 1, 'and settled once its heartbeat is stale');
  await env.close();
  await store.close();
});

t.test('Redis: an old live owner (HOST/PID) keeps its calls until its heartbeat stops', async (t) => {
  const redis = await startRedis(t);
  const store = await openStore({ backend: 'redis', url: redis.url });
  t.teardown(() => store.close());
  const key = await store.createKey({ hash: 'b'.repeat(64), prefix: 'gw_live_bbbb', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 });
  await store.serveCalls();
  const owners = (await redis.cli('SMEMBERS', 'tg:owners')).trim().split('\n');
  t.equal(owners.length, 1, 'this process is registered');
  t.notOk(owners[0]!.includes('/'), 'under an id an old build does not split into host and pid');
  const old = `${hostname()}/${absentPid()}/0a0b0c0d`;
  const entry = JSON.stringify({ o: old, p: 1, a: key.account, at: String(Date.now()), h: '1000', ic: '10', it: '1', e: 'chat', m: 'm', s: '0', k: key.id });
  await redis.cli('HSET', `tg:{${key.hash}}:c`, 'req_old_owner', entry);
  await redis.cli('HINCRBY', `tg:{${key.account}}:a`, 'held', '1000');
  await redis.cli('SADD', `tg:o:${old}`, `${key.hash} req_old_owner`);
  await redis.cli('SADD', 'tg:owners', old);
  await redis.cli('SET', `tg:p:${old}`, String(Date.now()), 'PX', '10000');
  const sweep = store as unknown as { settleOrphans(): Promise<number> };
  t.equal(await sweep.settleOrphans(), 0, 'its call is kept while it beats');
  await redis.cli('DEL', `tg:p:${old}`);
  t.equal(await sweep.settleOrphans(), 1, 'and settled once its heartbeat is gone');
  t.equal((await store.account(key.account))?.held, 0, 'its hold released');
});
