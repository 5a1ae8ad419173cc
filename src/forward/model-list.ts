import type { ServerResponse } from 'node:http';
import type { Call } from '../call.js';
import type { Dispatcher } from 'undici';
import { modelAllowed } from '../domain/rules.js';
import type { Model, Provider } from '../config/types.js';
import { sendError } from '../http/errors.js';
import { clientResponseHeaders, pickUpstreamHeaders } from '../http/headers.js';
import { log } from '../log.js';
import { noteFirstByte } from '../observe/call.js';
import type { KeyRecord } from '../domain/types.js';
import { Exchange } from './exchange.js';
import type { Credential, Rotation } from './rotation.js';

/**
 * GET /models: the catalogue provider's own list, cut down to the entries a key may call — the
 * catalogue's models whose provider has its credential, enabled (the file's `enabled`, or the
 * run-time switch) and on the key's allowlist — in the provider's list format. Nothing else of
 * the shared provider account reaches a tenant: not other customers' fine-tunes, not models the
 * gateway does not serve, not the operator's organisation in their `owned_by`.
 *
 * The provider's answer is small, so it is read whole, filtered and sent with its length. Any
 * other status than 200 goes through as an unmetered call does (forward/exchange.ts), a 401
 * included (answered as the gateway's own `upstream_unavailable` there).
 */

/** The two list formats: OpenAI's `{"object":"list","data":[…]}`, Anthropic's paginated one. */
export type ModelListFormat = 'openai' | 'anthropic';

/**
 * A provider presented with `x-api-key` speaks Anthropic's API (as forward/pools.ts adds its
 * `anthropic-version` for it); one presented with a bearer token, OpenAI's.
 */
export function modelListFormat(provider: Provider): ModelListFormat {
  return provider.auth === 'x-api-key' ? 'anthropic' : 'openai';
}

/**
 * The path of a provider's model list after its base path. Anthropic's is paginated (20 entries
 * unless asked, at most 1,000): the largest page is asked for, so that a catalogue model is not
 * lost on a later page. The client's own query is not forwarded: the filtered list is answered
 * as one page.
 */
export function modelListPath(format: ModelListFormat): string {
  return format === 'anthropic' ? `/models?limit=${ANTHROPIC_MAX_PAGE}` : '/models';
}

const ANTHROPIC_MAX_PAGE = 1000;

/** A provider's list larger than this is not read (OpenAI's whole list is tens of KiB). */
const MAX_LIST_BYTES = 8 * 1024 * 1024;

/** The list, in its format, as the client gets it; null when none was given or it cannot be read. */
export function filteredList(body: Buffer, format: ModelListFormat, callable: (id: string) => boolean): { json: string; truncated: boolean } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!isObject(parsed) || !Array.isArray(parsed.data)) return null;
  const data = parsed.data.filter((entry: unknown) => isObject(entry) && typeof entry.id === 'string' && callable(entry.id)) as Array<{ id: string }>;
  if (format === 'openai') return { json: JSON.stringify({ object: 'list', data }), truncated: false };
  return {
    json: JSON.stringify({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }),
    truncated: parsed.has_more === true,
  };
}

