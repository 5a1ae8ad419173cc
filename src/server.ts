import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { modelAllowed } from './domain/rules.js';
import { credentialOf } from './auth/credential.js';
import { hashKey, isWellFormedKey } from './auth/keys.js';
import { Call, type CallEnding } from './call.js';
import type { Config } from './config/types.js';
import { FORMATS } from './formats/index.js';
import { requestLevers } from './formats/levers.js';
import { requestFacts, type RequestFacts } from './formats/model.js';
import { unsupportedIn } from './formats/references.js';
import { continuedResponses, isResponseId } from './formats/responses.js';
import { TopLevelScanner } from './formats/top-level-scanner.js';
import { Exchange, type UpstreamRequest } from './forward/exchange.js';
import { emptyList, ModelListing, modelListFormat, modelListPath, type ModelListFormat } from './forward/model-list.js';
import { allCredentials, buildUpstreams, closeUpstreams, queuedCalls, unsetCredentials, type Upstream } from './forward/pools.js';
import type { Clock, Credential, NotInRotation } from './forward/rotation.js';
import { bodyAtHand, InspectorFault, readBody, REFUSED, TOO_LARGE, type BodyOutcome } from './http/body.js';
import { clientErrorHandler } from './http/client-error.js';
import { headRefusal } from './http/request-head.js';
import { Drain } from './http/drain.js';
import { sendError, sendErrorSaying, type GatewayErrorCode } from './http/errors.js';
import { PREFLIGHT_RESPONSE_HEADERS, upstreamRequestHeaders, withRequestId } from './http/headers.js';
import { nextRequestId } from './http/request-id.js';
import { buildRoutes, type Route } from './http/routes.js';
import { errorText, log } from './log.js';
import { holdEitherWay, holdFor } from './meter/hold.js';
import { serveHealthz, serveReadyz, type Readiness } from './admin/health.js';
import type { AccessLog } from './observe/access-log.js';
import { CredentialWatch } from './observe/credentials.js';
import { noteDispatch, noteKey, noteRecord, noteRoute, Observer } from './observe/call.js';
import { ENDPOINT_LABELS, type Metrics } from './observe/metrics.js';
import { unpricedRefusal } from './meter/levers.js';
import type { GatewayStore } from './domain/interfaces.js';
import { PLAIN_USAGE_DETAIL, type KeyRecord, type Refusal, type ResponseOwner, type UsageRecord } from './domain/types.js';
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
  /** Makes the scanner of each request body (default: `new TopLevelScanner(maxJsonDepth)`); tests hand in doubles. */
  requestScanner?: (maxJsonDepth: number) => TopLevelScanner;
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
  options.metrics?.watchCredentials(allCredentials(upstreams), clock, unsetCredentials(config, options.env ?? process.env));
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
  const newScanner = options.requestScanner ?? ((depth: number) => new TopLevelScanner(depth));

  // ── the pipeline, in the spec's order of checks ─────────────────────────
  //
  // Each stage takes the call. Every callback the pipeline hands out (to the store, to a body
  // read, to process.nextTick) runs its stage inside `try`, so that a throw of the gateway's own
  // ends that call and no other (`failed`).

  function handle(call: Call): void {
    const { req, res, requestId } = call;
    drain.track(req, res);
    // Too many header fields, no HTTP version, Host missing or repeated: answered here with the
    // envelope, and the connection closed like after any request Node's parser refuses.
    const headFault = headRefusal(req, maxHeaderCount);
    if (headFault !== null) {
      res.setHeader('connection', 'close');
      return sendError(res, headFault, requestId);
    }
    const method = req.method ?? 'GET';
    if (method === 'OPTIONS') {
      res.writeHead(204, withRequestId(PREFLIGHT_RESPONSE_HEADERS, requestId));
      res.end();
      return;
    }
    // 1. The path resolves (before any credential is looked at).
    const url = req.url ?? '/';
    const route = routes.find(method, call.query.length === 0 ? url : url.slice(0, url.length - call.query.length));
    if (route === undefined) return sendError(res, 'unknown_endpoint', requestId);
    call.route = route;
    noteRoute(call, route);
    if (route.kind === 'healthz') return serveHealthz(res, requestId);
    if (route.kind === 'readyz') return serveReadyz(res, requestId, readiness);
    if (route.kind === 'usage-page') return serveUsagePage(res, requestId);
    // 2. A credential is present; 3. the key is known.
    const credential = credentialOf(req.headers);
    if (credential === undefined) return sendError(res, 'missing_api_key', requestId);
    if (!isWellFormedKey(credential)) return sendError(res, 'invalid_api_key', requestId);
    const hash = hashKey(credential);
    if (route.kind === 'usage-api') return store.lookup(hash, (key, failure) => guarded(call, usageLookedUp, key, failure));
    // 3. Known; 4. usable (status, expiry); 5. right surface; 6. funds, net of what the key's
    // calls in flight hold; 7. rate, then concurrency — one store call, before the body is
    // read. For an inference call whose body came with its head, the same store call goes on
    // to steps 9, 10's switch and the hold (admitInference); Node's parser pushes those body
    // bytes after this event returns, so they are looked at on the next tick.
    if (route.kind === 'inference') process.nextTick(admitInference, call, hash);
    else admit(call, hash);
  }

  /**
   * Steps 3–7 for an inference call, and when its body is at hand (bodyAtHand), names a model
   * the catalogue serves and uses no option to refuse, steps 9, 10's switch and the hold in the
   * same store call (admitHolding): one store call before the call goes out instead of two.
   * Steps 3–7 still decide first and answer first, so the order of checks and its codes are
   * those of the two calls; a body not yet at hand is read after the admission (a refusal of
   * steps 3–7 never waits for a body), and any other body is judged after it, from the bytes
   * read here.
   */
  function admitInference(call: Call, hash: string): void {
    try {
      const scanner = newScanner(maxJsonDepth);
      call.scanner = scanner;
      const body = bodyAtHand(call.req, earlyBodyLimit, scanner);
      if (body instanceof InspectorFault) return failed(call, body.error);
      if (body === null) return admit(call, hash);
      call.early = body;
      const facts = body === REFUSED ? undefined : requestFacts(body, scanner);
      // A refusal of the body's options is due: the admission answers steps 3–7 first.
      if (facts === undefined || !servable(call, facts) || optionRefusal(call, true) !== null) return admit(call, hash);
      const at = Date.now();
      const hold = holdEitherWay(call.format!, call.model!, call.levers!, facts, facts.raw.length, facts.stream, at);
      hold.credit.previousResponses = hold.token.previousResponses = continuedBy(call);
      call.heldAt = at;
      store.admitHolding(hash, call.route!.surface!, call.requestId, hold, (key, refusal, retryAfter, continued) => guarded(call, admittedHolding, key, refusal, retryAfter, continued));
    } catch (err) {
      failed(call, err);
    }
  }

  function admittedHolding(call: Call, key: KeyRecord | undefined, refusal: Refusal | null, retryAfter: number, continued: ResponseOwner | null | undefined): void {
    // First what a failure must settle: the key, and whether its admission took anything.
    call.key = key ?? null;
    call.admitted = refusal === null;
    if (key !== undefined) noteKey(call, key);
    if (refusal === null || refusal === 'model_not_allowed' || refusal === 'model_not_available' || refusal === 'previous_response_not_found') call.modelName = call.facts!.model;
    if (refusal !== null) return refused(call, refusal, retryAfter);
    // The client left while waiting: nothing goes out, nothing is billed.
    if (call.res.destroyed) return release(call);
    forward(call, continued);
  }

  /** Steps 3–7 alone; then the rest of the call. */
  function admit(call: Call, hash: string): void {
    store.admit(hash, call.route!.surface!, call.requestId, (key, refusal, retryAfter) => guarded(call, admitted, key, refusal, retryAfter));
  }

  function admitted(call: Call, key: KeyRecord | undefined, refusal: Refusal | null, retryAfter: number): void {
    call.key = key ?? null;
    call.admitted = refusal === null;
    if (key !== undefined) noteKey(call, key);
    if (refusal !== null) return refused(call, refusal, retryAfter);
    // The client left while waiting: free the slot rather than read a body that will not come.
    if (call.res.destroyed) return release(call);
    const kind = call.route!.kind;
    if (kind === 'models') return models(call);
    if (kind === 'stored-response') return storedResponse(call);
    // Steps 8–11: the body (read now unless it came with the head), the model, the hold.
    if (call.early !== null) return checkBody(call, call.early);
    call.scanner ??= newScanner(maxJsonDepth);
    readBody(call.req, maxRequestBytes, call.scanner, call, bodyRead);
  }

  /** A refusal of the admission (with `retry-after` for the 429s). */
  function refused(call: Call, refusal: GatewayErrorCode, retryAfter: number): void {
    sendError(call.res, refusal, call.requestId, refusal === 'rate_limit_exceeded' || refusal === 'concurrency_limit_exceeded' ? retryAfter : undefined);
  }

  /** The body was read (readBody's `done`). */
  function bodyRead(call: Call, outcome: BodyOutcome): void {
    try {
      checkBody(call, outcome);
    } catch (err) {
      failed(call, err);
    }
  }

  /**
   * Steps 8–10 on the body, then the hold: until the call is forwarded, every way out releases
   * what step 7 and the hold took (`release`).
   */
  function checkBody(call: Call, body: BodyOutcome): void {
    // The client went away before its body ended.
    if (body === undefined) return release(call);
    if (body instanceof InspectorFault) return failed(call, body.error);
    if (body === TOO_LARGE) return refuse(call, 'request_too_large');
    const facts = body === REFUSED ? undefined : requestFacts(body, call.scanner!);
    if (facts === undefined) return refuse(call, 'model_required');
    call.modelName = facts.model;
    const key = call.key!;
    // An alias is allowed, switched and priced as its entry.
    if (!modelAllowed(key, config.modelsByName.get(facts.model)?.id ?? facts.model)) return refuse(call, 'model_not_allowed');
    // Step 10: the catalogue here; the run-time switch (`tollgate models disable`) is read by
    // the hold below, in the same store call, so that it costs no round trip of its own.
    if (call.model === null && !servable(call, facts)) return refuse(call, 'model_not_available');
    const model = call.model!;
    // An option no call may use (a reference to an object stored on the provider's account,
    // `background`), then a priced option the model's price cannot price, is refused before
    // anything is forwarded.
    const option = optionRefusal(call, key.mode === 'credit');
    if (option !== null) {
      // A switched-off model is refused as such first (step 10 comes before this check).
      return store.modelEnabled(model.id, model.enabledByDefault, (enabled) => guarded(call, optionRefused, enabled, option));
    }
    const hold = holdFor(call.format!, model, call.levers!, key.mode, facts, facts.raw.length, facts.stream, Date.now());
    call.heldAt = hold.at;
    // Decided by the hold, after step 10's switch and before the funds (previous_response_not_found).
    hold.previousResponses = continuedBy(call);
    store.hold(key, call.requestId, hold, (refusal, continued) => guarded(call, held, refusal, continued));
  }

  function optionRefused(call: Call, enabled: boolean | null, option: OptionRefusal): void {
    release(call);
    if (enabled === null) return sendError(call.res, 'store_unavailable', call.requestId);
    if (!enabled) return sendError(call.res, 'model_not_available', call.requestId);
    sendErrorSaying(call.res, option.code, call.requestId, option.message);
  }

  function held(call: Call, refusal: Refusal | null, continued: ResponseOwner | null): void {
    if (refusal !== null) {
      // A refused hold freed what step 7 took.
      call.admitted = false;
      return sendError(call.res, refusal, call.requestId);
    }
    // The client left while the hold was placed: nothing goes out, nothing is billed.
    if (call.res.destroyed) return release(call);
    forward(call, continued);
  }

  /** A refusal after step 7: what the admission took is freed. */
  function refuse(call: Call, code: GatewayErrorCode): void {
    release(call);
    sendError(call.res, code, call.requestId);
  }

  /** Frees what the call's admission and hold took, once it will not be forwarded. */
  function release(call: Call): void {
    if (!call.admitted) return;
    call.admitted = false;
    store.release(call.key!, call.requestId);
  }

  /**
   * Step 10's catalogue for a readable body: the model, the provider serving it (with its
   * credential) and the price levers the request pulls, noted on the call; false:
   * `model_not_available`.
   */
  function servable(call: Call, facts: RequestFacts): boolean {
    call.facts = facts;
    const model = config.modelsByName.get(facts.model);
    const endpoint = call.route!.endpoint!;
    if (model === undefined || !model.endpoints.has(endpoint)) return false;
    const upstream = upstreamOf(model.provider.name);
    // A provider without its credential is never called: an empty credential would earn the
    // provider's 401, which the client would take for a verdict on its own key.
    if (!upstream.usable) return false;
    const format = FORMATS[endpoint];
    call.model = model;
    call.upstream = upstream;
    call.format = format;
    call.levers = requestLevers(format.levers, facts, call.req.headers);
    return true;
  }

  /**
   * Step 11, once the call is admitted and its hold placed: forwards it, metered, with the
   * credential its provider's rotation picks for the account and model — or, for a call that
   * continues a stored response (`continued`, read by the hold), the credential that made it,
   * and no other. When none may be sent to, the call is answered without a send. From here on
   * the exchange settles the call.
   */
  function forward(call: Call, continued: ResponseOwner | null | undefined): void {
    // The body's scan is done (its facts hold what it found): a stream in flight, which can last
    // minutes, does not keep the scanner's state alive through every collection.
    call.scanner = null;
    const facts = call.facts!;
    const model = call.model!;
    const upstream = call.upstream!;
    const format = call.format!;
    const key = call.key!;
    // Streams must report usage; a body that does not ask for it is the one thing changed.
    const usageBody = format.streamUsageRequest?.(facts);
    const exchange = new Exchange(call, {
      store, key, model, format, requestedStream: facts.stream, stripUsageChunk: usageBody !== undefined, clientGoneGraceMs,
      startedAt: call.heldAt, levers: call.levers!, request: facts,
    }, clientStallMs);
    call.admitted = false;
    const rotation = upstream.rotation;
    const home = continued == null || continued.provider !== upstream.provider.name ? undefined : rotation.named(continued.credential);
    const credential = home === undefined ? rotation.pick(key.account, model.id, 0) : rotation.pinned(home, model.id);
    if (credential === null) return exchange.unsent(home === undefined ? rotation.lastRefusal(model.id) : rotation.refusalOf(home, model.id));
    const upstreamBody = usageBody ?? facts.raw;
    const headers = upstreamRequestHeaders(call.req.headers, credential.header, upstream.defaults);
    headers['content-length'] = String(upstreamBody.length);
    // The body's bytes, taken once: every attempt sends the same Buffer (or list of Buffers:
    // undici writes any iterable of Buffers, lib/core/request.js, though its types name only
    // single-value bodies), never a copy per attempt.
    const request: UpstreamRequest = { path: '', method: 'POST', headers, body: upstreamBody.forUpstream() as Buffer };
    exchange.send(rotation, credential, request, call.route!.upstreamPath + call.query, home === undefined);
  }

  function usageLookedUp(call: Call, key: KeyRecord | undefined, failure: unknown): void {
    const { res, requestId } = call;
    if (failure) return sendError(res, 'store_unavailable', requestId);
    if (key === undefined) return sendError(res, 'invalid_api_key', requestId);
    noteKey(call, key);
    serveUsageApi(res, store, key, call.query, requestId).catch(() => {
      if (!res.headersSent) sendError(res, 'store_unavailable', requestId);
      else res.destroy();
    });
  }

  /**
   * GET /models: the list of the provider `catalogProvider` names for the caller's format, cut
   * down to what the key may call (forward/model-list.ts); the run-time switches are read beside
   * the provider call, in one store read.
   */
  function models(call: Call): void {
    const req = call.req;
    const key = call.key!;
    unmeteredSlot(call);
    const upstream = req.headers['anthropic-version'] !== undefined ? catalog.anthropic : catalog.openai;
    const format = modelListFormat(upstream.provider);
    if (!upstream.usable) return serveEmptyCatalogue(call.res, call.requestId, format);
    const rotation = upstream.rotation;
    const credential = rotation.pick(key.account, '', 0);
    if (credential === null) return new Exchange(call, null, clientStallMs).unsent(rotation.lastRefusal(null));
    noteDispatch(call, upstream.provider.name, credential.name);
    const listing = new ModelListing(call, key, format, rotation, credential, servedModels, clientStallMs);
    store.readModelSwitches((switches) => guarded(call, switchesRead, listing, switches));
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
  function storedResponse(call: Call): void {
    unmeteredSlot(call);
    const route = call.route!;
    const { at, tail } = route.id!;
    const url = call.req.url!;
    const id = url.slice(at, url.length - call.query.length - tail.length);
    if (!isResponseId(id)) return sendError(call.res, 'response_not_found', call.requestId);
    store.responseOwner(call.key!.account, id, (owner, failure) => guarded(call, ownerRead, owner, failure, id));
  }

  function ownerRead(call: Call, owner: ResponseOwner | undefined, failure: unknown, id: string): void {
    const { res, requestId } = call;
    if (failure) return sendError(res, 'store_unavailable', requestId);
    if (owner === undefined) return sendError(res, 'response_not_found', requestId);
    const upstream = upstreams.get(owner.provider);
    // A provider or credential since removed from the config, or left without its key, cannot be asked.
    const home = upstream?.rotation.named(owner.credential);
    if (upstream === undefined || home === undefined) return sendError(res, 'response_not_found', requestId);
    if (res.destroyed) return;
    const { tail } = call.route!.id!;
    passThrough(call, upstream, home, call.route!.method, call.route!.upstreamPath + id + tail + call.query);
  }

  /** A call neither billed nor listed, in flight all the same: its concurrency slot is freed when it ends. */
  function unmeteredSlot(call: Call): void {
    if (call.key!.concurrency !== null) call.res.once('close', () => release(call));
    else call.admitted = false;
  }

  /**
   * Forwards a call neither billed nor listed to `home`, the credential of `upstream` it must go
   * to, and no other (`path`: after its base path, query included). When `home` may not be sent
   * to (it rests, or is out of rotation), the call is answered without a send.
   */
  function passThrough(call: Call, upstream: Upstream, home: Credential, method: Route['method'], path: string): void {
    const exchange = new Exchange(call, null, clientStallMs);
    const rotation = upstream.rotation;
    const credential = rotation.pinned(home, null);
    if (credential === null) return exchange.unsent(rotation.refusalOf(home, null));
    const request: UpstreamRequest = { path: '', method, headers: upstreamRequestHeaders(call.req.headers, credential.header, upstream.defaults) };
    exchange.send(rotation, credential, request, path, false);
  }

  /**
   * A throw of the gateway's own, anywhere in a call's stages: it ends that call and no other.
   * Logged once, with the request id the client gets; counted (`code="internal_error"`);
   * recorded against the key at zero cost; what the call holds is settled (a forwarded call's
   * exchange records it, which settles its hold; before that, its admission's slot and hold are
   * released); answered 500 `internal_error` when nothing was sent yet, else its connection is
   * cut — never blamed on the provider.
   */
  function failed(call: Call, err: unknown): void {
    if (call.faulted) return;
    call.faulted = true;
    const { res, requestId } = call;
    try {
      log('error', 'internal_error', { requestId: call.exchange?.shownRequestId() ?? requestId, keyPrefix: call.keyPrefix, error: errorText(err) });
      call.code = 'internal_error';
      if (call.exchange !== null) return call.exchange.fault(err);
      release(call);
      const answer = (): void => {
        if (res.destroyed) return;
        if (!res.headersSent) sendError(res, 'internal_error', requestId);
        else res.destroy();
      };
      const endpoint = ENDPOINT_LABELS[call.endpoint]!;
      const key = call.key;
      if (key === null || (endpoint !== 'chat' && endpoint !== 'responses' && endpoint !== 'messages' && endpoint !== 'models')) return answer();
      const record = internalErrorRecord(requestId, endpoint, call.modelName, key.mode === 'credit');
      noteRecord(call, record);
      // Not the settlement of a forwarded call: recorded whether or not the call had an entry in flight.
      store.record(key, record, { nano: 0, tokens: 0 }, { committed: answer }, false);
    } catch (thrown) {
      // The error path itself failed: the call is cut, and the process goes on.
      log('error', 'internal_error', { requestId, keyPrefix: call.keyPrefix, stage: 'failed', error: String(thrown) });
      res.destroy();
    }
  }

  /** Runs a stage of `call` from a callback, ending the call on a throw (`failed`). */
  function guarded<A, B, C, D>(call: Call, stage: (call: Call, a: A, b: B, c: C, d: D) => void, a: A, b: B, c?: C, d?: D): void {
    try {
      stage(call, a, b, c as C, d as D);
    } catch (err) {
      failed(call, err);
    }
  }

  function switchesRead(_call: Call, listing: ModelListing, switches: ReadonlyMap<string, boolean> | null): void {
    listing.switchesRead(switches);
  }

  const ending: CallEnding = { fail: failed };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const call = new Call(req, res, nextRequestId(), q === -1 ? '' : url.slice(q), observer, ending);
    observer.begin(call);
    try {
      handle(call);
    } catch (err) {
      failed(call, err);
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
 * (admitInference), scanned at once; larger ones are read after it, as they arrive.
 */
const EARLY_BODY_LIMIT = 64 * 1024;

/** Why a call's options are refused before it is forwarded: the error's code and message (its `param` is null, as on every error the gateway raises but previous_response_not_found). */
interface OptionRefusal {
  code: 'unsupported_option' | 'unpriced_option';
  message: string;
}

/**
 * The refusal a call's options earn: a reference to an object stored on the provider's account
 * or `background: true` (any key), else a priced option its model's price cannot price (credit
 * keys only: a token key is charged tokens, whatever they cost); null when there is none.
 */
function optionRefusal(call: Call, credit: boolean): OptionRefusal | null {
  const unsupported = unsupportedIn(call.facts!, call.format!.references);
  if (unsupported !== null) return { code: 'unsupported_option', message: unsupported };
  const unpriced = credit ? unpricedRefusal(call.levers!, call.model!) : null;
  return unpriced === null ? null : { code: 'unpriced_option', message: unpriced };
}

/** The stored responses a call continues (Hold.previousResponses), in formats whose provider stores them. */
function continuedBy(call: Call): string[] | null {
  const field = call.format!.previousResponseField;
  return field === undefined ? null : continuedResponses(call.facts!, field);
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
