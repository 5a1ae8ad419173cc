import type { Endpoint } from '../config/types.js';
import type { KeyMode } from '../domain/types.js';

/** `stored-response`: GET|DELETE /responses/{id} and GET /responses/{id}/input_items. */
export type RouteKind = 'inference' | 'models' | 'stored-response' | 'usage-page' | 'usage-api' | 'healthz' | 'readyz';

export interface Route {
  kind: RouteKind;
  method: 'GET' | 'POST' | 'DELETE';
  /** The billing surface a key must belong to (inference, models and stored-response routes). */
  surface: KeyMode | null;
  endpoint: Endpoint | null;
  /**
   * The path after the surface's base ("/chat/completions"), appended to the provider's base
   * URL; for a route with an `{id}` segment, what comes before the id ("/responses/").
   */
  upstreamPath: string;
  /**
   * A route with an `{id}` segment: where the id starts in the client's path, and what follows
   * it there and upstream ("" or "/input_items"). The id is `path.slice(at, path.length - tail.length)`.
   */
  id?: { at: number; tail: string };
}

/** The segment written `{id}` in a route's path: any one non-empty segment. */
const PARAM = '{id}';

interface TrieNode {
  children: Map<string, TrieNode>;
  /** The child matching any segment its static children do not (a `{id}` segment), or null. */
  param: TrieNode | null;
  /** Routes ending at this node, by method. */
  routes: Map<string, Route>;
}

function node(): TrieNode {
  return { children: new Map(), param: null, routes: new Map() };
}

/**
 * A path trie, built and checked once at start-up; `find()` only walks it (find-my-way's split:
 * validation in `on()`, a tight loop in `find()`). Segments are compared whole, so `/v1/` or
 * `/v1//models` never resolve. A `{id}` segment matches any one non-empty segment that no
 * static segment beside it names; it costs a static route nothing (it is tried only when the
 * static lookup missed). The query string must be stripped by the caller.
 */
export class RouteTrie {
  private readonly root = node();

  add(path: string, route: Route): void {
    if (!path.startsWith('/') || path.endsWith('/') || path.includes('//')) throw new Error(`bad route path ${path}`);
    let at = this.root;
    for (const segment of path.slice(1).split('/')) {
      if (segment === PARAM) {
        at = at.param ??= node();
        continue;
      }
      if (segment.includes('{')) throw new Error(`bad route path ${path}`);
      let next = at.children.get(segment);
      if (!next) at.children.set(segment, (next = node()));
      at = next;
    }
    if (at.routes.has(route.method)) throw new Error(`duplicate route ${route.method} ${path}`);
    at.routes.set(route.method, route);
  }

  /** The route for this method and path, or undefined when the path does not resolve. */
  find(method: string, path: string): Route | undefined {
    let at: TrieNode | undefined = this.root;
    let start = 1;
    while (at !== undefined) {
      const slash = path.indexOf('/', start);
      const end = slash === -1 ? path.length : slash;
      const param: TrieNode | null = at.param;
      at = at.children.get(path.slice(start, end));
      if (at === undefined && param !== null && end > start) at = param;
      if (slash === -1) return at?.routes.get(method);
      start = slash + 1;
    }
    return undefined;
  }
}

/** Where each surface is served: `/v1` spends credit, `/token/v1` draws on a token budget. */
export const SURFACE_BASES: ReadonlyArray<[string, KeyMode]> = [['/v1', 'credit'], ['/token/v1', 'token']];

const INFERENCE: ReadonlyArray<[string, Endpoint]> = [
  ['/chat/completions', 'chat'],
  ['/responses', 'responses'],
  ['/messages', 'messages'],
];

/** The gateway's whole route table. */
export function buildRoutes(): RouteTrie {
  const trie = new RouteTrie();
  for (const [base, surface] of SURFACE_BASES) {
    for (const [path, endpoint] of INFERENCE) {
      trie.add(base + path, { kind: 'inference', method: 'POST', surface, endpoint, upstreamPath: path });
    }
    trie.add(`${base}/models`, { kind: 'models', method: 'GET', surface, endpoint: null, upstreamPath: '/models' });
    // A stored response, for the account that made it (server.ts storedResponse).
    const at = `${base}/responses/`.length;
    for (const [method, tail] of [['GET', ''], ['DELETE', ''], ['GET', '/input_items']] as const) {
      trie.add(`${base}/responses/${PARAM}${tail}`, { kind: 'stored-response', method, surface, endpoint: null, upstreamPath: '/responses/', id: { at, tail } });
    }
  }
  trie.add('/usage', { kind: 'usage-page', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  trie.add('/usage/api', { kind: 'usage-api', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  // For load balancers: the same answers as on the admin listener (src/admin/health.ts).
  trie.add('/healthz', { kind: 'healthz', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  trie.add('/readyz', { kind: 'readyz', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  return trie;
}
