/**
 * A provider whose credential variable is unset is never called with an empty credential: it
 * is named at start-up, shown as unusable by `models list --admin-url` (run locally, the list
 * names the variable the server reads), and its models answer
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

  // Through the admin API, the running server's own verdict.
  const remote = (args: string[]): ReturnType<typeof runCli> => runCli([...args, '--admin-url', gw.admin!], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  const list = await remote(['models', 'list', '--json']);
  const byId = Object.fromEntries(JSON.parse(list.stdout).map((m: any) => [m.id, m]));
  t.equal(byId['claude-sonnet-4-5'].usable, false, 'models list --admin-url: unusable');
  t.equal(byId['gpt-4o-mini'].usable, true);
  const table = await remote(['models', 'list']);
  t.match(table.stdout, /claude-sonnet-4-5\s+anthropic \(unusable: no credential\)/);
  t.match(table.stdout, /Providers without a credential[^\n]*: anthropic/);

  // Run locally, the command line cannot know the server's environment, whatever its own: it
  // names the variable the server reads each provider's credential from.
  const local = await gw.cli(['models', 'list', '--json'], { ...PROVIDER_ENV, ANTHROPIC_API_KEY: '' });
  const localById = Object.fromEntries(JSON.parse(local.stdout).map((m: any) => [m.id, m]));
  t.equal(localById['claude-sonnet-4-5'].credentialEnv, 'ANTHROPIC_API_KEY', 'models list: the variable the server needs');
  t.equal(localById['claude-sonnet-4-5'].usable, undefined, 'no verdict from the local shell');
  const localTable = await gw.cli(['models', 'list'], { ...PROVIDER_ENV, ANTHROPIC_API_KEY: '' });
  t.match(localTable.stdout, /reads each provider's credential from its own environment when it starts: [^\n]*ANTHROPIC_API_KEY \(anthropic\)/);
});
