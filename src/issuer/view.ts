import type { Account, KeyRecord } from '../domain/types.js';
import { formatUsd } from '../money.js';
import { keyState } from '../usage/api.js';
import { debtOf } from '../usage/debt.js';

/**
 * A key as the issuer shows it: the JSON of `tollgate keys … --json` and of the admin API's key
 * answers, one shape for both (never the secret, except at creation and rotation, which add it).
 */
export function keyJson(key: KeyRecord, account: Account | undefined, now = Date.now()): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: key.id,
    prefix: key.prefix,
    name: key.name,
    mode: key.mode,
    status: key.status,
    state: keyState(key, account, now),
    models: key.models,
    rpm: key.rpm,
    concurrency: key.concurrency,
    expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    createdAt: new Date(key.createdAt).toISOString(),
    rotatedFrom: key.rotatedFrom,
    account: key.account,
  };
  // The USD figures for reading, the nano-dollar ones exact (as /usage/api shows them).
  if (key.mode === 'credit') Object.assign(out, { balanceUsd: formatUsd(account?.balanceNano ?? 0), balanceNanoUsd: account?.balanceNano ?? 0, heldUsd: formatUsd(account?.held ?? 0), heldNanoUsd: account?.held ?? 0 });
  else Object.assign(out, { budgetTokens: account?.budgetTokens ?? 0, usedTokens: account?.usedTokens ?? 0, remainingTokens: Math.max(0, (account?.budgetTokens ?? 0) - (account?.usedTokens ?? 0)), overdraftTokens: account === undefined ? 0 : debtOf(account), heldTokens: account?.held ?? 0 });
  return out;
}
