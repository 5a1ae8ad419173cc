import { spawn } from 'node:child_process';
import { CHAT_PATH, cpuMs, load, PLAIN_BODY, STREAM_BODY, startBareProxy, startMock, startTollgate } from './lib.js';
const c = Number(process.env.C ?? 32);
const body = process.env.BODY === 'stream' ? STREAM_BODY : PLAIN_BODY;
const mock = await startMock();
const flags = ['--perf-basic-prof', '--interpreted-frames-native-stack'];
for (const id of (process.env.T ?? 'bare,tollgate').split(',')) {
  const t = id === 'bare' ? await startBareProxy(mock.url, 1024, flags) : await startTollgate('tollgate', mock.url, 1, { nodeFlags: flags });
  const key = (t as { key?: string }).key ?? null;
  await load(t.url, CHAT_PATH, key, body, c, 3);
  await load(t.url, CHAT_PATH, key, body, c, 3);
  const st = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '4999', '-g', '-p', String(t.pid), '-o', `/tmp/adhoc/perf-${id}.data`], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 500));
  const c0 = cpuMs(t.pid);
  const r = await load(t.url, CHAT_PATH, key, body, c, 5);
  const used = cpuMs(t.pid) - c0;
  st.kill('SIGINT');
  await new Promise((r) => st.once('exit', r));
  console.log(id, r.ok, 'CPU µs/call', (used * 1000 / r.ok).toFixed(1));
  t.proc.kill('SIGTERM');
}
process.exit(0);
