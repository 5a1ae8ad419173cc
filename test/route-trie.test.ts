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
});
