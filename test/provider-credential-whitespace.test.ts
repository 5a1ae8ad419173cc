/**
 * A provider credential read from a file often ends in a newline (`OPENAI_API_KEY=$(cat key)`
 * keeps none, but an env file, a mounted secret or `export VAR="$(cat key; echo)"` may): the
 * whitespace around it is cut, for a single `apiKeyEnv` and for each credential of a pool, so
 * calls go out with the secret itself instead of failing as upstream_unavailable.
 */
import t from 'tap';
import { defaultConfig, post, startGateway } from './helpers/harness.js';

t.test('whitespace around a credential is cut: the provider gets the secret itself', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => {
      const c: any = defaultConfig(url);
      delete c.providers.anthropic.apiKeyEnv;
      c.providers.anthropic.credentials = [{ name: 'org-a', apiKeyEnv: 'POOLED_ANTHROPIC_KEY' }];
      return c;
    },
    env: { OPENAI_API_KEY: 'sk-test-openai-secret\n', POOLED_ANTHROPIC_KEY: '  sk-ant-pooled-secret\r\n' },
  });
  t.notMatch(gw.serverLog(), /provider_credential_missing/, 'both credentials are there');
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const chat = await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] });
  t.equal(chat.status, 200, 'apiKeyEnv: answered');
  const messages = await post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 10, messages: [] }, { 'anthropic-version': '2023-06-01' });
  t.equal(messages.status, 200, 'a pool credential: answered');
  const [sentChat, sentMessages] = gw.mock.requests;
  t.equal(sentChat?.headers.authorization, 'Bearer sk-test-openai-secret');
  t.equal(sentMessages?.headers['x-api-key'], 'sk-ant-pooled-secret');
});

t.test('a credential of whitespace alone is no credential', async (t) => {
  const gw = await startGateway(t, { env: { ANTHROPIC_API_KEY: '\n' } });
  t.match(gw.serverLog(), /"provider":"anthropic","env":"ANTHROPIC_API_KEY"[^\n]*"event":"provider_credential_missing"/, 'named at start-up as missing');
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const r = await post(`${gw.base}/v1/messages`, key, { model: 'claude-haiku-4-5', max_tokens: 10, messages: [] }, { 'anthropic-version': '2023-06-01' });
  t.equal(r.json?.error?.code, 'model_not_available', 'its models are not available, nothing sent');
  t.equal(gw.mock.requests.length, 0);
});
