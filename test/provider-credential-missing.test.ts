/**
 * A provider whose credential variable is unset is never called with an empty credential: it
 * is named at start-up, shown as unusable by the admin API's model list (`models list`, locally
 * and through `--admin-url` alike, names the variable the server reads), and its models answer
 * model_not_available (not the provider's 401, which the client would take for its own key).
 */
import t from 'tap';
import { ADMIN_TOKEN, post, PROVIDER_ENV, runCli, startGateway } from './helpers/harness.js';

t.test('unset ANTHROPIC_API_KEY: named, listed unusable, model_not_available, nothing forwarded', async (t) => {
  const gw = await startGateway(t, { env: { ANTHROPIC_API_KEY: '' }, admin: true });
  t.match(gw.serverLog(), /"provider":"anthropic","env":"ANTHROPIC_API_KEY"[^\n]*"event":"provider_credential_missing"/, 'named at start-up');
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const r = await post(`${gw.base}/v1/messages`, key, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, { 'anthropic-version': '2023-06-01' });
  t.equal(r.status, 403);
  t.equal(r.json.error.code, 'model_not_available');
  const models = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' } });
  t.same(await models.json(), { data: [], has_more: false, first_id: null, last_id: null }, 'its catalogue is empty, not fetched');
  t.equal(gw.mock.requests.length, 0, 'nothing reached the provider');
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, { model: 'gpt-4o-mini', messages: [] })).status, 200, 'the other provider works');
  const metrics = await (await fetch(`${gw.admin}/metrics`)).text();
  t.match(metrics, /^tollgate_upstream_credential_up\{provider="anthropic",credential="default"\} 0$/m, 'its credential shows as down in the metrics, not absent');
  t.match(metrics, /^tollgate_upstream_credential_up\{provider="openai",credential="default"\} 1$/m, 'the other\'s as up');

  // The running server's own verdict: its admin API's model list.
  const api = await (await fetch(`${gw.admin}/admin/v1/models`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as any[];
  const byId = Object.fromEntries(api.map((m: any) => [m.id, m]));
  t.match(byId['claude-sonnet-4-5'], { usable: false, credentialEnv: 'ANTHROPIC_API_KEY' }, 'GET /admin/v1/models: unusable, and the variable it needs');
  t.equal(byId['gpt-4o-mini'].usable, true);

  // The command line cannot know the server's environment from its own: locally and through
  // --admin-url alike (the same output), it names the variable the server reads each provider's
  // credential from.
  const remote = (args: string[]): ReturnType<typeof runCli> => runCli([...args, '--admin-url', gw.admin!], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  for (const json of [true, false]) {
    const args = ['models', 'list', ...(json ? ['--json'] : [])];
    const [local, through] = [await gw.cli(args, { ...PROVIDER_ENV, ANTHROPIC_API_KEY: '' }), await remote(args)];
    t.equal(through.code, 0);
    t.equal(through.stdout, local.stdout, `models list${json ? ' --json' : ''}: the same output locally and through --admin-url`);
    if (json) {
      const entry = JSON.parse(local.stdout).find((m: any) => m.id === 'claude-sonnet-4-5');
      t.equal(entry.credentialEnv, 'ANTHROPIC_API_KEY', 'models list: the variable the server needs');
      t.equal(entry.usable, undefined, 'no verdict from the local shell');
    } else {
      t.match(local.stdout, /reads each provider's credential from its own environment when it starts: [^\n]*ANTHROPIC_API_KEY \(anthropic\)/);
    }
  }
});
