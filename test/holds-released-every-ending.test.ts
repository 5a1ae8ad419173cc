/**
 * Every way a forwarded call ends settles its hold in the same step as its record: success,
 * provider error, cut stream, error event, provider unreachable, client gone (billed from the
 * provider's usage), client gone past the grace period (estimated). After each, nothing is
 * held, the account moved by exactly the record's charge, and the call has one record.
 */
import t from 'tap';
import { eventually, startCall } from './helpers/client-gone.js';
import { defaultConfig, post, startGateway, usageOf, type Harness } from './helpers/harness.js';

const CHAT = { model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
const STREAM = { ...CHAT, stream: true, stream_options: { include_usage: true } };

interface Ending {
  name: string;
  /** Makes the call; resolves once the client is done with it. */
  run(gw: Harness, key: string, surface: string): Promise<unknown>;
  error: string | null;
  billed: boolean;
}

const endings: Ending[] = [
  { name: 'success', run: (gw, key, s) => post(`${gw.base}${s}/chat/completions`, key, CHAT), error: null, billed: true },
  { name: 'provider error (529)', run: (gw, key, s) => post(`${gw.base}${s}/chat/completions`, key, { ...CHAT, mock: { status: 529 } }), error: 'upstream_status_529', billed: false },
  { name: 'stream cut by the provider', run: (gw, key, s) => post(`${gw.base}${s}/chat/completions`, key, { ...STREAM, mock: { cutAfter: 2 } }).catch(() => undefined), error: 'upstream_cut', billed: false },
  { name: 'error event in the stream', run: (gw, key, s) => post(`${gw.base}${s}/chat/completions`, key, { ...STREAM, mock: { errorEvent: true } }).catch(() => undefined), error: 'upstream_stream_error', billed: false },
  { name: 'provider unreachable', run: (gw, key, s) => post(`${gw.base}${s}/chat/completions`, key, { ...CHAT, model: 'unreachable' }), error: 'upstream_unavailable', billed: false },
  { name: 'client gone, usage from the provider', run: (gw, key, s) => leaveMidStream(gw, `${gw.base}${s}/chat/completions`, key, true), error: null, billed: true },
  { name: 'client gone past the grace period', run: (gw, key, s) => leaveMidStream(gw, `${gw.base}${s}/chat/completions`, key, false), error: null, billed: true },
];

let holds = 0;
/**
 * A stream the mock holds after two deltas; the client leaves after the first event (and the
 * gateway has seen it go), then the rest is released, or never (the grace period ends it).
 */
async function leaveMidStream(gw: Harness, url: string, key: string, release: boolean): Promise<void> {
  const tag = `stream-${++holds}`;
  const client = await startCall(url, key, { ...STREAM, mock: { chunks: 10, hold: tag, holdAfter: 2 } });
  await client.events(1);
  await client.leave();
  if (release) gw.mock.release(tag);
}

t.test('each ending releases the hold and leaves exactly one record', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => {
      const config = defaultConfig(url) as any;
      // A provider on a port nothing listens on.
      config.providers.nowhere = { baseUrl: 'http://127.0.0.1:9/v1', auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' };
      config.models.unreachable = { provider: 'nowhere', endpoints: ['chat'], price: { input: 1, output: 2 } };
      config.limits = { clientGoneGraceMs: 300 };
      return config;
    },
  });
  for (const [mode, amount, surface] of [['credit', '--balance', '/v1'], ['token', '--budget', '/token/v1']] as const) {
    for (const ending of endings) {
      const key = await gw.createKey(['--mode', mode, amount, mode === 'credit' ? '1' : '1000000']);
      await ending.run(gw, key.key, surface);
      const usage = await eventually(async () => {
        const u = await usageOf(gw.base, key.key);
        return u.requests.length > 0 ? u : undefined;
      });
      const name = `${mode}, ${ending.name}`;
      t.equal(usage.requests.length, 1, `${name}: one record`);
      const record = usage.requests[0];
      t.equal(record.error, ending.error, `${name}: recorded as ${ending.error ?? 'a success'}`);
      if (mode === 'credit') {
        t.equal(usage.key.heldNanoUsd, 0, `${name}: nothing held`);
        t.equal(usage.key.balanceNanoUsd, 1e9 - record.costNanoUsd, `${name}: charged exactly the record`);
        t.equal(record.costNanoUsd > 0, ending.billed, `${name}: ${ending.billed ? 'billed' : 'not billed'}`);
      } else {
        t.equal(usage.key.heldTokens, 0, `${name}: nothing held`);
        t.equal(usage.key.usedTokens, record.tokensCharged, `${name}: charged exactly the record`);
        t.equal(record.tokensCharged > 0, ending.billed, `${name}: ${ending.billed ? 'billed' : 'not billed'}`);
      }
    }
  }
});

t.test('calls refused before they are forwarded hold nothing and leave no record', async (t) => {
  const gw = await startGateway(t);
  const key = await gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini']);
  const codes = [];
  for (const body of ['', '{"model":', { model: 'gpt-4o' }, { model: 'no-such-model' }]) {
    codes.push((await post(`${gw.base}/v1/chat/completions`, key.key, body)).json?.error?.code);
  }
  t.same(codes, ['model_required', 'model_required', 'model_not_allowed', 'model_not_allowed']);
  const usage = await usageOf(gw.base, key.key);
  t.equal(usage.key.heldNanoUsd, 0);
  t.equal(usage.key.balanceNanoUsd, 1e9);
  t.equal(usage.requests.length, 0);
});
