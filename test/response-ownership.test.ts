/**
 * A stored response belongs to the account whose call made it, through the official `openai`
 * SDK on both surfaces:
 * - plain and streamed creation both record the owner; the owner continues either with
 *   `previous_response_id`, sent to the provider unchanged; a rotated key of the account may too;
 * - another account naming it, and an id no call made, get the same 400
 *   `previous_response_not_found` (param `previous_response_id`), byte for byte: nothing
 *   forwarded, held, billed or listed;
 * - `responses.retrieve`, `.inputItems.list` (its query forwarded as sent) and `.delete` work for
 *   the owner's account, neither billed nor listed but counted under endpoint="responses"; for
 *   another account, 404 `response_not_found` and nothing forwarded.
 */
import t from 'tap';
import OpenAI from 'openai';
import { post, rejectionOf, startGateway, usageOf, type Harness } from './helpers/harness.js';
import { parseMetrics, seriesOf } from './helpers/prometheus.js';

const MODEL = 'gpt-4o-mini';


/** What a key's usage shows: its records, and its balance or budget and what it holds. */
async function ledgerOf(gw: Harness, key: string): Promise<{ records: number; funds: unknown; held: unknown }> {
  const u = await usageOf(gw.base, key);
  return { records: u.requests.length, funds: u.key.balanceNanoUsd ?? u.key.usedTokens, held: u.key.heldNanoUsd ?? u.key.heldTokens };
}

/** `tollgate_requests_total` by `endpoint|status|code` for a surface, once `atLeast` requests are counted. */
async function requestCounts(gw: Harness, surface: string, atLeast: number): Promise<Map<string, number>> {
  for (let i = 0; ; i++) {
    const all = parseMetrics(await (await fetch(`${gw.admin}/metrics`)).text());
    const series = seriesOf(all, 'tollgate_requests_total').filter((s) => s.labels.surface === surface);
    const counts = new Map(series.map((s) => [`${s.labels.endpoint}|${s.labels.status}|${s.labels.code}`, s.value]));
    if ([...counts.values()].reduce((a, b) => a + b, 0) >= atLeast || i === 100) return counts;
    // A request is counted once its response has closed: the last ones may be a moment behind.
    await new Promise((r) => setTimeout(r, 20));
  }
}

const surfaces = [
  { mode: 'credit', path: '/v1', keyArgs: ['--mode', 'credit', '--balance', '5'] },
  { mode: 'token', path: '/token/v1', keyArgs: ['--mode', 'token', '--budget', '1000000'] },
] as const;

