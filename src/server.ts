import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { modelAllowed } from './domain/rules.js';
import { credentialOf } from './auth/credential.js';
import { hashKey, isWellFormedKey } from './auth/keys.js';
import type { Config, Model } from './config/types.js';
import { FORMATS } from './formats/index.js';
import { requestLevers, type RequestLevers } from './formats/levers.js';
import { requestFacts, type RequestFacts } from './formats/model.js';
import { unsupportedIn } from './formats/references.js';
import { continuedResponses, isResponseId } from './formats/responses.js';
import type { FormatAdapter } from './formats/types.js';
import { TopLevelScanner } from './formats/top-level-scanner.js';
import { Exchange, type UpstreamRequest } from './forward/exchange.js';
import { emptyList, ModelListing, modelListFormat, modelListPath, type ModelListFormat } from './forward/model-list.js';
import { allCredentials, buildUpstreams, closeUpstreams, queuedCalls, type Upstream } from './forward/pools.js';
import type { Clock, Credential, NotInRotation } from './forward/rotation.js';
import { bodyAtHand, readBody, REFUSED, TOO_LARGE, type RequestBody } from './http/body.js';
import { clientErrorHandler } from './http/client-error.js';
import { headRefusal } from './http/request-head.js';
import { Drain } from './http/drain.js';
import { sendError, sendErrorSaying, type GatewayErrorCode } from './http/errors.js';
import { PREFLIGHT_RESPONSE_HEADERS, upstreamRequestHeaders, withRequestId } from './http/headers.js';
import { nextRequestId } from './http/request-id.js';
import { buildRoutes, type Route } from './http/routes.js';
import { log } from './log.js';
import { holdFor } from './meter/hold.js';
import { serveHealthz, serveReadyz, type Readiness } from './admin/health.js';
import type { AccessLog } from './observe/access-log.js';
import { CredentialWatch } from './observe/credentials.js';
import { callFacts, noteCode, noteDispatch, noteKey, noteModel, noteRecord, noteRoute, Observer } from './observe/call.js';
import type { Metrics } from './observe/metrics.js';
import { unpricedRefusal } from './meter/levers.js';
import type { GatewayStore } from './domain/interfaces.js';
import { PLAIN_USAGE_DETAIL, type HoldEitherWay, type KeyRecord, type ResponseOwner, type UsageRecord } from './domain/types.js';
import { serveUsageApi } from './usage/api.js';
import { serveUsagePage } from './usage/page.js';

export interface GatewayOptions {
  /** Grace period for reading a provider's answer after the client left (ms). */
  clientGoneGraceMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Prometheus metrics of this process (null: none kept). */
  metrics?: Metrics | null;
  /** The access log (null: off, `log.access: false`). */
  accessLog?: AccessLog | null;
  /** The providers are the built-in mock (`serve --mock`): every answer says so, `x-tollgate-mock: 1`. */
  mock?: boolean;
  /** Where the credentials leaving and coming back into rotation are told (default: this process's own). */
  credentialWatch?: CredentialWatch;
  /**
   * What every time-based rule of the providers' rotation reads (rests, the probes of credentials
   * out of rotation, the retry budget): Date.now unless a test drives the time.
   */
  clock?: Clock;
}

export interface Gateway {
  server: Server;
  /** Set as soon as the process is told to stop: /readyz answers 503 from then on. */
  draining: boolean;
  /**
   * Stops accepting, closes idle connections, answers calls in flight with `connection: close`
   * (or closes their connection after their last byte) and resolves as soon as the last call in
   * flight ends (at most `timeoutMs`); then closes the provider pools. Resolves to the time
   * (performance.now()) the last call in flight ended, or the close began when none was.
   */
  close(timeoutMs?: number): Promise<number>;
}

/**
 * Wires the stages in the spec's order of checks. Everything the handler consults — routes,
 * model table, provider pools, header tables, error bodies — is built here, once.
 */
