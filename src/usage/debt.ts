import type { Account } from '../domain/types.js';

/**
 * What an account owes: a call is charged in full after it ran, so the last call of a key can
 * take a credit balance below zero (nUSD owed) or a token key past its budget (tokens used above
 * it). A top-up pays that first; the key works again once it is back above zero.
 */
export function debtOf(account: Account): number {
  return account.mode === 'credit' ? Math.max(0, -account.balanceNano) : Math.max(0, account.usedTokens - account.budgetTokens);
}

/** How much of a top-up of `amount` went to the debt, from the account as it is after the top-up. */
export function debtPaidBy(after: Account, amount: number): number {
  const before: Account = after.mode === 'credit'
    ? { ...after, balanceNano: after.balanceNano - amount }
    : { ...after, budgetTokens: after.budgetTokens - amount };
  return Math.min(amount, debtOf(before));
}
