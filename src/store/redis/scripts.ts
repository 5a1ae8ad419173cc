/**
 * The server-side scripts of the Redis backend (./store.ts and the files beside it). Each one is one atomic step, run
 * with EVALSHA (ioredis `defineCommand`, which falls back to EVAL once after a NOSCRIPT, e.g.
 * after a restart of Redis).
 *
 * Rules every script keeps:
 * - Integers only. Amounts travel as decimal strings and are added with HINCRBY (int64 in Redis);
 *   Lua's doubles only compare them (exact below 2^53, as in JavaScript). A number a script
 *   writes goes through `int()`, never `tostring()` (which would write 1.7e+12).
 * - Time is the server's (`TIME`), never a gateway host's: windows and expiry stay exact across
 *   hosts whose clocks differ.
 * - One Cluster slot per call. Every key a script names is tagged with the key's hash or its
 *   account's id, and an account's id is chosen in the slot of its keys (IssuerStore.fitsAccount).
 *   The admission reads the account named in the key record; it is not in KEYS because it is
 *   not known before the key is read, but it is in the same slot by that construction.
 * - Keys of no slot (the owner index of calls in flight, the model switches) are in KEYS only on
 *   a single server (`#KEYS` says so); on a Cluster the client sends them beside the script.
 *
 * A response's owner record (`tg:{A}:rs:ID`, A its account's id) is the JSON of its ResponseRow,
 * written by the settlement with the retention as its TTL, and read (GET) by the admission
 * and the hold of a call that continues it, which return it (the call goes to its credential): in the account's slot, named from the account's name
 * (the admission reads it without declaring it, like the account itself).
 *
 * A call's entry in flight (hash `tg:{H}:c`, field = call id) is JSON with string numbers:
 * o owner, p phase (0 slot only, 1 hold placed), a account id, at start (ms), h held,
 * ic charge if interrupted, it its input tokens, e endpoint, m model, s stream (0|1), k key id.
 */

const COMMON = `
local function int(n) return string.format('%d', n) end
local function val(x) if x == nil or x == cjson.null then return nil end return x end
local function acct(id) return 'tg:{' .. id .. '}:a' end
-- The owner record of response id of the account named a (tg:{A}:a → tg:{A}:rs:ID).
local function made(a, id) return string.sub(a, 1, -2) .. 'rs:' .. id end
-- When the account named a made every response named in ARGV from index 'from' on, the owner
-- record (JSON) of the last, or true when none is named; else false.
local function madeAll(a, from)
  local owner = true
  for i = from, #ARGV do
    owner = redis.call('GET', made(a, ARGV[i]))
    if not owner then return false end
  end
  return owner
end
-- Funds net of holds (step 6): the refusal, or nil.
local function short(a)
  if not a[1] then return nil end
  local held = tonumber(a[5]) or 0
  if a[1] == '0' then
    if tonumber(a[2]) - held <= 0 then return 'insufficient_credit' end
  elseif tonumber(a[4]) + held >= tonumber(a[3]) then
    return 'token_budget_exhausted'
  end
  return nil
end
-- Ends a call's entry in flight and releases its hold; false when there was none.
-- known: an account the caller knows exists (no EXISTS for it).
local function endcall(calls, callId, ownerSet, ownerMember, known)
  local e = redis.call('HGET', calls, callId)
  if not e then return false end
  redis.call('HDEL', calls, callId)
  local c = cjson.decode(e)
  if c.h and c.h ~= '0' then
    local a = acct(c.a)
    if a == known or redis.call('EXISTS', a) == 1 then redis.call('HINCRBY', a, 'held', '-' .. c.h) end
  end
  if ownerSet then redis.call('SREM', ownerSet, ownerMember) end
  return true
end
`;

/**
 * Steps 3–7 in one round trip; with a model (ARGV[5]), also steps 9 and 10, the responses the
 * call continues and the hold, for a call whose hold was computed before its admission
 * (Admission.admitHolding): what HOLD does, in the same script, so that the call costs one
 * round trip before it is forwarded.
 * KEYS: key record, rate window, calls in flight [, owner index, model switches]
 * ARGV: surface, call id, owner, owner-index member
 *   [, model, enabled by default (0|1), the call's entry without a, k, h, ic and its closing
 *      brace, credit hold, credit interrupted charge, token hold, token interrupted charge
 *      [, the response ids it continues …]]
 * → { refusal code or '', retry-after seconds, key record JSON or false,
 *     the owner record of the last response it continues, when held, or false }
 */
