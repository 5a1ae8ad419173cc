/**
 * /admin/v1/openapi.json matches the server, both ways: every documented operation answers with
 * a documented status and a body valid against its schema; every route the server has is
 * documented; and the request bodies sent validate against the documented request schemas.
 */
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import t from 'tap';
import { ADMIN_ROUTES } from '../src/admin/api.js';
import { ADMIN_TOKEN, startGateway } from './helpers/harness.js';

t.test('the OpenAPI document and the server agree', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const res = await fetch(`${gw.admin}/admin/v1/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  t.equal(res.status, 200);
  const doc: any = await res.json();
  t.equal(doc.openapi, '3.1.0');

  const ajv = new (Ajv2020 as unknown as typeof Ajv2020.default)({ strict: false, allErrors: true });
  (addFormats as unknown as typeof addFormats.default)(ajv);
  ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
  const resolve = (schema: any): any => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
  const validate = (schema: any, value: unknown, what: string): void => {
    const v = ajv.compile(resolve(schema));
    t.ok(v(value), `${what} validates${v.errors ? `: ${ajv.errorsText(v.errors)}` : ''}`);
  };

  // Documented ↔ served: the same (method, path) pairs.
  const documented = Object.entries(doc.paths).flatMap(([path, item]: [string, any]) => Object.keys(item).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${path}`)).sort();
  const served = ADMIN_ROUTES.map((r) => `${r.method} ${r.path}`).sort();
  t.same(documented, served, 'every served route is documented, and every documented one served');

  // Fixtures for path parameters and bodies: a key of each mode.
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any; type: string }> => {
    const r = await fetch(gw.admin + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    const type = r.headers.get('content-type') ?? '';
    return { status: r.status, json: type.startsWith('application/json') ? JSON.parse(text) : text, type };
  };
  const credit = (await api('POST', '/admin/v1/keys', { mode: 'credit', balance: '1' })).json;
  const token = (await api('POST', '/admin/v1/keys', { mode: 'token', budget: 100 })).json;
  const bodies: Record<string, unknown> = {
    createKey: { mode: 'credit', balance: '1.5', models: ['gpt-4o-mini'], rpm: 10, expires: '2031-01-01', name: 'x' },
    lookupKey: { key: credit.key },
    setKey: { rpm: 5, name: 'renamed' },
    topUpKey: { usd: '1' },
    extendKey: { expires: 'never' },
  };
  const params: Record<string, string> = { ref: credit.id, id: 'gpt-4o' };

  for (const [path, item] of Object.entries(doc.paths) as Array<[string, any]>) {
    for (const [method, op] of Object.entries(item).filter(([m]) => m !== 'parameters') as Array<[string, any]>) {
      const url = path.replace(/\{(\w+)\}/g, (_, p: string) => params[p]!);
      const body = bodies[op.operationId];
      if (op.requestBody !== undefined) {
        t.ok(body !== undefined, `${op.operationId}: a request body to send`);
        validate(op.requestBody.content['application/json'].schema, body, `${op.operationId} request body`);
      }
      const variants = op.parameters?.some((p: any) => p.name === 'format') ? ['', '?format=csv'] : [''];
      for (const q of variants) {
        const r = await api(method.toUpperCase(), url + q, body);
        const documentedResponse = op.responses[String(r.status)];
        t.ok(documentedResponse, `${op.operationId}${q}: status ${r.status} is documented`);
        t.ok(r.status < 300, `${op.operationId}${q}: answers (${r.status} ${JSON.stringify(r.json).slice(0, 200)})`);
        const mediaType = r.type.startsWith('text/csv') ? 'text/csv' : 'application/json';
        const content = documentedResponse?.content?.[mediaType];
        t.ok(content, `${op.operationId}${q}: ${mediaType} is documented`);
        if (content) validate(content.schema, r.json, `${op.operationId}${q} response`);
      }
    }
  }

  // The token key's shape, and the error envelope, against their schemas too.
  validate({ $ref: '#/components/schemas/Key' }, (await api('GET', `/admin/v1/keys/${token.id}`)).json, 'a token key');
  const bad = await api('POST', '/admin/v1/keys', { mode: 'gold' });
  validate({ $ref: '#/components/schemas/Error' }, bad.json, 'a 400 body');
  const unauthorised = await fetch(`${gw.admin}/admin/v1/keys`);
  validate({ $ref: '#/components/schemas/Error' }, await unauthorised.json(), 'a 401 body');
  const createKey = ajv.compile(resolve({ $ref: '#/components/schemas/CreateKey' }));
  t.notOk(createKey({ mode: 'gold' }), 'the schemas do refuse: a bad mode fails CreateKey');
  const keySchema = ajv.compile(resolve({ $ref: '#/components/schemas/Key' }));
  t.notOk(keySchema({ ...credit, key: undefined, surprise: 1 }), 'and an undocumented field fails Key');
});
