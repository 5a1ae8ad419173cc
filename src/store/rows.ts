import type { Account, KeyRecord, ResponseOwner, UsageRecord } from '../domain/types.js';

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
  toolCalls?: (string | number)[] | null, serviceTier?: string | null, estimateReason?: string | null, worstCase?: string | null, longContext?: 0 | 1];

export function usageToRow(u: UsageRecord): UsageRow {
  return [u.at, u.requestId, u.endpoint, u.model, u.stream ? 1 : 0, u.status, u.inputTokens, u.outputTokens, u.cachedInputTokens,
    u.cacheWriteTokens, u.reasoningTokens, u.costNano, u.tokensCharged, u.error, u.estimated ? 1 : 0, u.clientGone ? 1 : 0, u.callId,
    u.cacheWrite1hTokens, u.audioInputTokens, u.imageInputTokens, u.audioOutputTokens, u.imageOutputTokens,
    u.toolCalls == null ? null : Object.entries(u.toolCalls).flat(), u.serviceTier, u.estimateReason, u.worstCase, u.longContext ? 1 : 0];
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
