import { join } from 'node:path';
import { CHAT_PATH, cpuMs, load, PLAIN_BODY, STREAM_BODY, startMock, startTollgate, startBareProxy } from './lib.js';
const body = process.env.BODY === 'plain' ? PLAIN_BODY : STREAM_BODY;
const builds = process.argv.slice(2);
const mock = await startMock();
const res: Record<string, number[]> = {};
for (let round = 0; round < Number(process.env.R ?? 4); round++) {
  for (const b of (round % 2 ? [...builds].reverse() : builds)) {
    const t = b === 'bare' ? await startBareProxy(mock.url) : await startTollgate('tollgate', mock.url, 1, { cli: join(b, 'dist', 'cli', 'main.js') });
    const key = (t as { key?: string }).key ?? null;
    await load(t.url, CHAT_PATH, key, body, 32, 3);
    await load(t.url, CHAT_PATH, key, body, 32, 3);
    const c0 = cpuMs(t.pid);
    const r = await load(t.url, CHAT_PATH, key, body, 32, 5);
    const v = (cpuMs(t.pid) - c0) * 1000 / r.ok;
    (res[b] ??= []).push(v);
    console.log(round, b, Math.round(r.rps), 'rps', v.toFixed(1), 'µs/call');
    t.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
  }
}
for (const [b, v] of Object.entries(res)) console.log(b, 'median', v.sort((x, y) => x - y)[v.length >> 1]!.toFixed(1), v.map((x) => x.toFixed(0)).join(' '));
process.exit(0);