export const ADMIT = `${COMMON}
local raw = redis.call('GET', KEYS[1])
if not raw then return {'invalid_api_key', 0, false} end
local key = cjson.decode(raw)
-- The server's time, read only by a key that needs it (an expiry, a rate window, a slot).
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
if key.status ~= 'active' then return {'key_suspended', 0, raw} end
local expires = val(key.expiresAt)
if expires and clock() > expires then return {'key_expired', 0, raw} end
if key.mode ~= ARGV[1] then return {'invalid_api_key', 0, raw} end
local a = redis.call('HMGET', acct(key.account), 'm', 'bal', 'bud', 'used', 'held')
local refusal = short(a)
if refusal then return {refusal, 0, raw} end
local rpm = val(key.rpm)
local conc = val(key.concurrency)
local start, count
if rpm then
  local w = redis.call('HMGET', KEYS[2], 's', 'n')
  start = tonumber(w[1])
  count = tonumber(w[2])
  -- A fixed 60-second window that starts with the first request after the previous one ended.
  local now = clock()
  if not start or now >= start + 60000 then start = now; count = 0 end
  if count >= rpm then return {'rate_limit_exceeded', math.max(1, math.ceil((start + 60000 - now) / 1000)), raw} end
end
if conc and redis.call('HLEN', KEYS[3]) >= conc then return {'concurrency_limit_exceeded', 1, raw} end
if rpm then
  redis.call('HSET', KEYS[2], 's', int(start), 'n', int(count + 1))
  -- Kept a minute past the window's end: a window that expired is a new window anyway.
  redis.call('PEXPIREAT', KEYS[2], int(start + 120000))
end
local model = ARGV[5]
if not model then
  if conc then
    redis.call('HSET', KEYS[3], ARGV[2], cjson.encode({o = ARGV[3], p = 0, a = key.account, at = int(clock()), h = '0'}))
    if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[4]) end
  end
  return {'', 0, raw}
end
-- Admitted (the rate window counts the call, as it counts one refused after step 7); the
-- refusals below take no slot and place no hold.
local models = val(key.models)
if models and #models > 0 then
  local listed = false
  for i = 1, #models do if models[i] == model then listed = true; break end end
  if not listed then return {'model_not_allowed', 0, raw} end
end
if KEYS[5] then
  local sw = redis.call('HGET', KEYS[5], model)
  if not (sw == '1' or (not sw and ARGV[6] == '1')) then return {'model_not_available', 0, raw} end
end
local owner = madeAll(acct(key.account), 12)
if not owner then return {'previous_response_not_found', 0, raw} end
-- The funds were checked above, in this same script: the hold is placed at once.
local credit = key.mode == 'credit'
local held = credit and ARGV[8] or ARGV[10]
if a[1] and held ~= '0' then redis.call('HINCRBY', acct(key.account), 'held', held) end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[7] .. ',"a":' .. cjson.encode(key.account) .. ',"k":' .. cjson.encode(key.id)
  .. ',"h":"' .. held .. '","ic":"' .. (credit and ARGV[9] or ARGV[11]) .. '"}')
if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[4]) end
return {'', 0, raw, owner ~= true and owner}
`;

/**
 * The hold, before forwarding: step 10's run-time switch, the responses the call continues, the
 * funds net of holds again, then the hold and the call's entry. Idempotent by call id (a hold
 * already placed is not placed again).
 * KEYS: calls in flight, account [, model switches, owner index]
 * ARGV: call id, entry JSON (phase 1), held amount, model, enabled by default (0|1), owner-index member
 *   [, the response ids it continues …]
 * → { '' when held, else the refusal code; the owner record of the last response it continues, or false }
 */
export const HOLD = `${COMMON}
local calls, account = KEYS[1], KEYS[2]
if KEYS[3] then
  local sw = redis.call('HGET', KEYS[3], ARGV[4])
  local on = sw == '1' or (not sw and ARGV[5] == '1')
  if not on then
    endcall(calls, ARGV[1], KEYS[4], ARGV[6])
    return {'model_not_available', false}
  end
end
local owner = madeAll(account, 7)
if not owner then
  endcall(calls, ARGV[1], KEYS[4], ARGV[6])
  return {'previous_response_not_found', false}
end
owner = owner ~= true and owner
local e = redis.call('HGET', calls, ARGV[1])
if e and cjson.decode(e).p == 1 then return {'', owner} end
local a = redis.call('HMGET', account, 'm', 'bal', 'bud', 'used', 'held')
local refusal = short(a)
if refusal then
  -- Nothing goes out: the slot the call took at step 7, if any, is freed.
  endcall(calls, ARGV[1], KEYS[4], ARGV[6])
  return {refusal, false}
end
if a[1] and ARGV[3] ~= '0' then redis.call('HINCRBY', account, 'held', ARGV[3]) end
redis.call('HSET', calls, ARGV[1], ARGV[2])
if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[6]) end
return {'', owner}
`;

/**
 * Ends a call never forwarded (or neither billed nor listed): frees its slot, releases its hold.
 * KEYS: calls in flight [, owner index]   ARGV: call id, owner-index member   → 1 or 0
 */
export const RELEASE = `${COMMON}
if endcall(KEYS[1], ARGV[1], KEYS[2], ARGV[2]) then return 1 end
return 0
`;

/**
 * The settlement: releases the hold, charges the account, stores the record and the day's
 * totals, at once. Idempotent by call id: a settlement whose call has no entry in flight any
 * more (settled already, or by a survivor) changes nothing; nor does a record already stored.
 * The owner record of the response the call made, if any, is written in any case (the provider
 * made it for this account), expiring after the retention.
 * KEYS: calls in flight, account, usage index, usage records, day totals [, owner index]
 * ARGV: call id, record member, record JSON, charge nUSD, charge tokens, model, tokens for the
 *       day, settles (0|1), owner-index member, response id or '', its owner record (JSON),
 *       its retention (ms)
 * → 1 stored, 0 already settled
 */