/** The answer for a catalogue provider without its credential: no model can be served. */
export function emptyList(format: ModelListFormat): string {
  return format === 'anthropic' ? '{"data":[],"has_more":false,"first_id":null,"last_id":null}' : '{"object":"list","data":[]}';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const kListing = Symbol('tollgate.modelListing');
type ListingResponse = ServerResponse & { [kListing]?: ModelListing };

function onListingClose(this: ListingResponse): void {
  this[kListing]?.clientClosed();
}

/**
 * One GET /models call, as an undici dispatch handler. The run-time switches are read beside
 * the provider call (`switchesRead`, one store read for the whole list); the answer goes out
 * once both are at hand.
 */
export class ModelListing implements Dispatcher.DispatchHandler {
  private abortUpstream: ((err?: Error) => void) | null = null;
  /** A status other than 200: the call goes through as any unmetered call, by this exchange. */
  private passed: Exchange | null = null;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private upstreamRequestId: string | undefined;
  /** The provider's whole list, once read. */
  private body: Buffer | null = null;
  /** undefined: not read yet; null: the store failed. */
  private switches: ReadonlyMap<string, boolean> | null | undefined = undefined;
  private ended = false;
  /** The request was written whole (a failure before that rests the credential). */
  private requestSent = false;
  /** The provider's head arrived. */
  private answered = false;

  private readonly res: ServerResponse;
  private readonly requestId: string;

  constructor(
    private readonly call: Call,
    private readonly key: KeyRecord,
    private readonly format: ModelListFormat,
    /** The provider's credentials, and the one this call went out with (sent once, not retried). */
    private readonly rotation: Rotation,
    private readonly credential: Credential,
    /** The catalogue's models whose provider has its credential, by id and by alias. */
    private readonly served: ReadonlyMap<string, Model>,
    private readonly clientStallMs: number,
  ) {
    const res = call.res;
    this.res = res;
    this.requestId = call.requestId;
    (res as ListingResponse)[kListing] = this;
    res.on('close', onListingClose);
  }

  /** The store's answer: every run-time switch set, or null when it failed. */
  switchesRead(switches: ReadonlyMap<string, boolean> | null): void {
    this.switches = switches;
    this.answer();
  }

  clientClosed(): void {
    if (this.passed === null && !this.ended) {
      this.ended = true;
      this.abortUpstream?.();
    }
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortUpstream = abort;
  }

  onRequestSent(): void {
    this.requestSent = true;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true;
    if (statusCode !== 200) {
      this.passed = new Exchange(this.call, null, this.clientStallMs);
      this.passed.takeOver(this.rotation, this.credential, this.abortUpstream!);
      return this.passed.onHeaders(statusCode, rawHeaders, resume);
    }
    noteFirstByte(this.call);
    this.answered = true;
    this.rotation.answered(this.credential, null, statusCode);
    this.upstreamRequestId = pickUpstreamHeaders(rawHeaders).requestId;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.passed !== null) return this.passed.onData(chunk);
    this.bytes += chunk.length;
    if (this.bytes > MAX_LIST_BYTES) {
      this.abortUpstream?.(new Error(`the model list is larger than ${MAX_LIST_BYTES} bytes`));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.passed !== null) return this.passed.onComplete();
    this.body = Buffer.concat(this.chunks, this.bytes);
    this.chunks = [];
    this.answer();
  }

  onError(err: Error): void {
    try {
      this.failedUpstream(err);
    } catch (thrown) {
      // A throw here would end the process (undici calls onError outside any handler of its own).
      this.call.fail(thrown);
    }
  }

  private failedUpstream(err: Error): void {
    if (this.passed !== null) return this.passed.onError(err);
    if (this.ended) return;
    this.ended = true;
    // Not its own abort (its client left, or its list was too large): the provider did not answer.
    if (!this.answered && !this.res.destroyed) this.rotation.noAnswer(this.credential, this.requestSent);
    log('warn', 'upstream_unavailable', { requestId: this.requestId, provider: this.credential.provider, credential: this.credential.name, error: err.message });
    sendError(this.res, 'upstream_unavailable', this.requestId);
  }

  /** Once the list and the switches are both at hand: the filtered list, or why not. */
  private answer(): void {
    const body = this.body;
    const switches = this.switches;
    if (body === null || switches === undefined || this.ended) return;
    this.ended = true;
    const res = this.res;
    if (res.destroyed) return;
    if (switches === null) return sendError(res, 'store_unavailable', this.requestId);
    const { key, served } = this;
    const list = filteredList(body, this.format, (id) => {
      // A snapshot id the provider lists is an alias: allowed and switched as its entry.
      const model = served.get(id);
      return model !== undefined && modelAllowed(key, model.id) && (switches.get(model.id) ?? model.enabledByDefault);
    });
    if (list === null) {
      log('warn', 'model_list_unreadable', { requestId: this.requestId, provider: this.credential.provider });
      return sendError(res, 'upstream_unavailable', this.requestId);
    }
    if (list.truncated) log('warn', 'model_list_truncated', { provider: this.credential.provider, listed: ANTHROPIC_MAX_PAGE });
    const headers = clientResponseHeaders({ contentType: 'application/json', requestId: this.upstreamRequestId }, this.requestId, false);
    headers.push('content-length', String(Buffer.byteLength(list.json)));
    res.writeHead(200, headers);
    res.end(list.json);
  }
}
