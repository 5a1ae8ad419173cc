import type { ServerResponse } from 'node:http';
import { fundsRefusal } from '../domain/rules.js';
import { CORS_RESPONSE_HEADERS, withRequestId } from '../http/headers.js';
import { formatUsd } from '../money.js';
import type { UsageStore } from '../domain/interfaces.js';
import type { Account, KeyRecord, UsageRecord } from '../domain/types.js';
import { noteCode } from '../observe/call.js';

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;
const DAY_MS = 86_400_000;

const USAGE_HEADERS = ['content-type', 'application/json', 'cache-control', 'no-store', ...CORS_RESPONSE_HEADERS];

/** Why calls with this key would fail right now, or 'ok'. */
export type KeyState = 'ok' | 'suspended' | 'expired' | 'insufficient_credit' | 'token_budget_exhausted';

export function keyState(key: KeyRecord, account: Account | undefined, now: number): KeyState {
  if (key.status !== 'active') return 'suspended';
  if (key.expiresAt !== null && now > key.expiresAt) return 'expired';
  return (fundsRefusal(account) as KeyState | null) ?? 'ok';
}

export function keyView(key: KeyRecord, account: Account | undefined, now: number): Record<string, unknown> {
  const view: Record<string, unknown> = {
    prefix: key.prefix,
    name: key.name,
    mode: key.mode,
    status: key.status,
    state: keyState(key, account, now),
    expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    models: key.models,
    rateLimitRpm: key.rpm,
    concurrency: key.concurrency,
    createdAt: new Date(key.createdAt).toISOString(),
  };
  if (key.mode === 'credit') {
    view.balanceUsd = formatUsd(account?.balanceNano ?? 0);
    view.balanceNanoUsd = account?.balanceNano ?? 0;
    // What calls in flight hold against the balance (their worst case), until they are settled.
    view.heldUsd = formatUsd(account?.held ?? 0);
    view.heldNanoUsd = account?.held ?? 0;
  } else {
    const budget = account?.budgetTokens ?? 0;
    const used = account?.usedTokens ?? 0;
    view.budgetTokens = budget;
    view.usedTokens = used;
    view.remainingTokens = Math.max(0, budget - used);
    view.heldTokens = account?.held ?? 0;
    // Tokens used above the budget (the last call is charged in full): a renewal covers these first.
    view.overdraftTokens = Math.max(0, used - budget);
  }
  return view;
}

export function requestView(r: UsageRecord): Record<string, unknown> {
  return {
    at: new Date(r.at).toISOString(),
    requestId: r.requestId,
    callId: r.callId,
    endpoint: r.endpoint,
    model: r.model,
    stream: r.stream,
    status: r.status,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    cachedInputTokens: r.cachedInputTokens,
    cacheWriteTokens: r.cacheWriteTokens,
    reasoningTokens: r.reasoningTokens,
    costUsd: r.costNano === null ? null : formatUsd(r.costNano),
    costNanoUsd: r.costNano,
    tokensCharged: r.tokensCharged,
    error: r.error,
    estimated: r.estimated,
    clientGone: r.clientGone,
    estimateReason: r.estimateReason,
    cacheWrite1hTokens: r.cacheWrite1hTokens,
    audioInputTokens: r.audioInputTokens,
    imageInputTokens: r.imageInputTokens,
    audioOutputTokens: r.audioOutputTokens,
    imageOutputTokens: r.imageOutputTokens,
    toolCalls: r.toolCalls,
    serviceTier: r.serviceTier,
    speed: r.speed,
    inferenceGeo: r.inferenceGeo,
    longContext: r.longContext,
    worstCase: r.worstCase,
    // Not the provider credential's name: which of the operator's keys answered is the operator's.
    attempts: r.attempts,
  };
}

export function dayText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A range of whole UTC days, as text and as the epoch ms of their midnights. */
export interface DayRange { from: string; to: string; fromMs: number; toMs: number }

/** Every day of the range, oldest first, with its totals (zeros included) and the split by model. */
export async function dailyRows(store: UsageStore, key: KeyRecord, range: DayRange): Promise<Record<string, unknown>[]> {
  const totals = await store.dailyOf(key, range.from, range.to);
  const rows = [];
  for (let at = range.fromMs; at <= range.toMs; at += DAY_MS) {
    const day = dayText(at);
    const t = totals.get(day);
    rows.push({
      day,
      requests: t?.requests ?? 0,
      costUsd: formatUsd(t?.costNano ?? 0),
      costNanoUsd: t?.costNano ?? 0,
      tokens: t?.tokens ?? 0,
      byModel: Object.entries(t?.byModel ?? {}).map(([model, m]) => ({ model, requests: m.requests, costUsd: formatUsd(m.costNano), costNanoUsd: m.costNano, tokens: m.tokens })),
    });
  }
  return rows;
}

function encodeCursor(r: UsageRecord): string {
  return Buffer.from(`${r.at}.${r.callId}`).toString('base64url');
}

function decodeCursor(cursor: string): [number, string] | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const dot = text.indexOf('.');
  const at = Number(text.slice(0, dot));
  return dot > 0 && Number.isSafeInteger(at) ? [at, text.slice(dot + 1)] : undefined;
}

function badQuery(res: ServerResponse, requestId: string, message: string): void {
  // Counted and logged as what it is, the gateway's refusal of the query.
  noteCode(res, 'invalid_query');
  res.writeHead(400, withRequestId(USAGE_HEADERS, requestId));
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', code: 'invalid_query', param: null } }));
}

/**
 * GET /usage/api — the key's state, its newest requests (cursor paging with `limit` and
 * `before`), and per-day totals for the last `days` days (default 30) with a split by model.
 * Suspended and expired keys may read their own usage.
 */
export async function serveUsageApi(res: ServerResponse, store: UsageStore, key: KeyRecord, query: string, requestId: string, now = Date.now()): Promise<void> {
  const params = new URLSearchParams(query);
  const limitText = params.get('limit');
  const limit = limitText === null ? DEFAULT_PAGE : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) return badQuery(res, requestId, `limit must be an integer from 1 to ${MAX_PAGE}`);
  const beforeText = params.get('before');
  const before = beforeText === null ? undefined : decodeCursor(beforeText);
  if (beforeText !== null && before === undefined) return badQuery(res, requestId, 'before must be a cursor returned as nextBefore');
  const daysText = params.get('days');
  const days = daysText === null ? 30 : Number(daysText);
  if (!Number.isInteger(days) || days < 1 || days > 366) return badQuery(res, requestId, 'days must be an integer from 1 to 366');

  // One more than asked: a cursor is returned only when another page really exists.
  const [account, records] = await Promise.all([store.account(key.account), store.usageOf(key, limit + 1, before)]);
  const more = records.length > limit;
  if (more) records.length = limit;
  const last = more ? records[limit - 1] : undefined;

  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const fromMs = today - (days - 1) * DAY_MS;
  const daily = await dailyRows(store, key, { from: dayText(fromMs), to: dayText(today), fromMs, toMs: today });

  res.writeHead(200, withRequestId(USAGE_HEADERS, requestId));
  res.end(JSON.stringify({
    key: keyView(key, account, now),
    requests: records.map(requestView),
    nextBefore: last === undefined ? null : encodeCursor(last),
    daily,
  }));
}
