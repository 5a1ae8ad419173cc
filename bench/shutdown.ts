/**
 * How long `tollgate serve` takes to exit after SIGTERM, as a process manager sees it: from the
 * signal to the child's exit event, and what the gateway's own `stopped` line says (drainMs: the
 * signal to the last call's end; exitMs: from then to its exit call). Idle servers, on LMDB, on
 * Redis and with `--workers 2`, once right after the listening line and once after a few calls.
 *
 *   node --import tsx bench/shutdown.ts          (BENCH_ROUNDS runs of each, default 10)
 */
import { writeFileSync } from 'node:fs';
import { CHAT_PATH, CLI, envNumber, guardChildren, machine, PLAIN_BODY, runMain, runNode, spawnServer, startMock, tempDir } from './lib.js';
import { startRedisForBench } from './redis-server.js';

const rounds = envNumber('BENCH_ROUNDS', 10, 1);

interface Case {
  name: string;
  args: string[];
  /** Calls made before the signal (0: signalled right after the listening line). */
  calls: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  guardChildren(rounds * 8 * 30_000 + 60_000);
  process.stderr.write(`shutdown: ${machine()}, ${rounds} runs per case\n`);
  const mock = await startMock();
  const redis = await startRedisForBench();
  const lmdbDir = tempDir('tollgate-bench-shutdown-');
  const config = `${lmdbDir}/config.json`;
  writeFileSync(config, JSON.stringify({ providers: {
    openai: { baseUrl: `${mock.url}/v1`, auth: 'bearer', apiKeyEnv: 'MOCK_PROVIDER_KEY' },
    anthropic: { baseUrl: `${mock.url}/v1`, auth: 'x-api-key', apiKeyEnv: 'MOCK_PROVIDER_KEY' },
  } }));
  const keys: Record<string, string> = {};
  for (const [store, flags] of [['lmdb', ['--data', lmdbDir]], ['redis', ['--redis', redis.url]]] as const) {
    keys[store] = JSON.parse(await runNode([CLI, 'keys', 'create', '--mode', 'credit', '--balance', '100', '--json', '--config', config, ...flags])).key as string;
  }
  const cases: Case[] = [];
  for (const calls of [0, 20]) {
    cases.push({ name: 'lmdb', args: ['--data', lmdbDir], calls });
    cases.push({ name: 'redis', args: ['--redis', redis.url], calls });
    cases.push({ name: 'lmdb, --workers 2', args: ['--data', lmdbDir, '--workers', '2'], calls });
  }
  console.log('| case | signal → exit, median (min…max) ms | exitMs, median (min…max) |');
  console.log('|---|---|---|');
  for (const c of cases) {
    const seen: number[] = [];
    const own: number[] = [];
    const key = keys[c.name.startsWith('redis') ? 'redis' : 'lmdb']!;
    for (let i = 0; i < rounds; i++) {
      const server = await spawnServer(`tollgate ${c.name}`, [CLI, 'serve', '--port', '0', '--config', config, ...c.args], { MOCK_PROVIDER_KEY: 'mock' });
      for (let k = 0; k < c.calls; k++) {
        const res = await fetch(server.url + CHAT_PATH, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: PLAIN_BODY });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`call answered ${res.status}`);
      }
      const exited = new Promise<void>((resolve) => server.proc.once('exit', () => resolve()));
      const t0 = performance.now();
      server.proc.kill('SIGTERM');
      await exited;
      seen.push(performance.now() - t0);
      const stopped = /"exitMs":([\d.]+)[^\n]*"event":"stopped"/.exec(server.log());
      if (stopped !== null) own.push(Number(stopped[1]));
    }
    const range = (xs: number[]): string => (xs.length === 0 ? '–' : `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}…${Math.max(...xs).toFixed(0)})`);
    console.log(`| ${c.name}, ${c.calls === 0 ? 'right after start' : `after ${c.calls} calls`} | ${range(seen)} | ${range(own)} |`);
  }
}

await runMain('shutdown', main);
