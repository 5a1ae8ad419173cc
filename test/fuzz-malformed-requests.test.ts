/**
 * 15,000 seeded malformed requests over bare sockets — methods, paths, header framing, chunked
 * framing, bodies, encodings, credentials, truncations and pipelines — against a running
 * gateway. The gateway must not crash; every answer must be one of its error envelopes (or the
 * connection closed without one); nothing may reach the provider or be billed; and its memory
 * must stay flat between the first 5,000 (warm-up) and the end.
 *
 * Every request is malformed by construction: either a framing fault Node's parser always
 * refuses (checked one by one when this list was written) or a request the gateway must refuse
 * (unknown path, no or wrong credential, an unreadable body, a model it does not serve).
 */
import { fileURLToPath } from 'node:url';
import { deflateSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { GATEWAY_ERRORS } from '../src/http/errors.js';
import { exchange, parseResponses, portOf } from './helpers/raw-http.js';
import { eventually } from './helpers/client-gone.js';
import { defaultConfig, post, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { prng } from './helpers/prng.js';

const WARMUP = 5_000;
const MEASURED = 10_000;
const PARALLEL = 16;
const MAX_BODY = 64 * 1024;

const random = prng(20261122);
const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;

const POST_PATHS = ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/token/v1/chat/completions', '/token/v1/messages'];
const GET_ROUTES = new Set(['/v1/models', '/token/v1/models', '/usage', '/usage/api']);
const GOOD_BODIES = [
  { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
  { model: 'gpt-4o-mini', input: 'hi', stream: true },
  { model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
].map((b) => JSON.stringify(b));

interface Case { bytes: Buffer; head: boolean }

const crlf = (lines: string[]): string => lines.map((l) => `${l}\r\n`).join('');
const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');

/** A well-formed request, from which the generators break one thing. */
function request(method: string, path: string, headers: string[], body: Buffer | string = ''): Buffer {
  const payload = typeof body === 'string' ? latin1(body) : body;
  return Buffer.concat([latin1(crlf([`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', ...headers]) + '\r\n'), payload]);
}

function fuzzPath(): string {
  const base = pick([...POST_PATHS, ...GET_ROUTES, '/', '', '/v1', '/v1/', '/token', '/v2/models']);
  const noise = ['%00', '..', '//', '/', '?x=1', '#f', '%2F', ';', '~', '%', 'A'.repeat(random(3000)), '/..%2f'];
  let path = base;
  for (let k = random(3); k > 0; k--) {
    const at = random(path.length + 1);
    path = path.slice(0, at) + pick(noise) + path.slice(at);
  }
  return random(10) === 0 ? pick(['*', 'http://127.0.0.1/v1/models', `/${'x'.repeat(12_000)}`]) : path;
}

function withKey(key: string, body: string): string[] {
  return [`authorization: Bearer ${key}`, 'content-type: application/json', `content-length: ${Buffer.byteLength(body, 'latin1')}`];
}

/** Bodies the gateway must refuse however they are framed. */
function badBody(): string {
  const good = pick(GOOD_BODIES);
  switch (random(16)) {
    case 0: return good.slice(0, random(good.length)); // a strict prefix of an object is never JSON
    case 1: return `${good}${pick(['x', ',', '}', '{}', '0', '"'])}`;
    case 2: return good.replace('"model"', '"model":"gpt-4o","model"');
    case 3: return good.replace('{', '{"m\\u006fdel":"x",');
    case 4: return `{"model":"gpt-4o-mini","messages":${'['.repeat(129 + random(5000))}`;
    case 5: return `{"model":${pick(['""', '1', 'null', 'true', '[]', '{}', '"no-such-model"', `"${'m'.repeat(300)}"`])},"messages":[]}`;
    case 6: return good.replace('"model"', '"mode"');
    case 7: return `[${good}]`;
    case 8: return `\ufeff${good}`;
    case 9: return good.replace('"hi"', '"h\u0001i"'); // a raw control character inside a string
    case 10: return good.replace('{', "{'x':1,");
    case 11: return good.replace('{', '{"n":NaN,');
    case 12: return good.replace('{', '{/*c*/');
    case 13: return good.replace(':', ': 01,"x":');
    case 14: return `{"model":"gpt-4o-mini","pad":"${'x'.repeat(MAX_BODY)}"}`; // over limits.maxRequestBytes
    default: {
      // Random bytes changed, kept only if no reading of the result could name a served model.
      for (;;) {
        let b = good;
        for (let k = 1 + random(4); k > 0; k--) {
          const at = random(b.length);
          b = b.slice(0, at) + String.fromCharCode(random(256)) + b.slice(at + 1);
        }
        if (!couldBeServed(b)) return b;
      }
    }
  }
}

/** Whether JSON.parse reads `body` as an object naming a model of the test catalogue. */
function couldBeServed(body: string): boolean {
  try {
    const v = JSON.parse(Buffer.from(body, 'latin1').toString('utf8'));
    return typeof v === 'object' && v !== null && typeof v.model === 'string' && ['gpt-4o-mini', 'gpt-4o', 'chat-only', 'claude-sonnet-4-5', 'claude-haiku-4-5'].includes(v.model);
  } catch {
    return false;
  }
}

/** Header faults Node's parser always refuses (each checked when this list was written). */
const HEADER_FAULTS = [
  'content-length : 7', 'x-no-colon', 'x@name: 1', 'x-a: 1\rb', 'x-a: a\u007fb', 'x-a: a\u0000b', 'x-a: a\u0001b',
  'content-length: 5\r\ncontent-length: 6', 'content-length: 1, 1', 'content-length: -1', 'content-length: +5', 'content-length: 0x5',
  'transfer-encoding: identity', 'transfer-encoding: chunked, gzip', 'transfer-encoding: chunked\r\ntransfer-encoding: chunked',
  'content-length: 5\r\ntransfer-encoding: chunked', 'x\u00e9: 1', ': empty-name', 'authorization: Bearer gw_live_0000\r\n 0000',
  `x-big: ${'a'.repeat(17_000)}`,
];

function headerFault(key: string): Case {
  const body = pick(GOOD_BODIES);
  const headers = withKey(key, body);
  headers.splice(random(headers.length + 1), 0, pick(HEADER_FAULTS));
  return { bytes: request('POST', pick(POST_PATHS), headers, body), head: false };
}

function requestLineFault(key: string): Case {
  const body = pick(GOOD_BODIES);
  const line = pick([
    `POST ${pick(POST_PATHS)} HTTP/1.2`, `POST ${pick(POST_PATHS)} http/1.1`, `post ${pick(POST_PATHS)} HTTP/1.1`,
    `FOO ${pick(POST_PATHS)} HTTP/1.1`, `POST\t${pick(POST_PATHS)} HTTP/1.1`, 'POST /v1/chat completions HTTP/1.1',
    'POST /v1/chat/completions\u0000 HTTP/1.1', 'POST /v1/chat/\u00e9 HTTP/1.1', 'POST v1/chat/completions HTTP/1.1',
    `POST ${pick(POST_PATHS)} HTTP/1.1\n`,
  ]);
  return { bytes: latin1(crlf([line, 'host: x', ...withKey(key, body)]) + '\r\n' + body), head: false };
}

function chunkedFault(key: string): Case {
  const body = pick(GOOD_BODIES);
  const size = body.length.toString(16);
  const framed = pick([
    `${size};a=\u0001\r\n${body}\r\n0\r\n\r\n`, `${size} \r\n${body}\r\n0\r\n\r\n`, `${size}\r\n${body}0\r\n\r\n`,
    `${(body.length - 1).toString(16)}\r\n${body}\r\n0\r\n\r\n`, `fffffffffffffffff\r\n${body}\r\n0\r\n\r\n`,
    `${size}\n${body}\n0\n\n`, `${size}\r\n${body}\r\n0\r\nx@y: 1\r\n\r\n`, `zz\r\n${body}\r\n0\r\n\r\n`,
    `-${size}\r\n${body}\r\n0\r\n\r\n`, `0x${size}\r\n${body}\r\n0\r\n\r\n`,
  ]);
  const headers = [`authorization: Bearer ${key}`, 'content-type: application/json', 'transfer-encoding: chunked'];
  return { bytes: request('POST', pick(POST_PATHS), headers, framed), head: false };
}

function methodOrPath(key: string): Case {
  const method = pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'TRACE', 'CONNECT', 'PROPFIND', 'GET', 'POST']);
  let path = fuzzPath();
  const route = path.split('?')[0]!;
  if ((method === 'GET' && GET_ROUTES.has(route)) || method === 'CONNECT') path = `${route}x`;
  const body = method === 'POST' ? badBody() : '';
  const headers = body === '' ? [`authorization: Bearer ${key}`] : withKey(key, body);
  return { bytes: request(method, path, headers, body), head: method === 'HEAD' };
}

function body(key: string): Case {
  const b = badBody();
  return { bytes: request('POST', pick(POST_PATHS.slice(0, 3)), withKey(key, b), b), head: false };
}

function encoding(key: string): Case {
  const good = pick(GOOD_BODIES);
  const variants: Array<[string[], Buffer]> = [
    [['content-encoding: gzip'], gzipSync(good)],
    [['content-encoding: deflate'], deflateSync(good)],
    [['content-type: application/json; charset=utf-16'], Buffer.from(`\ufeff${good}`, 'utf16le')],
    [['content-type: application/json; charset=utf-16be'], Buffer.from(good, 'utf16le').swap16()],
    [['content-type: text/plain'], latin1(badBody())],
    [['content-type: application/json; charset=latin1'], latin1(good.replace('-mini', '-mini\u00e9').replace('-4-5', '-4-5\u00e9'))],
  ];
  const [headers, payload] = pick(variants);
  if (random(4) === 0) {
    // The same bytes, chunked after a gzip coding: Node undoes the chunking, never the gzip.
    const chunked = Buffer.concat([latin1(`${payload.length.toString(16)}\r\n`), payload, latin1('\r\n0\r\n\r\n')]);
    return { bytes: request('POST', POST_PATHS[0]!, [`authorization: Bearer ${key}`, 'transfer-encoding: gzip, chunked', ...headers], chunked), head: false };
  }
  return { bytes: request('POST', POST_PATHS[0]!, [`authorization: Bearer ${key}`, `content-length: ${payload.length}`, ...headers], payload), head: false };
}

function credential(key: string): Case {
  const good = pick(GOOD_BODIES);
  const auth = pick([
    [], [`authorization: Bearer ${key.slice(0, -1)}`], [`authorization: Bearer ${key.slice(0, 20)} ${key.slice(20)}`],
    [`authorization: Basic ${Buffer.from(`u:${key}`).toString('base64')}`], ['authorization: Bearer'], [`api-key: ${key}`],
    [`x-api-key: ${key.toUpperCase()}`], [`authorization: Bearer ${key}x`], [`authorization: Token ${key}`],
  ]);
  const path = pick(['/token/v1/chat/completions', '/v1/chat/completions']);
  // A credit key on the token surface is the wrong surface: unknown there.
  const headers = path.startsWith('/token') ? [`authorization: Bearer ${key}`] : auth;
  return { bytes: request('POST', path, [...headers, 'content-type: application/json', `content-length: ${good.length}`], good), head: false };
}

function truncated(key: string): Case {
  const good = pick(GOOD_BODIES);
  const whole = request('POST', pick(POST_PATHS), withKey(key, good), good);
  return { bytes: whole.subarray(0, random(whole.length)), head: false };
}

const GENERATORS: Array<[number, (key: string) => Case]> = [
  [14, methodOrPath], [16, headerFault], [8, requestLineFault], [14, chunkedFault], [22, body], [10, encoding], [8, credential], [8, truncated],
];
const TOTAL_WEIGHT = GENERATORS.reduce((s, [w]) => s + w, 0);

function nextCase(key: string): Case {
  let r = random(TOTAL_WEIGHT);
  for (const [weight, generate] of GENERATORS) {
    if (r < weight) {
      if (random(20) !== 0) return generate(key);
      // A pipeline: a refused call, then another malformed request on the same connection.
      // (Never a HEAD second: its answer has no body while the first one's has.)
      const second = nextCase(key);
      return { bytes: Buffer.concat([body(key).bytes, second.head ? body(key).bytes : second.bytes]), head: false };
    }
    r -= weight;
  }
  throw new Error('unreachable');
}

const STATUS_OF = new Map(Object.entries(GATEWAY_ERRORS).map(([code, [status]]) => [code, status as number]));

/** Why the bytes a connection received are not a sequence of gateway error envelopes, or null. */
function fault(data: Buffer, head: boolean): string | null {
  // A request Node could not parse gets an envelope with its body even when it began with HEAD.
  const parsed = parseResponses(data, head);
  const { responses, rest } = head && parsed.rest.length > 0 ? parseResponses(data) : parsed;
  head &&= responses.every((r) => r.body.length === 0);
  if (rest.length > 0) return `unparseable: ${rest.toString('latin1').slice(0, 120)}`;
  for (const r of responses) {
    if (!/^application\/json/.test(r.headers['content-type'] ?? '')) return `status ${r.status} without a JSON type`;
    if (head) continue; // a HEAD answer has the envelope's headers, never its body
    let envelope: any;
    try {
      envelope = JSON.parse(r.body.toString('utf8'));
    } catch {
      return `status ${r.status}: body is not JSON`;
    }
    const e = envelope?.error;
    if (typeof e?.message !== 'string' || typeof e?.type !== 'string' || e?.param !== null) return `status ${r.status}: not an envelope`;
    if (STATUS_OF.get(e.code) !== r.status) return `status ${r.status} with code ${e.code}`;
  }
  return null;
}

const MEMORY_PRELOAD = fileURLToPath(new URL('./helpers/memory-preload.mjs', import.meta.url));

interface Memory { rss: number; heapUsed: number; external: number }

/** The server's memory after a full garbage collection (helpers/memory-preload.mjs answers SIGUSR2). */
async function memoryOf(gw: Harness): Promise<Memory> {
  const count = (): number => gw.serverLog().split('memory ').length;
  const before = count();
  gw.proc.kill('SIGUSR2');
  await eventually(async () => (count() > before ? true : undefined));
  return JSON.parse(gw.serverLog().split('memory ').at(-1)!.split('\n')[0]!) as Memory;
}

t.test('15,000 seeded malformed requests: no crash, only envelopes or closed connections, nothing billed, memory flat', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { maxRequestBytes: MAX_BODY } }),
    env: { NODE_OPTIONS: `--expose-gc --import=${MEMORY_PRELOAD}` },
  });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const port = portOf(gw.base);
  const faults: string[] = [];
  let answers = 0;
  let closedWithout = 0;

  const run = async (count: number): Promise<void> => {
    let next = 0;
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      while (next < count) {
        next++;
        const c = nextCase(key);
        const { data } = await exchange(port, c.bytes);
        const why = fault(data, c.head);
        if (why !== null) faults.push(`${why} ← ${c.bytes.toString('latin1').slice(0, 200)}`);
        else if (data.length === 0) closedWithout++;
        else answers++;
      }
    }));
  };

  const started = Date.now();
  await run(WARMUP);
  const before = await memoryOf(gw);
  await run(MEASURED);
  const after = await memoryOf(gw);
  t.comment(`${WARMUP + MEASURED} requests in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  t.same(faults.slice(0, 10), [], 'every answer is an error envelope');
  t.comment(`${answers} connections answered with envelopes, ${closedWithout} closed without an answer`);
  t.equal(gw.proc.exitCode, null, 'the gateway is still running');
  t.notMatch(gw.serverLog(), /"level":"error"/, 'and logged no error');
  t.equal(gw.mock.requests.length, 0, 'nothing reached the provider');
  const usage = await usageOf(gw.base, key);
  t.same(usage.requests, [], 'nothing listed');
  t.equal(usage.key.balanceNanoUsd, 1e9, 'nothing billed');
  // Live memory after a full collection is the leak detector: measured flat to 0.2 MB over
  // 30,000 such requests (23.3–23.5 MB of heap, external memory unchanged). 4 MB catches a leak
  // of 400 bytes per request over the 10,000 measured.
  const MB = 1024 * 1024;
  const live = (m: Memory): number => m.heapUsed + m.external;
  t.comment(`server after warm-up: RSS ${(before.rss / MB).toFixed(1)} MB, live ${(live(before) / MB).toFixed(1)} MB; after ${MEASURED} more: RSS ${(after.rss / MB).toFixed(1)} MB, live ${(live(after) / MB).toFixed(1)} MB`);
  t.ok(live(after) - live(before) < 4 * MB, `live memory flat: ${((live(after) - live(before)) / MB).toFixed(2)} MB of growth (bound 4 MB)`);
  // RSS also counts the heap the engine keeps committed once it has grown: on Node.js 20 it moved
  // within an 11 MB band over 40,000 requests; on Node.js 24 it grew by ≈ 50 MB to a plateau
  // (140 → 214 MB) while the live heap stayed flat. The bound says only that nothing large grows.
  t.ok(after.rss - before.rss < 64 * MB, `RSS: ${((after.rss - before.rss) / MB).toFixed(1)} MB of growth (bound 64 MB)`);

  const ok = await post(`${gw.base}/v1/chat/completions`, key, JSON.parse(GOOD_BODIES[0]!));
  t.equal(ok.status, 200, 'a well-formed call is served afterwards');
});
