import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Config } from '../config/types.js';
import { nextRequestId } from '../http/request-id.js';
import { bearerToken } from '../auth/credential.js';
import { IssuerError, type Naming } from '../issuer/errors.js';
import { errorText, log } from '../log.js';
import type { GatewayStore } from '../domain/interfaces.js';
import { checkQuery, findAdminRoute, readJsonBody } from './api.js';
import { serveHealthz, serveReadyz, type Readiness } from './health.js';

export interface AdminOptions {
  store: GatewayStore;
  config: Config;
  env: NodeJS.ProcessEnv;
  /** The admin token; undefined or empty: every /admin/v1/ request is refused. */
  token: string | undefined;
  /** Prometheus text of this process, or of every worker summed (serve --workers). */
  metrics: { text(): Promise<string>; contentType: string };
  readiness: Readiness;
  /** The gateway runs on the mock provider (`serve --mock`): every answer carries `x-tollgate-mock: 1`. */
  mock?: boolean;
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

function send(res: ServerResponse, status: number, requestId: string, body: string, contentType = 'application/json'): void {
  res.writeHead(status, { ...JSON_HEADERS, 'content-type': contentType, 'x-request-id': requestId });
  res.end(body);
}

function sendError(res: ServerResponse, status: number, requestId: string, code: string, message: string, param: string | null = null, type = 'invalid_request_error'): void {
  send(res, status, requestId, JSON.stringify({ error: { message, type, code, param } }));
}

/** sha256 of both sides, then timingSafeEqual: constant time whatever the lengths. */
function tokenMatches(expected: string | undefined, header: string | undefined): boolean {
  const token = bearerToken(header);
  if (!expected || token === undefined) return false;
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(expected), digest(token));
}

const FULL_KEY = /gw_live_[0-9a-f]{32}/i;

/**
 * Where a URL carries a full key (ids and prefixes only: README, Admin API): `ref` for its path,
 * else the query parameter's name; null when it carries none. Percent-encoding does not hide one.
 */
function fullKeyIn(url: URL): string | null {
  let path = url.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // A malformed escape: the path as sent is what is looked at.
  }
  if (FULL_KEY.test(path)) return 'ref';
  for (const [name, value] of url.searchParams) {
    if (FULL_KEY.test(value) || FULL_KEY.test(name)) return name;
  }
  return null;
}

/**
 * The operators' listener (bound to 127.0.0.1 by default): /healthz, /readyz and /metrics
 * without a token; /admin/v1/… with `Authorization: Bearer <admin token>`.
 */
export function createAdminServer(o: AdminOptions): Server {
  const context = { store: o.store, config: o.config, env: o.env };

  async function handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://admin');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/healthz') return serveHealthz(res, requestId);
    if (method === 'GET' && path === '/readyz') return serveReadyz(res, requestId, o.readiness);
    if (method === 'GET' && path === '/metrics') return send(res, 200, requestId, await o.metrics.text(), o.metrics.contentType);
    if (!path.startsWith('/admin/v1/')) return sendError(res, 404, requestId, 'unknown_endpoint', 'Unknown endpoint. The admin listener serves /healthz, /readyz, /metrics and /admin/v1/ (see /admin/v1/openapi.json).');
    if (!tokenMatches(o.token, req.headers.authorization)) {
      req.resume();
      return sendError(res, 401, requestId, 'invalid_admin_token', 'The admin API needs "Authorization: Bearer <admin token>" with the token the server was started with.');
    }
    const keyIn = fullKeyIn(url);
    if (keyIn !== null) {
      req.resume();
      return sendError(res, 400, requestId, 'invalid_key_ref', 'A full key must not be put in a URL, where proxies and access logs keep it: name a key by its id (key_…) or its 12-character prefix, or send the full key in the body of POST /admin/v1/keys/lookup.', keyIn);
    }
    const found = findAdminRoute(method, path);
    if (found === undefined) {
      req.resume();
      return sendError(res, 404, requestId, 'unknown_endpoint', `Unknown admin endpoint ${method} ${path} (see /admin/v1/openapi.json).`);
    }
    // The remote command line asks for its own wording (flags, not field names) so that its
    // output is the local command's, byte for byte.
    const naming: Naming = req.headers['x-tollgate-cli'] !== undefined ? 'cli' : 'api';
    try {
      checkQuery(url.searchParams, found.route);
      const answer = await found.route.handle(context, {
        params: found.params,
        query: url.searchParams,
        body: () => readJsonBody(req),
        actor: { actor: 'admin-api', address: req.socket.remoteAddress ?? null },
      });
      if (method !== 'GET') await o.store.flushToDisk();
      if ('csv' in answer) return send(res, answer.status, requestId, answer.csv, 'text/csv; charset=utf-8');
      send(res, answer.status, requestId, JSON.stringify(answer.json));
    } catch (err) {
      if (err instanceof IssuerError) return sendError(res, err.status, requestId, err.code, err.messageFor(naming), err.field);
      throw err;
    }
  }

  return createServer((req, res) => {
    const requestId = nextRequestId();
    if (o.mock === true) res.setHeader('x-tollgate-mock', '1');
    handle(req, res, requestId).catch((err: unknown) => {
      log('error', 'internal_error', { requestId, listener: 'admin', error: errorText(err) });
      if (!res.headersSent) sendError(res, 500, requestId, 'internal_error', 'The gateway failed while handling this request; quote the x-request-id when reporting it.', null, 'api_error');
      else res.destroy();
    });
  });
}
