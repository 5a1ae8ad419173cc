import type { Endpoint } from '../config/types.js';
import type { KeyMode } from '../store/types.js';

export type RouteKind = 'inference' | 'models' | 'usage-page' | 'usage-api' | 'healthz' | 'readyz';

export interface Route {
  kind: RouteKind;
  method: 'GET' | 'POST';
  /** The billing surface a key must belong to (inference and models routes). */
  surface: KeyMode | null;
  endpoint: Endpoint | null;
  /** The path after the surface's base ("/chat/completions"), appended to the provider's base URL. */
  upstreamPath: string;
}

interface TrieNode {
  children: Map<string, TrieNode>;
  /** Routes ending at this node, by method. */
  routes: Map<string, Route>;
}

function node(): TrieNode {
  return { children: new Map(), routes: new Map() };
}

/**
 * A path trie, built and checked once at start-up; `find()` only walks it (find-my-way's split:
 * validation in `on()`, a tight loop in `find()`). Segments are compared whole, so `/v1/` or
 * `/v1//models` never resolve. The query string must be stripped by the caller.
 */
export class RouteTrie {
  private readonly root = node();

  add(path: string, route: Route): void {
    if (!path.startsWith('/') || path.endsWith('/') || path.includes('//')) throw new Error(`bad route path ${path}`);
    let at = this.root;
    for (const segment of path.slice(1).split('/')) {
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
      if (slash === -1) {
        at = at.children.get(path.slice(start));
        return at?.routes.get(method);
      }
      at = at.children.get(path.slice(start, slash));
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
  }
  trie.add('/usage', { kind: 'usage-page', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  trie.add('/usage/api', { kind: 'usage-api', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  // For load balancers: the same answers as on the admin listener (src/admin/health.ts).
  trie.add('/healthz', { kind: 'healthz', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  trie.add('/readyz', { kind: 'readyz', method: 'GET', surface: null, endpoint: null, upstreamPath: '' });
  return trie;
}
