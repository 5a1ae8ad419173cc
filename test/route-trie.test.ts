import t from 'tap';
import { buildRoutes, RouteTrie } from '../src/http/routes.js';

// The route table resolves exactly the endpoints of both surfaces and nothing near them.

t.test('both surfaces resolve the four endpoints with their surface and upstream path', async (t) => {
  const routes = buildRoutes();
  for (const [base, surface] of [['/v1', 'credit'], ['/token/v1', 'token']] as const) {
    t.match(routes.find('POST', `${base}/chat/completions`), { kind: 'inference', surface, endpoint: 'chat', upstreamPath: '/chat/completions' });
    t.match(routes.find('POST', `${base}/responses`), { kind: 'inference', surface, endpoint: 'responses' });
    t.match(routes.find('POST', `${base}/messages`), { kind: 'inference', surface, endpoint: 'messages' });
    t.match(routes.find('GET', `${base}/models`), { kind: 'models', surface, upstreamPath: '/models' });
  }
  t.match(routes.find('GET', '/usage'), { kind: 'usage-page' });
  t.match(routes.find('GET', '/usage/api'), { kind: 'usage-api' });
});

t.test('a stored response: {id} matches one non-empty segment, and the route says where it is', async (t) => {
  const routes = buildRoutes();
  for (const [base, surface] of [['/v1', 'credit'], ['/token/v1', 'token']] as const) {
    for (const [method, path, tail] of [['GET', '/resp_abc', ''], ['DELETE', '/resp_abc', ''], ['GET', '/resp_abc/input_items', '/input_items']] as const) {
      const full = `${base}/responses${path}`;
      const route = routes.find(method, full);
      t.match(route, { kind: 'stored-response', method, surface, upstreamPath: '/responses/', id: { tail } }, `${method} ${full}`);
      t.equal(full.slice(route!.id!.at, full.length - route!.id!.tail.length), 'resp_abc', 'the id is where the route says');
    }
    // The static route beside it is unchanged.
    t.match(routes.find('POST', `${base}/responses`), { kind: 'inference', endpoint: 'responses', upstreamPath: '/responses' });
  }
  // Any segment is an id here; what a response id may be is the server's check.
  t.match(routes.find('GET', '/v1/responses/%2e%2e'), { kind: 'stored-response' });
  for (const [method, path] of [
    ['GET', '/v1/responses'], ['GET', '/v1/responses/'], ['GET', '/v1/responses//input_items'], ['POST', '/v1/responses/compact'],
    ['POST', '/v1/responses/resp_abc/cancel'], ['DELETE', '/v1/responses/resp_abc/input_items'], ['GET', '/v1/responses/resp_abc/input_items/'],
    ['GET', '/v1/models/gpt-4o'], ['GET', '/v1/chat/resp_abc'], ['PUT', '/v1/responses/resp_abc'],
  ]) t.equal(routes.find(method, path), undefined, `${method} ${path} does not resolve`);
});

t.test('near misses do not resolve', async (t) => {
  const routes = buildRoutes();
  const misses: [string, string][] = [
    ['POST', '/'], ['POST', ''], ['POST', '/v1'], ['POST', '/v1/'], ['POST', '/v1//chat/completions'], ['POST', '/v1/chat'],
    ['POST', '/v1/chat/completions/'], ['POST', '/v1/chat/completions/x'], ['POST', '/V1/chat/completions'],
    ['POST', '/v2/chat/completions'], ['POST', '/token/chat/completions'], ['POST', '/token/v1'], ['POST', '/token'],
    ['GET', '/v1/chat/completions'], ['DELETE', '/v1/messages'], ['POST', '/v1/models'], ['HEAD', '/v1/models'], ['POST', '/usage'],
  ];
  for (const [method, path] of misses) t.equal(routes.find(method, path), undefined, `${method} ${path}`);
});

t.test('routes are checked when they are added, not when they are looked up', async (t) => {
  const trie = new RouteTrie();
  const route = { kind: 'models', method: 'GET', surface: null, endpoint: null, upstreamPath: '' } as const;
  t.throws(() => trie.add('v1/models', route));
  t.throws(() => trie.add('/v1/models/', route));
  t.throws(() => trie.add('/v1//models', route));
  trie.add('/v1/models', route);
  t.throws(() => trie.add('/v1/models', route), /duplicate/);
  t.throws(() => trie.add('/v1/{name}', route), 'only {id} is a parameter');
  t.throws(() => trie.add('/v1/x{id}', route));
  const byId = { ...route, upstreamPath: '/{id}' };
  trie.add('/v1/{id}', byId);
  t.throws(() => trie.add('/v1/{id}', byId), /duplicate/);
  t.equal(trie.find('GET', '/v1/models'), route, 'a static segment first');
  t.equal(trie.find('GET', '/v1/other'), byId, 'then the parameter');
});
