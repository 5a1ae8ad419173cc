/**
 * `--admin-url` pointed at a server that is not an admin listener — the gateway's own public
 * listener, or any other web server — is bad usage: exit 2, one line saying so and where the admin
 * listener is, rather than the other server's 404 text passed off as the admin API's verdict.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ADMIN_TOKEN, runCli, startGateway } from './helpers/harness.js';

t.test('--admin-url naming a server that is not an admin API', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const web = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>hello</title>');
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => web.close(() => resolve())));
  const webBase = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  const env = { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN };

  for (const [what, base, answer] of [
    ['the public listener', gw.base, /with 404 unknown_endpoint/],
    ['a web page', webBase, /with 200, not JSON/],
  ] as const) {
    for (const args of [['keys', 'list'], ['models', 'disable', 'gpt-4o'], ['audit']]) {
      const r = await runCli([...args, '--admin-url', base], env);
      t.equal(r.code, 2, `${what}, ${args.join(' ')}: exit 2`);
      t.equal(r.stdout, '', `${what}, ${args.join(' ')}: nothing on stdout`);
      t.match(r.stderr, new RegExp(`^tollgate: ${base.replace(/\./g, '\\.')} is not a tollgate admin API \\([^\\n]*\\): point --admin-url or TOLLGATE_ADMIN_URL at the admin listener[^\\n]*\\n$`), `${what}, ${args.join(' ')}: one line saying so`);
      t.match(r.stderr, answer, `${what}, ${args.join(' ')}: and what it answered`);
    }
  }
  const right = await runCli(['keys', 'list', '--admin-url', gw.admin!], env);
  t.equal(right.code, 0, 'the admin listener itself: answered');
});