for (const surface of surfaces) {
  t.test(`stored responses on the ${surface.mode} surface (${surface.path})`, async (t) => {
    const gw = await startGateway(t, { admin: true });
    const a = await gw.createKey([...surface.keyArgs]);
    const b = await gw.createKey([...surface.keyArgs]);
    const base = `${gw.base}${surface.path}`;
    const client = (key: string): OpenAI => new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 });
    const alice = client(a.key);
    const bob = client(b.key);

    // B makes two responses: one plain, one streamed.
    const plain = await bob.responses.create({ model: MODEL, input: 'hello' });
    t.equal(plain.status, 'completed');
    const stream = await bob.responses.create({ model: MODEL, input: [{ role: 'user', content: 'stream it' }], stream: true });
    let streamedId = '';
    for await (const event of stream) if (event.type === 'response.completed') streamedId = event.response.id;
    t.match(streamedId, /^resp_/, 'the stream completed with its id');
    const ids = { plain: plain.id, streamed: streamedId };

    await t.test('the owner continues either response, the id sent on unchanged', async (t) => {
      for (const [how, id] of Object.entries(ids)) {
        const next = await bob.responses.create({ model: MODEL, input: 'and then?', previous_response_id: id });
        t.equal(next.status, 'completed', `continued the ${how} response`);
        const sent = gw.mock.requests.at(-1)!;
        t.equal(sent.path, '/v1/responses');
        t.ok(sent.body.includes(`"previous_response_id":"${id}"`), `the ${how} response's id reached the provider as sent`);
      }
      // The continuation made a response of its own, which the owner may continue in turn.
      const chained = await bob.responses.create({ model: MODEL, input: 'one', previous_response_id: plain.id });
      t.equal((await bob.responses.create({ model: MODEL, input: 'two', previous_response_id: chained.id })).status, 'completed', 'a chain of continuations');
    });

    await t.test("another account naming B's response: 400, the same as an id no call made", async (t) => {
      const forwarded = gw.mock.requests.length;
      const before = await ledgerOf(gw, a.key);
      for (const [how, id] of Object.entries(ids)) {
        for (const stream of [false, true]) {
          const err = await rejectionOf(t, alice.responses.create({ model: MODEL, input: 'steal', previous_response_id: id, stream }));
          t.ok(err instanceof OpenAI.BadRequestError, `B's ${how} response, stream ${stream}: BadRequestError`);
          t.equal(err.status, 400);
          t.equal(err.code, 'previous_response_not_found');
          t.equal(err.type, 'invalid_request_error');
          t.equal(err.param, 'previous_response_id', 'param names the member');
        }
      }
      const foreign = await post(`${base}/responses`, a.key, { model: MODEL, input: 'x', previous_response_id: ids.plain });
      const unknown = await post(`${base}/responses`, a.key, { model: MODEL, input: 'x', previous_response_id: 'resp_0123456789abcdef0123456789abcdef' });
      const unknownByOwner = await post(`${base}/responses`, b.key, { model: MODEL, input: 'x', previous_response_id: `${ids.plain}0` });
      t.equal(foreign.status, 400);
      t.equal(unknown.text, foreign.text, 'an id no call made: the same body, byte for byte');
      t.equal(unknownByOwner.text, foreign.text, 'the same for the owner naming an id it never made');
      t.equal(gw.mock.requests.length, forwarded, 'nothing was forwarded');
      t.same(await ledgerOf(gw, a.key), before, 'no record, no charge, nothing held');
    });

    await t.test("a rotated key of B's account continues B's conversation", async (t) => {
      const rotated = JSON.parse((await gw.cli(['keys', 'rotate', b.id, '--json'])).stdout) as { key: string };
      const next = await client(rotated.key).responses.create({ model: MODEL, input: 'still me', previous_response_id: ids.streamed });
      t.equal(next.status, 'completed');
      t.equal((await client(rotated.key).responses.retrieve(ids.plain)).id, ids.plain, 'and reads its responses');
    });

    await t.test('retrieve, input items and delete: the owner only, neither billed nor listed', async (t) => {
      const before = await ledgerOf(gw, b.key);
      const got = await bob.responses.retrieve(ids.plain);
      t.equal(got.id, ids.plain);
      t.equal(got.object, 'response');
      const sent = gw.mock.requests.at(-1)!;
      t.same([sent.method, sent.path], ['GET', `/v1/responses/${ids.plain}`], 'forwarded unchanged');
      t.equal(sent.headers.authorization, 'Bearer sk-test-openai-secret', "with the gateway's credential");

      const items = await bob.responses.inputItems.list(ids.streamed, { order: 'asc', limit: 5 });
      t.same(items.data.map((i: any) => i.content?.[0]?.text), ['stream it'], 'the input of the streamed response');
      const listed = gw.mock.requests.at(-1)!;
      t.equal(listed.path.split('?')[0], `/v1/responses/${ids.streamed}/input_items`);
      t.same(new URLSearchParams(listed.path.split('?')[1]), new URLSearchParams({ order: 'asc', limit: '5' }), 'the query string forwarded');

      const forwarded = gw.mock.requests.length;
      for (const [name, call] of [
        ['retrieve', (id: string) => alice.responses.retrieve(id)],
        ['inputItems.list', (id: string) => alice.responses.inputItems.list(id)],
        ['delete', (id: string) => alice.responses.delete(id)],
      ] as const) {
        for (const id of [ids.plain, 'resp_0123456789abcdef0123456789abcdef']) {
          const err = await rejectionOf(t, call(id));
          t.ok(err instanceof OpenAI.NotFoundError, `${name} by another account: NotFoundError`);
          t.equal(err.code, 'response_not_found');
          t.equal(err.type, 'invalid_request_error');
        }
      }
      t.equal(gw.mock.requests.length, forwarded, 'nothing forwarded for another account');

      await bob.responses.delete(ids.plain);
      t.same([gw.mock.requests.at(-1)!.method, gw.mock.requests.at(-1)!.path], ['DELETE', `/v1/responses/${ids.plain}`]);
      // The owner record stays: the provider answers for the id it no longer has.
      const gone = await rejectionOf(t, bob.responses.retrieve(ids.plain));
      t.ok(gone instanceof OpenAI.NotFoundError, "after delete, the provider's own 404");
      t.equal(gone.code, null, "the provider's body, not the gateway's");
      t.same(await ledgerOf(gw, b.key), before, 'none of these was billed or listed');
    });

    await t.test('counted under endpoint="responses"', async (t) => {
      // Every request of this surface above: 7 + 4 answered, 6 + 1 not found, 7 refused.
      const counts = await requestCounts(gw, surface.mode, 25);
      // POST /responses is counted under the same label: seven calls made responses above.
      t.equal(counts.get('responses|200|ok'), 7 + 4, 'the seven calls, retrieve (twice), input items and delete');
      t.equal(counts.get('responses|404|response_not_found'), 6, "another account's reads and deletes");
      t.equal(counts.get('responses|404|upstream'), 1, "the provider's 404 after delete");
      t.equal(counts.get('responses|400|previous_response_not_found'), 7, 'the refused continuations');
    });
  });
}

t.test('ids that cannot be response ids are response_not_found, never looked up or sent on', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const forwarded = gw.mock.requests.length;
  for (const id of ['resp%2e%2e', 'resp..', 'a.b', 'x'.repeat(129), 'resp%3Fx', 'resp%2Fx', '%00']) {
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(`${gw.base}/v1/responses/${id}`, { method, headers: { authorization: `Bearer ${key}` } });
      t.equal(r.status, 404, `${method} ${id}: 404`);
      t.equal((await r.json()).error.code, 'response_not_found');
    }
  }
  t.equal(gw.mock.requests.length, forwarded, 'nothing forwarded');
});

t.test('a key with one concurrency slot: each read and refusal frees it', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--concurrency', '1']);
  const client = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
  const made = await client.responses.create({ model: MODEL, input: 'hi' });
  for (let i = 0; i < 3; i++) {
    t.equal((await client.responses.retrieve(made.id)).id, made.id, `read ${i + 1}`);
    t.equal((await rejectionOf(t, client.responses.retrieve('resp_0123456789abcdef'))).code, 'response_not_found', `refusal ${i + 1}`);
    t.equal((await rejectionOf(t, client.responses.retrieve('no.such'))).code, 'response_not_found', `refusal without a lookup ${i + 1}`);
  }
  t.equal((await client.responses.create({ model: MODEL, input: 'still one slot', previous_response_id: made.id })).status, 'completed', 'the slot is free');
});
