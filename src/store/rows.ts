import type { Account, AuditEntry, Hold, KeyRecord, ResponseOwner, UsageRecord } from '../domain/types.js';

/**
 * Values are stored as flat arrays, not objects: msgpackr encodes an object as a "record" whose
 * field list travels with it, and decoding that list was ≈ 7 % of the gateway's CPU under load
 * (bench/profile.ts, c=32). A flat array of primitives encodes and decodes with no such work.
 * The field order below is the storage format.
 */

export type KeyRow = [string, string, string, string | null, 0 | 1, string[] | null, number | null, number | null, 0 | 1, number, string, string | null, (number | null)?];

export function keyToRow(k: KeyRecord): KeyRow {
  return [k.id, k.hash, k.prefix, k.name, k.mode === 'credit' ? 0 : 1, k.models, k.rpm, k.expiresAt, k.status === 'active' ? 0 : 1, k.createdAt, k.account, k.rotatedFrom, k.concurrency];
}

export function rowToKey(r: KeyRow): KeyRecord {
  return {
    id: r[0], hash: r[1], prefix: r[2], name: r[3], mode: r[4] === 0 ? 'credit' : 'token', models: r[5], rpm: r[6],
    expiresAt: r[7], status: r[8] === 0 ? 'active' : 'suspended', createdAt: r[9], account: r[10], rotatedFrom: r[11],
    concurrency: r[12] ?? null,
  };
}

/** [mode, balance nUSD, budget tokens, used tokens, held (nUSD or tokens; absent in rows written before holds)] */
export type AccountRow = [0 | 1, number, number, number, number?];

export function accountToRow(a: Account): AccountRow {
  return [a.mode === 'credit' ? 0 : 1, a.balanceNano, a.budgetTokens, a.usedTokens, a.held];
}

export function rowToAccount(r: AccountRow): Account {
  return { mode: r[0] === 0 ? 'credit' : 'token', balanceNano: r[1], budgetTokens: r[2], usedTokens: r[3], held: r[4] ?? 0 };
}

export type UsageRow = [number, string, string, string, 0 | 1, number, number, number, number, number, number, number | null, number, string | null, 0 | 1, 0 | 1,
  // Appended later; rows written before have none of these.
  callId?: string,
  cacheWrite1h?: number, audioInput?: number, imageInput?: number, audioOutput?: number, imageOutput?: number,
  toolCalls?: (string | number)[] | null, serviceTier?: string | null, estimateReason?: string | null, worstCase?: string | null, longContext?: 0 | 1,
  speed?: string | null, inferenceGeo?: string | null,
  attempts?: number, credential?: string | null];

export function usageToRow(u: UsageRecord): UsageRow {
  return [u.at, u.requestId, u.endpoint, u.model, u.stream ? 1 : 0, u.status, u.inputTokens, u.outputTokens, u.cachedInputTokens,
    u.cacheWriteTokens, u.reasoningTokens, u.costNano, u.tokensCharged, u.error, u.estimated ? 1 : 0, u.clientGone ? 1 : 0, u.callId,
    u.cacheWrite1hTokens, u.audioInputTokens, u.imageInputTokens, u.audioOutputTokens, u.imageOutputTokens,
    u.toolCalls == null ? null : Object.entries(u.toolCalls).flat(), u.serviceTier, u.estimateReason, u.worstCase, u.longContext ? 1 : 0,
    u.speed, u.inferenceGeo,
    u.attempts, u.credential];
}

export function rowToUsage(r: UsageRow): UsageRecord {
  return {
    at: r[0], requestId: r[1], endpoint: r[2] as UsageRecord['endpoint'], model: r[3], stream: r[4] === 1, status: r[5],
    inputTokens: r[6], outputTokens: r[7], cachedInputTokens: r[8], cacheWriteTokens: r[9], reasoningTokens: r[10],
    costNano: r[11], tokensCharged: r[12], error: r[13], estimated: r[14] === 1, clientGone: r[15] === 1,
    // Records written before calls had their own id were keyed by the request id.
    callId: r[16] ?? r[1],
    cacheWrite1hTokens: r[17] ?? 0, audioInputTokens: r[18] ?? 0, imageInputTokens: r[19] ?? 0, audioOutputTokens: r[20] ?? 0, imageOutputTokens: r[21] ?? 0,
    toolCalls: pairs(r[22]), serviceTier: r[23] ?? null, estimateReason: r[24] ?? null, worstCase: r[25] ?? null, longContext: r[26] === 1,
    speed: r[27] ?? null, inferenceGeo: r[28] ?? null,
    // Records written before credential pools: one send, with the provider's one credential, unnamed then.
    attempts: r[29] ?? 1, credential: r[30] ?? null,
  };
}

/** [name, count, name, count, …] → { name: count }, or null. */
function pairs(flat: (string | number)[] | null | undefined): Record<string, number> | null {
  if (flat === null || flat === undefined) return null;
  const out: Record<string, number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = Number(flat[i + 1]);
  return out;
}

/** Per key, day and model: [requests, cost nUSD, tokens]. */
export type DailyRow = [number, number, number];

/**
 * A call in flight, keyed [key id, call id]: written when the call takes a concurrency slot
 * (step 7) or places its hold (before forwarding), deleted when it is settled.
 * [account id, owner process, started at (ms), held (account unit), charge if interrupted
 *  (account unit), input estimate (tokens), endpoint, model, stream (0|1), phase]
 */