export const SETTLE = `${COMMON}
if ARGV[10] ~= '' then redis.call('SET', made(KEYS[2], ARGV[10]), ARGV[11], 'PX', ARGV[12]) end
local m = redis.call('HGET', KEYS[2], 'm')
local ended = endcall(KEYS[1], ARGV[1], KEYS[6], ARGV[9], m and KEYS[2])
if not ended and ARGV[8] == '1' then return 0 end
if redis.call('HSETNX', KEYS[4], ARGV[2], ARGV[3]) == 0 then return 0 end
redis.call('ZADD', KEYS[3], 0, ARGV[2])
if m == '0' and ARGV[4] ~= '0' then redis.call('HINCRBY', KEYS[2], 'bal', '-' .. ARGV[4])
elseif m == '1' and ARGV[5] ~= '0' then redis.call('HINCRBY', KEYS[2], 'used', ARGV[5]) end
redis.call('HINCRBY', KEYS[5], 'r:' .. ARGV[6], 1)
redis.call('HINCRBY', KEYS[5], 'c:' .. ARGV[6], ARGV[4])
redis.call('HINCRBY', KEYS[5], 't:' .. ARGV[6], ARGV[7])
return 1
`;

/**
 * Settles one call whose owner is gone, exactly once: only while its entry is still the one the
 * survivor read (a compare-and-delete), so two survivors sweeping at once settle it once.
 * KEYS: calls in flight, account, usage index, usage records, day totals [, owner index]
 * ARGV: call id, entry JSON as read, record member, record JSON, charge (account unit), model,
 *       cost nUSD for the day, tokens for the day, owner-index member
 * → 1 settled, 0 not (gone or changed)
 */
export const ORPHAN = `${COMMON}
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
endcall(KEYS[1], ARGV[1], KEYS[6], ARGV[9])
if cjson.decode(ARGV[2]).p == 0 then return 1 end
local m = redis.call('HGET', KEYS[2], 'm')
if m == '0' and ARGV[5] ~= '0' then redis.call('HINCRBY', KEYS[2], 'bal', '-' .. ARGV[5])
elseif m == '1' and ARGV[5] ~= '0' then redis.call('HINCRBY', KEYS[2], 'used', ARGV[5]) end
redis.call('ZADD', KEYS[3], 0, ARGV[3])
redis.call('HSET', KEYS[4], ARGV[3], ARGV[4])
redis.call('HINCRBY', KEYS[5], 'r:' .. ARGV[6], 1)
redis.call('HINCRBY', KEYS[5], 'c:' .. ARGV[6], ARGV[7])
redis.call('HINCRBY', KEYS[5], 't:' .. ARGV[6], ARGV[8])
return 1
`;

/**
 * A new key (and, unless it is rotated onto an existing account, its account), with its audit
 * entry. KEYS: key record, account, key's audit list
 * ARGV: key JSON, audit JSON or '', account mode ('' for none, 0 credit, 1 token), amount
 * → 1 created, 0 a key with this hash exists
 */
export const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if ARGV[3] ~= '' then
  if ARGV[3] == '0' then redis.call('HSET', KEYS[2], 'm', '0', 'bal', ARGV[4], 'bud', '0', 'used', '0', 'held', '0')
  else redis.call('HSET', KEYS[2], 'm', '1', 'bal', '0', 'bud', ARGV[4], 'used', '0', 'held', '0') end
end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[2]) end
return 1
`;

/**
 * A change to a key record, compare-and-set (the caller reads, changes, and retries when
 * another change came first), with its audit entry.
 * KEYS: key record, key's audit list   ARGV: record as read, new record, audit JSON or ''
 */
export const UPDATE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[3]) end
return 1
`;

/**
 * KEYS: account, audit list   ARGV: amount, audit JSON or '', the most an account may hold
 * → 1, 0 without such an account, or 2 (nothing written) when the sum would pass the most. The
 * check compares the stored amount with most − amount, both exact as doubles, never the sum.
 */
export const TOPUP = `
local m = redis.call('HGET', KEYS[1], 'm')
if not m then return 0 end
local field = m == '0' and 'bal' or 'bud'
if tonumber(redis.call('HGET', KEYS[1], field)) > tonumber(ARGV[3]) - tonumber(ARGV[1]) then return 2 end
redis.call('HINCRBY', KEYS[1], field, ARGV[1])
if ARGV[2] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[2]) end
return 1
`;

/** KEYS: model switches, models' audit list   ARGV: model, '1' or '0', audit JSON or '' */
export const SWITCH = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[3]) end
return 1
`;

/** Retention: KEYS: usage index, usage records   ARGV: the members to delete */
export const FORGET = `
redis.call('ZREM', KEYS[1], unpack(ARGV))
redis.call('HDEL', KEYS[2], unpack(ARGV))
return #ARGV
`;
