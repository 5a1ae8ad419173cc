/**
 * Does HTTP/2 to providers help stream-heavy traffic? The provider side of the gateway alone:
 * an undici Pool, as tollgate's (forward/pools.ts), reading many concurrent streams whose events
 * arrive one write apart, over HTTP/1.1 (one connection per stream) and over HTTP/2 (cleartext,
 * `allowH2` + `useH2c`, streams multiplexed on a few connections). The server is a child
 * process answering every POST with `events` SSE events, each its own write `gapMs` apart, on
 * an HTTP/1.1 and an HTTP/2 port. Reported per protocol, alternated over rounds: the reading
 * process's CPU µs per event, the server's, and the wall time of the batch.
 *
 *   node --import tsx bench/h2-providers.ts
 *
 * Environment: H2_STREAMS (concurrent streams, default 1000), H2_EVENTS (per stream, 40),
 * H2_GAP_MS (between events, 20), H2_ROUNDS (3), H2_STREAMS_PER_CONNECTION (HTTP/2, 100:
 * undici's default maxConcurrentStreams).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { H2CClient, Pool, type Dispatcher } from 'undici';
import { cpuMs, guardChildren, median, runMain } from './lib.js';

const STREAMS = Number(process.env.H2_STREAMS || 1000);
const EVENTS = Number(process.env.H2_EVENTS || 40);
const GAP_MS = Number(process.env.H2_GAP_MS || 20);
const ROUNDS = Number(process.env.H2_ROUNDS || 3);
const PER_CONNECTION = Number(process.env.H2_STREAMS_PER_CONNECTION || 100);

const EVENT = `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'token' } }] })}\n\n`;

/** The server: run as a child process (`--serve`), prints its two ports as JSON. */
async function serve(): Promise<void> {
  const { createServer } = await import('node:http');
  const { createServer: createH2Server } = await import('node:http2');
  type Out = { write(chunk: string): boolean; end(): void; writeHead(status: number, headers: Record<string, string>): unknown; destroyed: boolean };
  const answer = (req: { resume(): void; on(e: 'end', f: () => void): void }, res: Out): void => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let sent = 0;
      const next = (): void => {
        if (res.destroyed) return;
        res.write(EVENT);
        if (++sent === EVENTS) {
          res.write('data: [DONE]\n\n');
          res.end();
          return;
        }
        setTimeout(next, GAP_MS);
      };
      next();
    });
  };
  const h1 = createServer({ keepAliveTimeout: 60_000 }, (req, res) => answer(req, res as unknown as Out));
  const h2 = createH2Server({ settings: { maxConcurrentStreams: 10_000 } }, (req, res) => answer(req, res as unknown as Out));
  h1.listen(0, '127.0.0.1');
  h2.listen(0, '127.0.0.1');
  await Promise.all([once(h1, 'listening'), once(h2, 'listening')]);
  const port = (s: typeof h1 | typeof h2): number => (s.address() as { port: number }).port;
  process.send!({ h1: port(h1), h2: port(h2) });
}

/** Reads `STREAMS` streams at once through `pool`; resolves with the events received. */
function readStreams(pool: Pool): Promise<number> {
  return new Promise((resolve, reject) => {
    let events = 0;
    let left = STREAMS;
    const body = JSON.stringify({ model: 'bench', stream: true });
    for (let i = 0; i < STREAMS; i++) {
      const handler: Dispatcher.DispatchHandler = {
        onConnect() {},
        onHeaders(status) {
          if (status !== 200) reject(new Error(`status ${status}`));
          return true;
        },
        onData(chunk: Buffer) {
          // What a gateway's tap does at the least: find the events in what arrived.
          for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) if (chunk[at + 1] === 10) events++;
          return true;
        },
        onComplete() {
          if (--left === 0) resolve(events);
        },
        onError: reject,
      };
      // `idempotent`: undici runs a non-idempotent request on an HTTP/2 connection only when no
      // other request is running on it (client-h2.js, busy()); a POST marked idempotent is
      // multiplexed. It changes nothing on HTTP/1.1, where each connection carries one stream.
      pool.dispatch({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body, idempotent: true }, handler);
    }
  });
}

async function main(): Promise<void> {
  guardChildren((ROUNDS * 2 * (EVENTS * GAP_MS + 30_000)) + 60_000);
  const server = fork(fileURLToPath(import.meta.url), ['--serve'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [ports] = await once(server, 'message') as [{ h1: number; h2: number }];
  const pools = {
    'HTTP/1.1': () => new Pool(`http://127.0.0.1:${ports.h1}`, { connections: STREAMS + 64, keepAliveTimeout: 30_000 }),
    // HTTP/2 without TLS: a Pool hands its clients its own connector, which knows no `useH2c`;
    // each client here is an H2CClient without it, so that it builds one that does.
    'HTTP/2': () => new Pool(`http://127.0.0.1:${ports.h2}`, {
      maxConcurrentStreams: PER_CONNECTION, pipelining: PER_CONNECTION,
      connections: Math.ceil(STREAMS / PER_CONNECTION) + 1, keepAliveTimeout: 30_000,
      factory: (origin, { connect: _poolConnector, ...options }: Pool.Options) => new H2CClient(origin, options as ConstructorParameters<typeof H2CClient>[1]),
    }),
  };
  const results = new Map<string, { client: number[]; server: number[]; wall: number[] }>();
  process.stderr.write(`h2-providers: ${STREAMS} streams at once, ${EVENTS} events each ${GAP_MS} ms apart, ${ROUNDS} rounds\n`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, make] of Object.entries(pools)) {
      const pool = make();
      // Warm-up: the connections opened and the code paths compiled before the measured batch.
      await readStreams(pool);
      const client0 = process.cpuUsage();
      const server0 = cpuMs(server.pid!);
      const wall0 = performance.now();
      const events = await readStreams(pool);
      const wall = performance.now() - wall0;
      const client = process.cpuUsage(client0);
      const serverMs = cpuMs(server.pid!) - server0;
      await pool.close();
      if (events !== STREAMS * (EVENTS + 1)) throw new Error(`${name}: ${events} events, expected ${STREAMS * (EVENTS + 1)}`);
      const r = results.get(name) ?? { client: [], server: [], wall: [] };
      r.client.push((client.user + client.system) / events);
      r.server.push((serverMs * 1000) / events);
      r.wall.push(wall);
      results.set(name, r);
      process.stderr.write(`round ${round}/${ROUNDS}  ${name.padEnd(8)}  reader ${r.client.at(-1)!.toFixed(2)} µs/event  server ${r.server.at(-1)!.toFixed(2)} µs/event  ${Math.round(wall)} ms\n`);
    }
  }
  server.kill('SIGTERM');
  const h1 = results.get('HTTP/1.1')!;
  const h2 = results.get('HTTP/2')!;
  const line = (label: string, a: number[], b: number[], digits: number): string =>
    `${label.padEnd(32)} ${median(a).toFixed(digits).padStart(10)} ${median(b).toFixed(digits).padStart(10)} ${(median(b) / median(a)).toFixed(2).padStart(8)}`;
  process.stdout.write([
    `${''.padEnd(32)} ${'HTTP/1.1'.padStart(10)} ${'HTTP/2'.padStart(10)} ${'2 / 1.1'.padStart(8)}   (medians over ${ROUNDS} rounds)`,
    line('reader CPU µs per event', h1.client, h2.client, 2),
    line('server CPU µs per event', h1.server, h2.server, 2),
    line('wall ms for the batch', h1.wall, h2.wall, 0),
    '',
  ].join('\n'));
}

if (process.argv.includes('--serve')) await serve();
else await runMain('h2-providers', main);