export function createGateway(config: Config, store: GatewayStore, options: GatewayOptions = {}): Gateway {
  const routes = buildRoutes();
  const clock = options.clock ?? Date.now;
  const credentialWatch = options.credentialWatch ?? new CredentialWatch(clock);
  const upstreams = buildUpstreams(config, options.env ?? process.env, clock, credentialWatch);
  credentialWatch.watch(() => {
    const list: NotInRotation[] = [];
    for (const upstream of upstreams.values()) upstream.rotation.notInRotation(list);
    return list;
  });
  options.metrics?.watchUpstreamQueues(() => queuedCalls(upstreams));
  options.metrics?.watchCredentials(allCredentials(upstreams), clock);
  const upstreamOf = (providerName: string): Upstream => upstreams.get(providerName)!;
  const catalog = { openai: upstreamOf(config.catalogProvider.openai.name), anthropic: upstreamOf(config.catalogProvider.anthropic.name) };
  /** The ids (and aliases) of the catalogue's models whose provider has its credential: the only ones GET /models may list. */
  const servedModels = new Map([...config.modelsByName].filter(([, model]) => upstreamOf(model.provider.name).usable));
  const clientGoneGraceMs = options.clientGoneGraceMs ?? config.limits.clientGoneGraceMs;
  const clientStallMs = config.limits.clientStallMs;
  // This process owns the calls it forwards: a call left in flight by one that died is settled.
  void store.serveCalls();
  const { maxRequestBytes, maxJsonDepth, maxHeaderCount } = config.limits;
  const observer = new Observer(options.metrics ?? null, options.accessLog ?? null);
  const readiness: Readiness = { draining: () => gateway.draining, storeAnswers: () => store.answers(), notInRotation: () => credentialWatch.notInRotation() };
  const drain = new Drain();
  /** The largest body taken before its admission when it came whole with the request's head. */
  const earlyBodyLimit = Math.min(maxRequestBytes, EARLY_BODY_LIMIT);

  /**
   * Steps 8–11 for inference calls, after the key, funds and rate checks passed: read the
   * body, check the model, hold the call's worst case against the account, forward. Until the
   * call is forwarded, every way out releases what step 7 and the hold took (`release`).
   * `early`: the body, already read before the admission (admitInference).
   */
  async function inference(req: IncomingMessage, res: ServerResponse, route: Route, key: KeyRecord, requestId: string, query: string, early?: EarlyBody): Promise<void> {
    // The body is scanned as it arrives; only what the checks need is read from it.
    const scanner = early?.scanner ?? new TopLevelScanner(maxJsonDepth);
    const body = early !== undefined ? early.body : await readBody(req, maxRequestBytes, scanner);
    if (body === undefined) return store.release(key, requestId);
    const refuse = (code: GatewayErrorCode): void => {
      store.release(key, requestId);
      sendError(res, code, requestId);
    };
    if (body === TOO_LARGE) return refuse('request_too_large');
    const facts = body === REFUSED ? undefined : requestFacts(body, scanner);
    if (facts === undefined) return refuse('model_required');
    noteModel(res, facts.model);
    // An alias is allowed, switched and priced as its entry.
    if (!modelAllowed(key, config.modelsByName.get(facts.model)?.id ?? facts.model)) return refuse('model_not_allowed');
    // Step 10: the catalogue here; the run-time switch (`tollgate models disable`) is read by
    // the hold below, in the same store call, so that it costs no round trip of its own.
    const call = servable(route, facts, req);
    if (call === undefined) return refuse('model_not_available');
    const { model } = call;
    // An option no call may use (a reference to an object stored on the provider's account,
    // `background`), then a priced option the model's price cannot price, is refused before
    // anything is forwarded.
    const option = optionRefusal(call, key.mode === 'credit');
    if (option !== null) {
      // A switched-off model is refused as such first (step 10 comes before this check).
      return store.modelEnabled(model.id, model.enabledByDefault, (enabled) => {
        store.release(key, requestId);
        if (enabled === null) return sendError(res, 'store_unavailable', requestId);
        if (!enabled) return sendError(res, 'model_not_available', requestId);
        sendErrorSaying(res, option.code, requestId, option.message, option.member);
      });
    }
    const hold = holdFor(call.format, model, call.levers, key.mode, facts, facts.raw.length, facts.stream, Date.now());
    // Decided by the hold, after step 10's switch and before the funds (previous_response_not_found).
    hold.previousResponses = continuedBy(call);
    store.hold(key, requestId, hold, (refusal, continued) => {
      if (refusal !== null) return sendError(res, refusal, requestId);
      // The client left while the hold was placed: nothing goes out, nothing is billed.
      if (res.destroyed) return store.release(key, requestId);
      forward(req, res, route, key, requestId, query, call, hold.at, continued);
    });
  }

  /**
   * Step 10's catalogue for a readable body: the model, the provider serving it (with its
   * credential) and the price levers the request pulls; undefined: `model_not_available`.
   */
  function servable(route: Route, facts: RequestFacts, req: IncomingMessage): ServableCall | undefined {
    const model = config.modelsByName.get(facts.model);
    const endpoint = route.endpoint!;
    if (model === undefined || !model.endpoints.has(endpoint)) return undefined;
    const upstream = upstreamOf(model.provider.name);
    // A provider without its credential is never called: an empty credential would earn the
    // provider's 401, which the client would take for a verdict on its own key.
    if (!upstream.usable) return undefined;
    const format = FORMATS[endpoint];
    return { facts, model, upstream, format, levers: requestLevers(format.levers, facts, req.headers) };
  }

  /**
   * Step 11, once the call is admitted and its hold placed: forwards it, metered, with the
   * credential its provider's rotation picks for the account and model — or, for a call that
   * continues a stored response (`continued`, read by the hold), the credential that made it,
   * and no other. When none may be sent to, the call is answered without a send.
   */
  function forward(req: IncomingMessage, res: ServerResponse, route: Route, key: KeyRecord, requestId: string, query: string, call: ServableCall, startedAt: number, continued: ResponseOwner | null | undefined): void {
    const { facts, model, upstream, format } = call;
    try {
      // Streams must report usage; a body that does not ask for it is the one thing changed.
      const usageBody = format.streamUsageRequest?.(facts);
      const exchange = new Exchange(res, requestId, {
        store, key, model, format, requestedStream: facts.stream, stripUsageChunk: usageBody !== undefined, clientGoneGraceMs,
        startedAt, levers: call.levers, request: facts,
      }, clientStallMs);
      const rotation = upstream.rotation;
      const home = continued == null || continued.provider !== upstream.provider.name ? undefined : rotation.named(continued.credential);
      const credential = home === undefined ? rotation.pick(key.account, model.id, 0) : rotation.pinned(home, model.id);
      if (credential === null) return exchange.unsent(home === undefined ? rotation.lastRefusal(model.id) : rotation.refusalOf(home, model.id));
      const upstreamBody = usageBody ?? facts.raw;
      const headers = upstreamRequestHeaders(req.headers, credential.header, upstream.defaults);
      headers['content-length'] = String(upstreamBody.length);
      // The body's bytes, taken once: every attempt sends the same Buffer (or list of Buffers:
      // undici writes any iterable of Buffers, lib/core/request.js, though its types name only
      // single-value bodies), never a copy per attempt.
      const request: UpstreamRequest = { path: '', method: 'POST', headers, body: upstreamBody.forUpstream() as Buffer };
      exchange.send(rotation, credential, request, route.upstreamPath + query, home === undefined);
    } catch (err) {
      store.release(key, requestId);
      failed(res, err);
    }
  }

  /**
   * An inference call on a store whose admission is a round trip of its own (Redis), run at the
   * end of the I/O callback that parsed the request's head. When its body came whole with the
   * head (bodyAtHand) and names a model the catalogue serves with no option left unpriced, the
   * call's hold is computed now and the admission places it (admitHolding): one round trip
   * before the call goes out instead of two. Steps 3–7 still decide first and answer first,
   * then step 9 and step 10's switch, so the order of checks and its codes are unchanged; a
   * body not yet at hand is read after the admission as always (so a refusal of steps 3–7
   * never waits for a body), and any other body is judged after the admission, from the bytes
   * read here.
   */
  function admitInference(req: IncomingMessage, res: ServerResponse, route: Route, hash: string, requestId: string, query: string): void {
    try {
      const scanner = new TopLevelScanner(maxJsonDepth);
      const body = bodyAtHand(req, earlyBodyLimit, scanner);
      if (body === null) return admit(req, res, route, hash, requestId, query);
      const facts = body === REFUSED ? undefined : requestFacts(body, scanner);
      const call = facts === undefined ? undefined : servable(route, facts, req);
      // A refusal of the body's options is due: the ordinary path answers steps 3–7 first.
      if (facts === undefined || call === undefined || optionRefusal(call, true) !== null) {
        return admit(req, res, route, hash, requestId, query, { body, scanner });
      }
      const at = Date.now();
      const hold: HoldEitherWay = {
        credit: holdFor(call.format, call.model, call.levers, 'credit', facts, facts.raw.length, facts.stream, at),
        token: holdFor(call.format, call.model, call.levers, 'token', facts, facts.raw.length, facts.stream, at),
      };
      hold.credit.previousResponses = hold.token.previousResponses = continuedBy(call);
      store.admitHolding!(hash, route.surface!, requestId, hold, (key, refusal, retryAfter, continued) => {
        if (key !== undefined) noteKey(res, key);
        if (refusal === null || refusal === 'model_not_allowed' || refusal === 'model_not_available' || refusal === 'previous_response_not_found') noteModel(res, facts.model);
        if (refusal !== null) return refused(res, refusal, requestId, retryAfter);
        // The client left while waiting: nothing goes out, nothing is billed.
        if (res.destroyed) return store.release(key!, requestId);
        forward(req, res, route, key!, requestId, query, call, at, continued);
      });
    } catch (err) {
      failed(res, err);
    }
  }

  /** Steps 3–7 alone; then the rest of the call (its body read now, unless `early` has it). */
  function admit(req: IncomingMessage, res: ServerResponse, route: Route, hash: string, requestId: string, query: string, early?: EarlyBody): void {
    store.admit(hash, route.surface!, requestId, (key, refusal, retryAfter) => {
      if (key !== undefined) noteKey(res, key);
      if (refusal !== null) return refused(res, refusal, requestId, retryAfter);
      // The client left while waiting: free the slot rather than read a body that will not come.
      if (res.destroyed) return store.release(key!, requestId);
      proceed(req, res, route, key!, requestId, query, early);
    });
  }

  /**
   * GET /models: the list of the provider `catalogProvider` names for the caller's format, cut
   * down to what the key may call (forward/model-list.ts); the run-time switches are read beside
   * the provider call, in one store read.
   */
  function models(req: IncomingMessage, res: ServerResponse, key: KeyRecord, requestId: string): void {
    unmeteredSlot(res, key, requestId);
    const upstream = req.headers['anthropic-version'] !== undefined ? catalog.anthropic : catalog.openai;
    const format = modelListFormat(upstream.provider);
    if (!upstream.usable) return serveEmptyCatalogue(res, requestId, format);
    const rotation = upstream.rotation;
    const credential = rotation.pick(key.account, '', 0);
    if (credential === null) return new Exchange(res, requestId, null, clientStallMs).unsent(rotation.lastRefusal(null));
    noteDispatch(res, upstream.provider.name, credential.name);
    const listing = new ModelListing(res, requestId, key, format, rotation, credential, servedModels, clientStallMs);
    store.readModelSwitches((switches) => listing.switchesRead(switches));
    credential.pool.dispatch({
      path: credential.basePath + modelListPath(format),
      method: 'GET',
      headers: upstreamRequestHeaders(req.headers, credential.header, upstream.defaults),
    }, listing);
  }

  /**
   * GET|DELETE /responses/{id} and GET /responses/{id}/input_items, after steps 3–7: for the
   * account that made the response (its owner record), forwarded unchanged to the provider and
   * credential that made it, neither billed nor listed. Any other id (another account's, one no
   * call through the gateway made, one that cannot be a response id: never looked up, never put
   * into a provider's URL) is 404 `response_not_found`, and nothing is forwarded.
   */
  function storedResponse(req: IncomingMessage, res: ServerResponse, route: Route, key: KeyRecord, requestId: string, query: string): void {
    unmeteredSlot(res, key, requestId);
    const { at, tail } = route.id!;
    const id = req.url!.slice(at, req.url!.length - query.length - tail.length);
    if (!isResponseId(id)) return sendError(res, 'response_not_found', requestId);
    store.responseOwner(key.account, id, (owner, failure) => {
      if (failure) return sendError(res, 'store_unavailable', requestId);
      if (owner === undefined) return sendError(res, 'response_not_found', requestId);
      const upstream = upstreams.get(owner.provider);
      // A provider or credential since removed from the config, or left without its key, cannot be asked.
      const home = upstream?.rotation.named(owner.credential);
      if (upstream === undefined || home === undefined) return sendError(res, 'response_not_found', requestId);
      if (res.destroyed) return;
      passThrough(req, res, requestId, upstream, home, route.method, route.upstreamPath + id + tail + query);
    });
  }

  /** A call neither billed nor listed, in flight all the same: its concurrency slot is freed when it ends. */
  function unmeteredSlot(res: ServerResponse, key: KeyRecord, requestId: string): void {
    if (key.concurrency !== null) res.once('close', () => store.release(key, requestId));
  }

  /**
   * Forwards a call neither billed nor listed to `home`, the credential of `upstream` it must go
   * to, and no other (`path`: after its base path, query included). When `home` may not be sent
   * to (it rests, or is out of rotation), the call is answered without a send.
   */
  function passThrough(req: IncomingMessage, res: ServerResponse, requestId: string, upstream: Upstream, home: Credential, method: Route['method'], path: string): void {
    const exchange = new Exchange(res, requestId, null, clientStallMs);
    const rotation = upstream.rotation;
    const credential = rotation.pinned(home, null);
    if (credential === null) return exchange.unsent(rotation.refusalOf(home, null));
    const request: UpstreamRequest = { path: '', method, headers: upstreamRequestHeaders(req.headers, credential.header, upstream.defaults) };
    exchange.send(rotation, credential, request, path, false);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? '' : url.slice(q);
    const method = req.method ?? 'GET';
    const requestId = nextRequestId();
    observer.begin(res, requestId);
    drain.track(req, res);
    // Too many header fields, no HTTP version, Host missing or repeated: answered here with the
    // envelope, and the connection closed like after any request Node's parser refuses.
    const headFault = headRefusal(req, maxHeaderCount);
    if (headFault !== null) {
      res.setHeader('connection', 'close');
      return sendError(res, headFault, requestId);
    }
    if (method === 'OPTIONS') {
      res.writeHead(204, withRequestId(PREFLIGHT_RESPONSE_HEADERS, requestId));
      res.end();
      return;
    }
    // 1. The path resolves (before any credential is looked at).
    const route = routes.find(method, path);
    if (route === undefined) return sendError(res, 'unknown_endpoint', requestId);
    noteRoute(res, route);
    if (route.kind === 'healthz') return serveHealthz(res, requestId);
    if (route.kind === 'readyz') return serveReadyz(res, requestId, readiness);
    if (route.kind === 'usage-page') return serveUsagePage(res, requestId);
    // 2. A credential is present; 3. the key is known.
    const credential = credentialOf(req.headers);
    if (credential === undefined) return sendError(res, 'missing_api_key', requestId);
    if (!isWellFormedKey(credential)) return sendError(res, 'invalid_api_key', requestId);
    const hash = hashKey(credential);
    if (route.kind === 'usage-api') {
      return store.lookup(hash, (key, failure) => {
        if (failure) return sendError(res, 'store_unavailable', requestId);
        if (key === undefined) return sendError(res, 'invalid_api_key', requestId);
        noteKey(res, key);
        serveUsageApi(res, store, key, query, requestId).catch(() => {
          if (!res.headersSent) sendError(res, 'store_unavailable', requestId);
          else res.destroy();
        });
      });
    }
    // 3. Known; 4. usable (status, expiry); 5. right surface; 6. funds, net of what the key's
    // calls in flight hold; 7. rate, then concurrency, before the body is read — one store
    // call (LMDB: reads now and this turn's group commit; Redis: one script, which for an
    // inference call whose body is at hand places its hold too: admitInference).
    if (route.kind === 'inference' && store.admitHolding !== undefined) {
      // Node's parser pushes the body bytes that came with the head after this event returns.
      process.nextTick(admitInference, req, res, route, hash, requestId, query);
      return;
    }
    admit(req, res, route, hash, requestId, query);
  }

  /** A refusal of the admission (with `retry-after` for the 429s). */
  function refused(res: ServerResponse, refusal: GatewayErrorCode, requestId: string, retryAfter: number): void {
    sendError(res, refusal, requestId, refusal === 'rate_limit_exceeded' || refusal === 'concurrency_limit_exceeded' ? retryAfter : undefined);
  }

  /** After admission: the catalogue, or an inference call (whose body is read now, unless `early` has it). */
  function proceed(req: IncomingMessage, res: ServerResponse, route: Route, key: KeyRecord, requestId: string, query: string, early?: EarlyBody): void {
    if (route.kind === 'models') return models(req, res, key, requestId);
    if (route.kind === 'stored-response') return storedResponse(req, res, route, key, requestId, query);
    inference(req, res, route, key, requestId, query, early).catch((err: unknown) => {
      // Thrown before the call was forwarded (reading the body, or checking the model).
      store.release(key, requestId);
      failed(res, err);
    });
  }

  /**
   * An exception of our own: logged with the request id the client gets, counted
   * (`code="internal_error"`), recorded against the key at zero cost, answered 500
   * `internal_error` — never blamed on the provider.
   */
  function failed(res: ServerResponse, err: unknown): void {
    const facts = callFacts(res);
    const requestId = facts.requestId ?? nextRequestId();
    log('error', 'internal_error', { requestId, keyPrefix: facts.key?.prefix ?? null, error: err instanceof Error ? err.stack ?? err.message : String(err) });
    noteCode(res, 'internal_error');
    const answer = (): void => {
      if (!res.headersSent) sendError(res, 'internal_error', requestId);
      else res.destroy();
    };
    const endpoint = facts.endpoint;
    if (facts.key === null || (endpoint !== 'chat' && endpoint !== 'responses' && endpoint !== 'messages' && endpoint !== 'models')) return answer();
    const record = internalErrorRecord(requestId, endpoint, facts.model, facts.key.mode === 'credit');
    noteRecord(res, record);
    try {
      // Not the settlement of a forwarded call: recorded whether or not the call had an entry in flight.
      store.record(facts.key, record, { nano: 0, tokens: 0 }, { committed: answer }, false);
    } catch {
      answer();
    }
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    try {
      handle(req, res);
    } catch (err) {
      failed(res, err);
    }
  };

  // With the mock provider, the header goes on first and every answer's writeHead merges it in
  // (a separate handler: a gateway on real providers pays nothing for it).
  const handler = options.mock !== true ? onRequest : (req: IncomingMessage, res: ServerResponse): void => {
    res.setHeader(MOCK_ANSWER_HEADER[0], MOCK_ANSWER_HEADER[1]);
    onRequest(req, res);
  };
  const limits = config.limits;
  const server = createServer({
    // Clients keep connections to a gateway for long: outlive common 60 s idle timeouts of
    // load balancers and SDK pools, so the server is never the side that races a reused socket.
    keepAliveTimeout: 65_000,
    // Counted from a request's first byte (an idle keep-alive connection is not timed by these).
    headersTimeout: limits.clientHeadersTimeoutMs,
    requestTimeout: limits.clientRequestTimeoutMs,
    // How often Node looks for requests over those limits (its default, 30 s, would let a 20 s
    // limit run to 50 s).
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(limits.clientHeadersTimeoutMs / 4))),
    maxHeaderSize: limits.maxHeaderBytes,
    // A request without Host gets the gateway's envelope from handle(), not Node's bare 400.
    requireHostHeader: false,
  }, handler);
  server.maxConnections = limits.maxConnections;
  // No limit of Node's own: `limits.maxHeaderCount` is counted exactly by headRefusal (Node 20
  // would drop the fields past its limit silently). `maxHeaderBytes` still bounds the head.
  server.maxHeadersCount = 0;
  server.on('clientError', clientErrorHandler(observer, options.mock === true ? MOCK_ANSWER_HEADER : undefined));
  // An `Expect` other than 100-continue is ignored, as RFC 9110 §10.1.1 allows, rather than
  // answered with Node's bare 417.
  server.on('checkExpectation', handler);

  const gateway: Gateway = {
    server,
    draining: false,
    async close(timeoutMs = 30_000) {
      gateway.draining = true;
      let drainedAt = 0;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          drainedAt ||= performance.now();
          resolve();
        });
        // Once no call is in flight, what is left open is idle or half-sent: close it all.
        drain.start(() => {
          drainedAt = performance.now();
          server.closeAllConnections();
        });
      });
      await closeUpstreams(upstreams);
      return drainedAt;
    },
  };
  return gateway;
}