export type CallRow = [string, string, number, number, number, number, string, string, 0 | 1, CallPhase];

/** 0: holds a concurrency slot only (not forwarded); 1: hold placed, forwarded or about to be. */
export type CallPhase = 0 | 1;

/**
 * A serving process, keyed by its owner id: [host name, pid, last heartbeat (ms), proof].
 * Rows written since processes are known by identity (store/instance.ts) hold '' and 0 for the
 * host and the pid, which builds that took a pid of this host for proof read as "another host"
 * (so they go by the heartbeat), and the proof (boot, PID namespace, pid, start time) last.
 */
export type ProcessRow = [string, number, number, string?];

/** This process's row, beating at `beat`. */
export function processToRow(beat: number, proof: string): ProcessRow {
  return ['', 0, beat, proof];
}

/** A process row's heartbeat and proof (none in rows of older builds: their heartbeat alone decides). */
export function rowToProcess(r: ProcessRow): { beat: number; proof: string | null } {
  return { beat: r[2], proof: r[3] ?? null };
}

/** A response's owner record, keyed [account id, response id]: [provider, credential, at (ms)]. */
export type ResponseRow = [string, string, number];

/** The row of a response made by `made` (a MadeResponse or a ResponseOwner) in a call started `at`. */
export function responseToRow(made: Pick<ResponseOwner, 'provider' | 'credential'>, at: number): ResponseRow {
  return [made.provider, made.credential, at];
}

export function rowToResponse(r: ResponseRow): ResponseOwner {
  return { provider: r[0], credential: r[1], at: r[2] };
}

// ── LMDB's rows of the request path, read and changed in place by these codecs only ──

/** The entry of a call that took a concurrency slot at step 7, owned by `owner`, not yet forwarded. */
export function slotToRow(account: string, owner: string, at: number): CallRow {
  return [account, owner, at, 0, 0, 0, '', '', 0, 0];
}

/** The entry of a call whose hold is placed, owned by `owner` (the hold's fields, in the account's unit). */
export function heldToRow(account: string, owner: string, hold: Pick<Hold, 'at' | 'amount' | 'interruptedCharge' | 'interruptedInputTokens' | 'endpoint' | 'model' | 'stream'>): CallRow {
  return [account, owner, hold.at, hold.amount, hold.interruptedCharge, hold.interruptedInputTokens, hold.endpoint, hold.model, hold.stream ? 1 : 0, 1];
}

/** A call entry's fields by name (read per call in flight only where it is settled by the sweep or dumped). */
export interface CallInFlight { account: string; owner: string; at: number; held: number; interruptedCharge: number; interruptedInputTokens: number; endpoint: string; model: string; stream: boolean; phase: CallPhase }

export function rowToCall(r: CallRow): CallInFlight {
  return { account: r[0], owner: r[1], at: r[2], held: r[3], interruptedCharge: r[4], interruptedInputTokens: r[5], endpoint: r[6], model: r[7], stream: r[8] === 1, phase: r[9] };
}

/** The account a call entry holds on, and what it holds (0: a slot only): read without decoding the entry. */
export const callAccount = (r: CallRow): string => r[0];
export const callOwner = (r: CallRow): string => r[1];
export const callHeld = (r: CallRow): number => r[3];

/** Adds `amount` (negative: releases) to what an account row holds, in place. */
export function addHeld(r: AccountRow, amount: number): void {
  r[4] = (r[4] ?? 0) + amount;
}

/** Charges an account row in place: nUSD off a credit account's balance, or tokens to a token account's use. */
export function chargeRow(r: AccountRow, nano: number, tokens: number): void {
  if (r[0] === 0) r[1] -= nano;
  else r[3] += tokens;
}

/** Whether an account row is a credit account's. */
export const isCreditRow = (r: AccountRow): boolean => r[0] === 0;

/** A day's totals row plus another, as a new row. */
export function addDailyRows(a: DailyRow, b: DailyRow): DailyRow {
  return [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
}

/** Adds one settled call to a day's totals row being summed, in place. */
export function countInDaily(r: DailyRow, costNano: number, tokens: number): void {
  r[0] += 1;
  r[1] += costNano;
  r[2] += tokens;
}

export function rowToDaily(r: DailyRow): { requests: number; costNano: number; tokens: number } {
  return { requests: r[0], costNano: r[1], tokens: r[2] };
}

/** A key's rate window: [window start (ms), requests in it]. */
export type RateRow = [number, number];

/** When a response's owner record was made (for its retention). */
export const responseRowAt = (r: ResponseRow): number => r[2];

/** An audit entry: [at, action, key id, actor, address, detail JSON]. */
export type AuditRow = [number, string, string | null, string, string | null, string];

export function auditToRow(e: AuditEntry): AuditRow {
  return [e.at, e.action, e.keyId, e.actor, e.address, JSON.stringify(e.detail)];
}

export function rowToAudit(r: AuditRow): AuditEntry {
  return { at: r[0], action: r[1], keyId: r[2], actor: r[3], address: r[4], detail: JSON.parse(r[5]) as Record<string, unknown> };
}

/** The key id an audit row is of (read before decoding it). */
export const auditKeyId = (r: AuditRow): string | null => r[2];

/** A rate window's start (ms) and the requests counted in it; counts one more, in place. */
export const windowStart = (r: RateRow): number => r[0];
export const windowCount = (r: RateRow): number => r[1];
export function countInWindow(r: RateRow): void {
  r[1] += 1;
}
