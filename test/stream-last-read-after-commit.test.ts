/**
 * A stream's last bytes go out with its end, once its usage record is committed: nothing of the
 * provider's last read reaches the client before the bill does, and the last read and the
 * chunked body's end are one write. A stream that comes whole in one read is not held back: its
 * bytes go out at once and only its end waits. In process: the gateway's writes to the client's
 * socket are watched where they are made, and the store's word that the record is committed is
 * held back until the test has looked at them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { displayPrefix, generateKey, hashKey } from '../src/auth/keys.js';
import { compileConfig } from '../src/config/load.js';
import type { CommitListener } from '../src/domain/interfaces.js';
import { createGateway } from '../src/server.js';
import { Store } from '../src/store/lmdb/store.js';
import { startMockProvider } from './fixtures/mock-provider.js';
import { defaultConfig } from './helpers/harness.js';
import { open, postBytes, readUntil } from './helpers/raw-http.js';

type WriteFn = (chunk: Buffer | string, encoding: BufferEncoding, cb: (err?: Error | null) => void) => void;
type WritevFn = (chunks: Array<{ chunk: Buffer | string }>, cb: (err?: Error | null) => void) => void;

/** Every write the gateway makes to its clients' sockets, as the bytes of each. */
function watchClientWrites(server: import('node:http').Server): Buffer[] {
  const writes: Buffer[] = [];
  server.on('connection', (socket: Socket) => {
    const s = socket as unknown as { _write: WriteFn; _writev: WritevFn };
    const write = s._write.bind(socket);
    const writev = s._writev.bind(socket);
    s._write = (chunk, encoding, cb) => {
      writes.push(Buffer.from(chunk as Buffer));
      write(chunk, encoding, cb);
    };
    s._writev = (chunks, cb) => {
      writes.push(Buffer.concat(chunks.map((c) => Buffer.from(c.chunk as Buffer))));
      writev(chunks, cb);
    };
  });
  return writes;
}

/** A gateway on LMDB whose store holds back its word that a record is committed until `release()`. */
async function heldCommits(t: Tap.Test): Promise<{ port: number; secret: string; key: Awaited<ReturnType<Store['createKey']>>; store: Store; writes: Buffer[]; recordCommitted: Promise<void>; release: () => void }> {
  const mock = await startMockProvider();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-last-read-'));
  const store = Store.open(join(dir, 'data'), { fsync: 'interval', fsyncIntervalMs: 1000 });
  const secret = generateKey();
  const key = await store.createKey({ hash: hashKey(secret), prefix: displayPrefix(secret), name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 });

  // The record is committed by the store as usual; its word to the gateway waits for the test.
  let tell: (() => void) | null = null;
  let committed!: () => void;
  const recordCommitted = new Promise<void>((resolve) => (committed = resolve));
  const record = store.record.bind(store);
  store.record = (k, usage, charge, listener, settles, response) =>
    record(k, usage, charge, { committed: (err: unknown) => {
      tell = () => listener.committed(err);
      committed();
    } } satisfies CommitListener, settles, response);

  const gateway = createGateway(compileConfig(defaultConfig(mock.url), null), store, { env: { OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'sk-ant' } });
  const writes = watchClientWrites(gateway.server);
  await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    await gateway.close(100);
    await store.close();
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { port: (gateway.server.address() as AddressInfo).port, secret, key, store, writes, recordCommitted, release: () => tell!() };
}

function streamBody(mock: Record<string, unknown>): string {
  return JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true }, mock: { chunks: 5, inputTokens: 40, outputTokens: 30, ...mock } });
}

const ENDED = (d: Buffer): boolean => d.subarray(-5).toString('latin1') === '0\r\n\r\n';

t.test('a stream\'s last read reaches the client with its end, after its record is committed', async (t) => {
  const gw = await heldCommits(t);
  const socket = await open(gw.port);
  t.teardown(() => socket.destroy());
  // Each event its own write 5 ms apart: the provider's last read is `data: [DONE]` and the end.
  socket.write(postBytes('/v1/chat/completions', gw.secret, streamBody({ chunkDelayMs: 5 })));
  const ended = readUntil(socket, ENDED);
  await gw.recordCommitted;

  const before = Buffer.concat(gw.writes).toString('latin1');
  t.match(before, /^HTTP\/1\.1 200 /, 'the stream had begun');
  t.match(before, /"usage":\{"prompt_tokens":40/, 'its usage event had gone out');
  t.notMatch(before, /\[DONE\]/, 'nothing of the provider\'s last read had');
  t.notOk(before.endsWith('0\r\n\r\n'), 'nor the end');
  const writesBefore = gw.writes.length;

  gw.release();
  const received = (await ended).toString('latin1');
  t.equal(gw.writes.length, writesBefore + 1, 'the last read and the end went in one write');
  t.match(gw.writes.at(-1)!.toString('latin1'), /data: \[DONE\]\n\n\r\n0\r\n\r\n$/, 'that write: the last event, then the end');
  t.equal(received, Buffer.concat(gw.writes).toString('latin1'), 'the client got every byte written, in order');
  const [usage] = await gw.store.usageOf(gw.key, 10);
  t.match(usage, { status: 200, error: null, inputTokens: 40, outputTokens: 30, stream: true }, 'the stream was billed its usage');
});

t.test('a stream that comes whole in one read is written at once; only its end waits for the record', async (t) => {
  const gw = await heldCommits(t);
  const socket = await open(gw.port);
  t.teardown(() => socket.destroy());
  // Every event and the end in one write of the provider's: one read.
  socket.write(postBytes('/v1/chat/completions', gw.secret, streamBody({})));
  const ended = readUntil(socket, ENDED);
  await gw.recordCommitted;

  const before = Buffer.concat(gw.writes).toString('latin1');
  t.match(before, /^HTTP\/1\.1 200 [^]*data: \[DONE\]\n\n\r\n$/, 'every event had gone out, its first byte not waiting for the commit');
  const writesBefore = gw.writes.length;
  gw.release();
  await ended;
  t.equal(gw.writes.length, writesBefore + 1, 'then the end alone');
  t.equal(gw.writes.at(-1)!.toString('latin1'), '0\r\n\r\n', 'the chunked body\'s end');
});
