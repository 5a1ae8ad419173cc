/**
 * Where a call's heap bytes are allocated, by function: the cost budget of
 * test/cost-allocation.test.ts says how many bytes a call allocates, this says which code asks
 * for them. `tollgate serve` runs with bench/heap-sample-preload.mjs and the interpreter only
 * (as the budget counts); after a warm-up, V8's sampling heap profiler (one sample per 64 bytes
 * on average, collected objects kept) watches CALLS sequential calls, and each function's
 * sampled bytes divided by CALLS is what a call allocates there.
 *
 *   node --import tsx bench/alloc-sites.ts [TOP]      (TOP sites listed, default 40)
 *
 * BENCH_CALL=stream: a streamed chat call whose 24 events come 2 ms apart, each a read of its own
 * (as in the streams-at-scale burst and `BENCH_CALL=stream` of bench/instructions.ts), instead of
 * a plain one; with the warm-up, about four minutes.
 *
 * Sampled, not counted: a site's figure is an estimate; the budget's count is the exact total
 * (and also counts what the profiler does not see, such as the store's own native-backed work).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { BENCH_DIR, CHAT_PATH, envChoice, guardChildren, PLAIN_BODY, READ_PER_EVENT_BODY, ROOT, runMain, startMock, startTollgate, tempDir } from './lib.js';

const top = Number(process.argv[2] ?? 40);
const [CALL, BODY] = envChoice('BENCH_CALL', 'plain', { plain: PLAIN_BODY, stream: READ_PER_EVENT_BODY });
const WARM_UP = 500;
const CALLS = 2000;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Bytes sampled per allocating site (function, file, line) of one profile. */
function bySite(file: string): Map<string, number> {
  const sites = new Map<string, number>();
  const walk = (node: ProfileNode): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.startsWith('file://') ? url.slice(url.indexOf(ROOT) >= 0 ? url.indexOf(ROOT) + ROOT.length : 7) : url || '(native)';
    const site = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    if (node.selfSize > 0) sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk((JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode }).head);
  return sites;
}

async function main(): Promise<void> {
  guardChildren(10 * 60_000);
  const mock = await startMock();
  const dir = tempDir('tollgate-bench-heap-sample-');
  const file = join(dir, 'calls.heapprofile');
  const tg = await startTollgate('tollgate', mock.url, 1, {
    nodeFlags: ['--import', join(BENCH_DIR, 'heap-sample-preload.mjs'), '--max-opt=0', '--sampling-heap-profiler-suppress-randomness'],
    env: { HEAP_SAMPLE_FILE: file },
  });
  const agent = new Agent({ connections: 1 });
  const calls = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const res = await request(tg.url + CHAT_PATH, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${tg.key}`, 'content-type': 'application/json' }, body: BODY });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`call answered ${res.statusCode}`);
    }
  };
  await calls(WARM_UP);
  tg.proc.kill('SIGUSR2');
  await sleep(200);
  await calls(CALLS);
  tg.proc.kill('SIGUSR2');
  for (let i = 0; i < 100 && !existsSync(file); i++) await sleep(100);
  await agent.close();
  // The file appears before it is whole: read it again until it parses.
  let sites: Map<string, number> | undefined;
  for (let i = 0; sites === undefined; i++) {
    try {
      sites = bySite(file);
    } catch (err) {
      if (i === 100) throw err;
      await sleep(100);
    }
  }
  const perCall = [...sites].map(([site, bytes]): [string, number] => [site, bytes / CALLS]).sort((a, b) => b[1] - a[1]);
  const total = perCall.reduce((sum, [, d]) => sum + d, 0);
  console.log(`≈ ${total.toFixed(0)} bytes per ${CALL} call sampled over ${CALLS} calls after ${WARM_UP}; the top ${top} sites:`);
  for (const [site, d] of perCall.slice(0, top)) console.log(`${d.toFixed(0).padStart(7)}  ${site}`);
}

await runMain('alloc-sites', main);
