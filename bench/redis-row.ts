/**
 * The Redis-backed tollgate, for `npm run bench` (bench/run.ts): one `tollgate serve` on a
 * redis-server started here on the same machine (sharing its cores with the load generator, the
 * mock, the bare proxy and Redis itself), measured in alternation with the bare proxy, round by
 * round like the main table: the c=32 throughput ratio to the bare proxy (goal ≥ 0.80), the µs
 * a request adds at c=1, and the Redis commands a call costs, counted by Redis itself
 * (INFO commandstats before and after a run of sequential calls; the heartbeat and sweep
 * commands every serving process sends on its timers are left out).
 *
 * Alone, without the main table: `npm run bench:redis` (same BENCH_* settings as bench/run.ts).
 */
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHAT_PATH, cpuMs, guardChildren, load, machine, median, PLAIN_BODY, postJson, runMain, startBareProxy, startMock, startTollgate } from './lib.js';
import { hasRedisServer, startRedisForBench } from './redis-server.js';

/**
 * Commands a client sends (INFO commandstats also counts the commands scripts run inside
 * Redis, which cost no round trip): the scripts, and the commands of the issuer and the
 * usage views. The heartbeat (SET), the sweep (SMEMBERS, EXISTS, SCARD) and the readiness PING
 * run on timers and are left out.
 */
const SCRIPTS = new Set(['evalsha', 'eval']);

export interface RedisRowSettings { rounds: number; duration: number; connections: number[]; warmup: number }

/** Lines for the report, or a line saying why there are none. */
export async function redisRow(mockUrl: string, bareUrl: string, settings: RedisRowSettings, progress: (text: string) => void): Promise<string[]> {
  if (!(await hasRedisServer())) return ['tollgate on Redis: skipped (no redis-server; scripts/install-system-packages.sh installs it)'];
  const redis = await startRedisForBench();
  const tg = await startTollgate('tollgate redis', mockUrl, 1, { env: { TOLLGATE_REDIS_URL: redis.url } });
  progress('bench: tollgate on Redis is up; warming up');
  if (settings.warmup > 0) await load(tg.url, CHAT_PATH, tg.key, PLAIN_BODY, 32, settings.warmup);

  // Commands per call: sequential calls, so nothing else runs meanwhile but the timers.
  const CALLS = 500;
  const before = await redis.commandCounts();
  for (let i = 0; i < CALLS; i++) {
    const r = await postJson(tg.url, CHAT_PATH, tg.key, PLAIN_BODY);
    if (r.status !== 200) throw new Error(`tollgate redis answered ${r.status}: ${r.text.slice(0, 200)}`);
  }
  const after = await redis.commandCounts();
  const perCall = (names: (name: string) => boolean): number => {
    let n = 0;
    for (const [name, calls] of after) if (names(name)) n += calls - (before.get(name) ?? 0);
    return n / CALLS;
  };
  const scripts = perCall((name) => SCRIPTS.has(name));
  const inside = perCall((name) => !SCRIPTS.has(name) && !['ping', 'set', 'smembers', 'exists', 'scard', 'info'].includes(name));

  const rps = new Map<number, { tg: number[]; bare: number[]; cpu: number[]; redisCpu: number[] }>();
  for (const c of settings.connections) rps.set(c, { tg: [], bare: [], cpu: [], redisCpu: [] });
  for (let r = 0; r < settings.rounds; r++) {
    for (const c of settings.connections) {
      const m = rps.get(c)!;
      const b = await load(bareUrl, CHAT_PATH, null, PLAIN_BODY, c, settings.duration);
      await sleep(200);
      const cpu0 = cpuMs(tg.pid);
      const rcpu0 = cpuMs(redis.pid);
      const t = await load(tg.url, CHAT_PATH, tg.key, PLAIN_BODY, c, settings.duration);
      m.cpu.push(((cpuMs(tg.pid) - cpu0) * 1000) / Math.max(1, t.ok));
      m.redisCpu.push(((cpuMs(redis.pid) - rcpu0) * 1000) / Math.max(1, t.ok));
      m.bare.push(b.rps);
      m.tg.push(t.rps);
      if (t.non2xx || t.errors) progress(`bench: tollgate redis c=${c}: ${t.non2xx} non-2xx, ${t.errors} errors`);
      progress(`round ${r + 1}/${settings.rounds}  c=${String(c).padEnd(3)}  tollgate redis  ${Math.round(t.rps)} req/s  (bare ${Math.round(b.rps)})`);
      await sleep(200);
    }
  }
  const lines = ['── tollgate on Redis (redis-server on this machine, AOF everysec), alternating with the bare proxy ──'];
  for (const c of settings.connections) {
    const m = rps.get(c)!;
    const ratios = m.tg.map((x, i) => x / m.bare[i]!);
    let line = `c=${String(c).padEnd(4)} ${Math.round(median(m.tg)).toLocaleString('en-US').padStart(7)} req/s   ratio to bare ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}…${Math.max(...ratios).toFixed(3)})   tollgate CPU ${median(m.cpu).toFixed(1)} µs/req + redis-server ${median(m.redisCpu).toFixed(1)} µs/req`;
    if (c === 32) line += `   goal ≥ 0.80: ${median(ratios) >= 0.8 ? 'met' : 'MISSED'}`;
    if (c === 1) line += `   added ${median(m.tg.map((x, i) => 1e6 / x - 1e6 / m.bare[i]!)).toFixed(1)} µs/request over bare`;
    lines.push(line);
  }
  lines.push(`Redis round trips per plain call (${CALLS} sequential calls, INFO commandstats): ${scripts.toFixed(2)} (script calls: admission, hold, settlement); ${inside.toFixed(1)} commands run inside the scripts`);
  return lines;
}

// `npm run bench:redis`: the mock, the bare proxy and this row alone.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const env = (name: string, fallback: number): number => (process.env[name] ? Number(process.env[name]) : fallback);
  const settings = {
    rounds: env('BENCH_ROUNDS', 3), duration: env('BENCH_DURATION', 5), warmup: env('BENCH_WARMUP', 3),
    connections: (process.env.BENCH_CONNECTIONS || '1,32').split(',').map(Number),
  };
  guardChildren(600_000);
  await runMain('bench:redis', async () => {
    const progress = (text: string): void => void process.stderr.write(`${text}\n`);
    progress(`bench: ${machine()}`);
    const mock = await startMock();
    const bare = await startBareProxy(mock.url);
    const lines = await redisRow(mock.url, bare.url, settings, progress);
    process.stdout.write(`machine: ${machine()}\n${lines.join('\n')}\n`);
  });
}
