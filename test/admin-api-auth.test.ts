/**
 * The admin listener: health, readiness and metrics without a token; /admin/v1/ only with the
 * admin token (401 invalid_admin_token otherwise, always when none is configured); and the
 * public listener answers /healthz and /readyz but nothing else of the admin listener.
 */
import t from 'tap';
import { ADMIN_TOKEN, runCli, startGateway } from './helpers/harness.js';

t.test('token required under /admin/v1/, not for health, readiness and metrics', async (t) => {
  const gw = await startGateway(t, { admin: true });
  t.match(gw.admin, /^http:\/\/127\.0\.0\.1:\d+$/, 'bound to 127.0.0.1 by default');
  for (const path of ['/healthz', '/readyz']) {
    const r = await fetch(gw.admin + path);
    t.equal(r.status, 200, `admin ${path}`);
    const p = await fetch(gw.base + path);
    t.equal(p.status, 200, `public ${path}`);
  }
  t.same(await (await fetch(`${gw.admin}/readyz`)).json(), { status: 'ready' });
  const m = await fetch(`${gw.admin}/metrics`);
  t.equal(m.status, 200);
  t.match(m.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);

  const cases: Array<[string, Record<string, string>]> = [
    ['no header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-token' }],
    ['the token without Bearer', { authorization: ADMIN_TOKEN }],
    ['a longer token', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
    ['x-api-key', { 'x-api-key': ADMIN_TOKEN }],
  ];
  for (const [name, headers] of cases) {
    for (const path of ['/admin/v1/keys', '/admin/v1/nowhere', '/admin/v1/openapi.json']) {
      const r = await fetch(gw.admin + path, { headers });
      t.equal(r.status, 401, `${name} ${path}: 401`);
      const body = await r.json();
      t.match(body, { error: { type: 'invalid_request_error', code: 'invalid_admin_token', param: null } }, `${name} ${path}: the envelope`);
      t.type(body.error.message, 'string');
    }
  }
  const ok = await fetch(`${gw.admin}/admin/v1/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  t.equal(ok.status, 200, 'the right token');
  t.same(await ok.json(), []);
  // The scheme is case-insensitive (RFC 9110 §11.1), as on the public listener.
  for (const scheme of ['bearer', 'BEARER', 'Bearer  ']) {
    const r = await fetch(`${gw.admin}/admin/v1/keys`, { headers: { authorization: `${scheme} ${ADMIN_TOKEN}` } });
    t.equal(r.status, 200, `"${scheme.trim()}" and the right token`);
  }

  for (const path of ['/metrics', '/admin/v1/keys', '/admin/v1/openapi.json']) {
    const r = await fetch(gw.base + path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    t.equal(r.status, 404, `public ${path}: 404`);
    t.equal((await r.json()).error.code, 'unknown_endpoint');
  }
});

t.test('an admin port without a token: every /admin/v1/ request is 401', async (t) => {
  const gw = await startGateway(t, { admin: true, env: { TOLLGATE_ADMIN_TOKEN: '' } });
  t.ok(gw.admin, 'the listener opens for --admin-port alone');
  for (const authorization of ['Bearer ', 'Bearer x', `Bearer ${ADMIN_TOKEN}`]) {
    const r = await fetch(`${gw.admin}/admin/v1/keys`, { headers: { authorization } });
    t.equal(r.status, 401);
    t.equal((await r.json()).error.code, 'invalid_admin_token');
  }
  t.equal((await fetch(`${gw.admin}/healthz`)).status, 200);
});

t.test('an admin token read from a file, with its newline, works on both sides', async (t) => {
  const gw = await startGateway(t, { admin: true, env: { TOLLGATE_ADMIN_TOKEN: `${ADMIN_TOKEN}\n` } });
  const ok = await fetch(`${gw.admin}/admin/v1/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  t.equal(ok.status, 200, 'the server compares the token without its newline');
  const r = await runCli(['keys', 'list', '--json', '--admin-url', gw.admin!], { TOLLGATE_ADMIN_TOKEN: `  ${ADMIN_TOKEN}\r\n` });
  t.equal(r.code, 0, `the remote command line sends it without its whitespace (${r.stderr.trim()})`);
  t.same(JSON.parse(r.stdout), [], 'and is answered');
});
