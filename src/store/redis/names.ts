import type { ResponseOwner } from '../../domain/types.js';
import { rowToResponse, type ResponseRow } from '../rows.js';

/**
 * The Redis/Valkey backend: any number of gateway hosts share one store and behave as one.
 *
 * Round trips of a call: one script for steps 3–7 (admission), which for an inference call
 * whose body came with its head also checks steps 9 and 10 and places the hold
 * (admitHolding); else one for the hold (which also reads step 10's run-time switch); one for
 * the settlement. On one server the request path's scripts leave through a connection corked
 * for the event-loop turn (send): every command of a turn in one write, the Redis twin of
 * LMDB's one group commit per turn.
 *
 * Failing closed: no offline queue (a command issued while the connection is down fails at
 * once), no resending of commands whose reply was lost, and a command timeout of
 * COMMAND_TIMEOUT_MS: a call is refused with 503 `store_unavailable` within that bound, never
 * forwarded unchecked. The client reconnects by itself, and traffic resumes with it.
 *
 * Layout (every name starts with `tg:`; H is a key's SHA-256, A its account's id):
 *   {H}:k  key record (JSON)          {A}:a  account (hash: m, bal, bud, used, held)
 *   {H}:r  rate window (s, n)         {H}:c  calls in flight (call id → entry)
 *   {H}:u  usage index (sorted set by `at:callId`)     {H}:ur  usage records (member → row)
 *   {H}:d:DAY  day totals (r|c|t:MODEL)                 {H}:au  the key's audit trail
 *   {A}:rs:ID  the owner record of stored response ID (ResponseRow JSON; expires after the retention)
 *   ids  key id → H     {m}:sw  model switches     {m}:au  the models' audit trail
 *   owners  serving processes   p:OWNER  heartbeat (expires)   o:OWNER  its calls in flight
 *   store  the store's identity: made once, by the first process to open it (connection.ts)
 */

export const DAY_MS = 86_400_000;

/** A call's entry in flight, as the scripts store it (numbers as decimal strings). */
export interface CallEntry { o: string; p: 0 | 1; a: string; at: string; h: string; ic?: string; it?: string; e?: string; m?: string; s?: string; k?: string }

export const SWITCHES = 'tg:{m}:sw';
/** A model's switch as stored in SWITCHES ('1' on, '0' off), undefined when it has no entry. */
export const switchOf = (stored: string | null | undefined): boolean | undefined => (stored == null ? undefined : stored === '1');
/** The owner index named by a process that serves no calls (a command line): never read. */
export const NO_OWNER = '-';
export const MODEL_AUDIT = 'tg:{m}:au';
export const IDS = 'tg:ids';
export const OWNERS = 'tg:owners';
export const STORE_ID = 'tg:store';

export const keyName = (h: string): string => `tg:{${h}}:k`;
export const rateName = (h: string): string => `tg:{${h}}:r`;
export const callsName = (h: string): string => `tg:{${h}}:c`;
export const usageIndex = (h: string): string => `tg:{${h}}:u`;
export const usageRows = (h: string): string => `tg:{${h}}:ur`;
export const dayName = (h: string, at: number): string => `tg:{${h}}:d:${Math.floor(at / DAY_MS)}`;
export const auditName = (h: string): string => `tg:{${h}}:au`;
export const accountName = (id: string): string => `tg:{${id}}:a`;
export const responseName = (account: string, id: string): string => `tg:{${account}}:rs:${id}`;
export const ownerCalls = (owner: string): string => `tg:o:${owner}`;
export const heartbeat = (owner: string): string => `tg:p:${owner}`;

/** A usage record's member in its key's index: ordered by time, then call id (as LMDB orders them). */
export const member = (at: number, callId: string): string => `${String(at).padStart(15, '0')}:${callId}`;

// ── Redis Cluster's key slot: CRC16 (XMODEM) of the name, mod 16384 ───────

const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let j = 0; j < 8; j++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** The slot of a hash tag (the part of a name between `{` and `}`, here the whole tag). */
export function slotOf(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag)) crc = ((crc << 8) & 0xffff) ^ CRC_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc % 16384;
}

/** The owner record a script returned (JSON of its ResponseRow), or null. */
export function ownerOf(json: string | null | undefined): ResponseOwner | null {
  return json ? rowToResponse(JSON.parse(json) as ResponseRow) : null;
}
