/**
 * Processes are known by identity, not by pid. Gateways under one host name but in different
 * PID namespaces (containers with host networking, pods with `hostNetwork: true`) share one
 * store: each sees the other's pid as absent (or as someone else) in its own namespace, and must
 * not take the other for dead. Gateway A runs here; gateway B runs in a PID namespace of its own
 * (`unshare --pid --fork --mount-proc`), at a pid that no process has out here; gateway C starts
 * here last. Each start settles the calls of processes it finds gone before it listens, so B's
 * start looks at A's calls in flight and C's at B's, deterministically. Then the streams held at
 * the provider go on: every call is billed its real usage, none `interrupted`, nothing is held.
 *
 * Run on Redis (one redis-server) and on LMDB (one data directory, as a shared volume). Needs
 * root and unshare (CI has both): where they are missing the test fails, saying so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { allRecords, childPids, CLI, PROVIDER_ENV, startGateway, usageOf, type Backend, type Harness } from './helpers/harness.js';
import { startRedis } from './helpers/redis.js';

const STREAMS = 3;
const USAGE = { inputTokens: 50, outputTokens: 20 };
const COST = USAGE.inputTokens * 150 + USAGE.outputTokens * 600;
const body = (tag: string): unknown => ({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'story' }], mock: { ...USAGE, hold: tag, holdAfter: 1 } });

/** Why the namespaced gateway cannot be started here, or null. */
function missing(): string | null {
  if (process.getuid?.() !== 0) return 'not root: a PID namespace needs root (CI runs as root)';
  if (spawnSync('unshare', ['--version']).status !== 0) return 'no unshare on PATH (util-linux)';
  if (!existsSync('/proc/sys/kernel/ns_last_pid')) return 'no /proc/sys/kernel/ns_last_pid';
  return null;
}

/**
 * A pid no process has out here, to be the namespaced gateway's pid inside its namespace: one a
 * little behind the kernel's last pid, which new processes reach only once the counter has gone
 * all the way round (pid_max), so that none takes it while the test looks.
 */
function pidFreeOutside(): number {
  const max = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  const last = Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
  const span = max - 1000;
  for (let back = 100; back < span; back += 7) {
    const pid = ((((last - back - 1000) % span) + span) % span) + 1000;
    if (!existsSync(`/proc/${pid}`) && !existsSync(`/proc/${pid - 1}`)) return pid;
  }
  throw new Error('no free pid found');
}

interface Gateway { proc: ChildProcess; base: string; log: () => string }

/** `tollgate serve` on A's config and store; with `nsPid`, in a PID namespace of its own, at that pid. */
async function serveBeside(t: Test, a: Harness, env: NodeJS.ProcessEnv, nsPid?: number): Promise<Gateway> {
  const serve = [CLI, 'serve', '--config', a.configFile, '--data', a.dataDir, '--host', '127.0.0.1', '--port', '0'];
  const quoted = [process.execPath, ...serve].map((s) => `'${s}'`).join(' ');
  // Inside: the shell is pid 1; the pid after ns_last_pid goes to the gateway it starts (not
  // exec'd: the shell stays pid 1, so the gateway is not).
  const proc = nsPid === undefined
    ? spawn(process.execPath, serve, { env: { ...process.env, ...PROVIDER_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', 'sh', '-c', `echo ${nsPid - 1} > /proc/sys/kernel/ns_last_pid && ${quoted}; exit $?`], { env: { ...process.env, ...PROVIDER_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let log = '';
  proc.stderr!.on('data', (d) => (log += d));
  t.teardown(() => {
    proc.kill('SIGKILL');
  });
  const base = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /tollgate listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${log}`)));
  });
  return { proc, base, log: () => log };
}

/** The outside pid of the process that unshare started in the namespace (its shell's child). */
function namespacedGateway(unsharePid: number): { outside: number; inside: number } {
  const shell = childPids(unsharePid)[0]!;
  const outside = childPids(shell)[0]!;
  const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${outside}/status`, 'utf8'))![1]!.trim().split(/\s+/).map(Number);
  return { outside, inside: nspid[nspid.length - 1]! };
}

/** Starts STREAMS streams through `base`, each held at the provider after its first delta; resolves once all are. */
async function streamsHeld(a: Harness, base: string, key: string, tag: string): Promise<Promise<string>[]> {
  const done = Array.from({ length: STREAMS }, async () => {
    const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body(tag)) });
    return res.status === 200 ? res.text() : `status ${res.status}`;
  });
  await a.mock.waitHeld(tag, STREAMS);
  return done;
}

for (const backend of ['redis', 'lmdb'] as Backend[]) {
  t.test(`${backend}: gateways in different PID namespaces under one host name keep each other's calls`, async (t) => {
    const why = missing();
    if (why !== null) {
      t.fail(`cannot run gateways in PID namespaces here: ${why}`);
      return;
    }
    const redis = backend === 'redis' ? await startRedis(t) : null;
    const env = redis === null ? {} : { TOLLGATE_REDIS_URL: redis.url };
    const a = await startGateway(t, { backend, ...(redis === null ? {} : { redisServer: redis }) });
    const { key } = await a.createKey(['--mode', 'credit', '--balance', '1']);

    const onA = await streamsHeld(a, a.base, key, `${backend}-a`);
    const nsPid = pidFreeOutside();
    const b = await serveBeside(t, a, env, nsPid);
    const ids = namespacedGateway(b.proc.pid!);
    t.equal(ids.inside, nsPid, `B runs at pid ${nsPid} in its namespace`);
    t.notOk(existsSync(`/proc/${ids.inside}`), 'a pid no process has out here');
    const onB = await streamsHeld(a, b.base, key, `${backend}-b`);
    // C's start looks at B's calls (and A's) before it listens.
    const c = await serveBeside(t, a, env);

    a.mock.release(`${backend}-a`);
    a.mock.release(`${backend}-b`);
    const answers = await Promise.all([...onA, ...onB]);
    t.ok(answers.every((text) => text.includes('data: [DONE]')), 'every stream reached its client whole');

    const { records } = await allRecords(c.base, key, 100);
    t.equal(records.length, 2 * STREAMS, 'one record per call');
    t.same(records.filter((r: any) => r.error === 'interrupted').map((r: any) => r.callId), [], 'none taken for a dead process\'s call');
    t.ok(records.every((r: any) => r.inputTokens === USAGE.inputTokens && r.outputTokens === USAGE.outputTokens && r.estimated === false), 'each billed its real usage');
    const u = await usageOf(c.base, key);
    t.equal(u.key.balanceNanoUsd, 1e9 - 2 * STREAMS * COST, 'the balance: opening less the real charges');
    t.equal(u.key.heldNanoUsd, 0, 'nothing held');
    t.notMatch(a.serverLog() + b.log() + c.log(), /orphaned_calls_settled|call_already_settled/, 'no gateway settled another\'s call');
  });
}
