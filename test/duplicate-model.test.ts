import t from 'tap';
import { post, startGateway } from './helpers/harness.js';

// The model the gateway checks and bills must be the one the provider serves: a body naming
// `model` twice at the top level is refused, whatever the spelling of the second key.

t.test('a body that names model twice is 400 model_required and never forwarded', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1', '--models', 'gpt-4o-mini']);
  const cases = [
    '{"model":"gpt-4o-mini","messages":[],"model":"gpt-4o"}',
    '{"model":"gpt-4o","model":"gpt-4o-mini","messages":[]}',
    '{"model":"gpt-4o-mini","mod\\u0065l":"gpt-4o","messages":[]}',
    '{"\\u006dodel":"gpt-4o","messages":[],"model":"gpt-4o-mini"}',
  ];
  for (const body of cases) {
    const r = await post(`${gw.base}/v1/chat/completions`, key, body);
    t.equal(r.status, 400, body);
    t.equal(r.json.error.code, 'model_required', body);
  }
  t.equal(gw.mock.requests.length, 0, 'nothing reached the provider');
});

t.test('"model" elsewhere in the body does not count', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const bodies = [
    '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"\\"model\\": \\"gpt-4o\\""}]}',
    '{"model":"gpt-4o-mini","metadata":{"model":"gpt-4o"},"messages":[]}',
    '{"model":"gpt-4o-mini","tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"model":{"type":"string"}}}}}],"messages":[{"role":"user","content":"caf\\u00e9"}]}',
  ];
  for (const body of bodies) {
    const r = await post(`${gw.base}/v1/chat/completions`, key, body);
    t.equal(r.status, 200, body);
    t.equal(gw.mock.requests.at(-1)!.body, body, 'forwarded byte for byte');
  }
});
