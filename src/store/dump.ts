import type { Account, AuditEntry, KeyRecord, ResponseOwner, UsageRecord } from '../domain/types.js';

/** Everything a store holds, as `tollgate store migrate` copies it. */
export interface StoreDump {
  keys: KeyRecord[];
  accounts: Array<[string, Account]>;
  calls: Array<{ keyId: string; callId: string; account: string; owner: string; at: number; held: number; interruptedCharge: number; interruptedInputTokens: number; endpoint: string; model: string; stream: boolean; phase: 0 | 1 }>;
  usage: Array<[string, UsageRecord]>;
  daily: Array<{ keyId: string; day: string; model: string; requests: number; costNano: number; tokens: number }>;
  switches: Array<[string, boolean]>;
  /** Oldest first. */
  audit: AuditEntry[];
  /** The owner records of stored responses. */
  responses: Array<ResponseOwner & { account: string; id: string }>;
}