/** The header every answer of a gateway on the mock provider carries (`serve --mock`). */
const MOCK_ANSWER_HEADER = ['x-tollgate-mock', '1'] as const;

/**
 * Bodies up to this size that arrived with their request's head are read before the admission
 * on Redis (admitInference), scanned at once; larger ones are read after it, as they arrive.
 */
const EARLY_BODY_LIMIT = 64 * 1024;

/** A body read before its call's admission, and the scanner that saw it. */
interface EarlyBody {
  body: RequestBody | typeof REFUSED;
  scanner: TopLevelScanner;
}

/** An inference call whose model the catalogue serves: what forwarding it needs. */
interface ServableCall {
  facts: RequestFacts;
  model: Model;
  upstream: Upstream;
  format: FormatAdapter;
  levers: RequestLevers;
}

/** Why a call's options are refused before it is forwarded, for the error's code, message and param. */
interface OptionRefusal {
  code: 'unsupported_option' | 'unpriced_option';
  message: string;
  member: string | null;
}

/**
 * The refusal a call's options earn: a reference to an object stored on the provider's account
 * or `background: true` (any key), else a priced option its model's price cannot price (credit
 * keys only: a token key is charged tokens, whatever they cost); null when there is none.
 */
function optionRefusal(call: ServableCall, credit: boolean): OptionRefusal | null {
  const unsupported = unsupportedIn(call.facts, call.format.references);
  if (unsupported !== null) return { code: 'unsupported_option', message: unsupported.message, member: unsupported.path };
  const unpriced = credit ? unpricedRefusal(call.levers, call.model) : null;
  return unpriced === null ? null : { code: 'unpriced_option', message: unpriced, member: null };
}

