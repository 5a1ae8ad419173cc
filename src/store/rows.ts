import type { Account, KeyRecord, UsageRecord } from './types.js';

/**
 * Values are stored as flat arrays, not objects: msgpackr encodes an object as a "record" whose
 * field list travels with it, and decoding that list was ≈ 7 % of the gateway's CPU under load
 * (bench/profile.ts, c=32). A flat array of primitives encodes and decodes with no such work.
 * The field order below is the storage format.
 */

export type KeyRow = [string, string, string, string | null, 0 | 1, string[] | null, number | null, number | null, 0 | 1, number, string, string | null];

export function keyToRow(k: KeyRecord): KeyRow {
  return [k.id, k.hash, k.prefix, k.name, k.mode === 'credit' ? 0 : 1, k.models, k.rpm, k.expiresAt, k.status === 'active' ? 0 : 1, k.createdAt, k.account, k.rotatedFrom];
}

export function rowToKey(r: KeyRow): KeyRecord {
  return {
    id: r[0], hash: r[1], prefix: r[2], name: r[3], mode: r[4] === 0 ? 'credit' : 'token', models: r[5], rpm: r[6],
    expiresAt: r[7], status: r[8] === 0 ? 'active' : 'suspended', createdAt: r[9], account: r[10], rotatedFrom: r[11],
  };
}

export type AccountRow = [0 | 1, number, number, number];

export function accountToRow(a: Account): AccountRow {
  return [a.mode === 'credit' ? 0 : 1, a.balanceNano, a.budgetTokens, a.usedTokens];
}

export function rowToAccount(r: AccountRow): Account {
  return { mode: r[0] === 0 ? 'credit' : 'token', balanceNano: r[1], budgetTokens: r[2], usedTokens: r[3] };
}

export type UsageRow = [number, string, string, string, 0 | 1, number, number, number, number, number, number, number | null, number, string | null, 0 | 1, 0 | 1];

export function usageToRow(u: UsageRecord): UsageRow {
  return [u.at, u.requestId, u.endpoint, u.model, u.stream ? 1 : 0, u.status, u.inputTokens, u.outputTokens, u.cachedInputTokens,
    u.cacheWriteTokens, u.reasoningTokens, u.costNano, u.tokensCharged, u.error, u.estimated ? 1 : 0, u.clientGone ? 1 : 0];
}

export function rowToUsage(r: UsageRow): UsageRecord {
  return {
    at: r[0], requestId: r[1], endpoint: r[2] as UsageRecord['endpoint'], model: r[3], stream: r[4] === 1, status: r[5],
    inputTokens: r[6], outputTokens: r[7], cachedInputTokens: r[8], cacheWriteTokens: r[9], reasoningTokens: r[10],
    costNano: r[11], tokensCharged: r[12], error: r[13], estimated: r[14] === 1, clientGone: r[15] === 1,
  };
}

/** Per key, day and model: [requests, cost nUSD, tokens]. */
export type DailyRow = [number, number, number];