/** The stored responses a call continues (Hold.previousResponses), in formats whose provider stores them. */
function continuedBy(call: ServableCall): string[] | null {
  const field = call.format.previousResponseField;
  return field === undefined ? null : continuedResponses(call.facts, field);
}

/** A zero-cost usage record for a call that failed inside the gateway. */
function internalErrorRecord(requestId: string, endpoint: UsageRecord['endpoint'], model: string | null, credit: boolean): UsageRecord {
  return {
    at: Date.now(), callId: requestId, requestId, endpoint, model: model ?? '', stream: false, status: 500,
    inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
    costNano: credit ? 0 : null, tokensCharged: 0, error: 'internal_error', estimated: false, clientGone: false,
    ...PLAIN_USAGE_DETAIL,
    attempts: 0, credential: null,
  };
}

/**
 * GET /models when the catalogue's provider has no credential: an empty list in the caller's
 * format (no model can be served), rather than a call with an empty credential.
 */
function serveEmptyCatalogue(res: ServerResponse, requestId: string, format: ModelListFormat): void {
  const body = emptyList(format);
  res.writeHead(200, withRequestId(['content-type', 'application/json', 'content-length', String(body.length), 'access-control-allow-origin', '*', 'access-control-expose-headers', 'x-request-id'], requestId));
  res.end(body);
}
