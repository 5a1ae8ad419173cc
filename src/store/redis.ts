import { createHash, randomBytes } from 'node:crypto';
import { Cluster, Command, Redis, type RedisOptions } from 'ioredis';
import { DEFAULT_RESPONSE_RETENTION_DAYS } from '../config/load.js';
import type { AdmissionListener, CommitListener, GatewayStore, HoldListener } from '../domain/interfaces.js';
import { log } from '../log.js';
import { RetryQueue } from './retry.js';
import { newInstanceId, ownProof, proofFrom, proofText, provenGone } from './instance.js';
import { responseToRow, rowToResponse, rowToUsage, usageToRow, type ResponseRow } from './rows.js';
import { ADMIT, CREATE, FORGET, HOLD, ORPHAN, RELEASE, SETTLE, SWITCH, TOPUP, UPDATE } from './redis-scripts.js';
import type { StoreDump } from './lmdb.js';
import { PLAIN_USAGE_DETAIL, type Account, type AuditEntry, type Charge, type DailyTotals, type Hold, type HoldEitherWay, type KeyMode, type KeyRecord, type MadeResponse, type NewKey, type Refusal, type ResponseOwner, type UsageRecord } from '../domain/types.js';
import { PendingAudit } from './audit.js';

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
 */

/** A command that has not answered within this is taken as a failure (fail closed). */
export const COMMAND_TIMEOUT_MS = 2_000;
/** A serving process refreshes its heartbeat this often … */
const HEARTBEAT_MS = 1_000;
/** … which expires after this: its calls are then settled by the survivors. */
export const OWNER_TTL_MS = 10_000;
/** How often a serving process looks for calls of owners that are gone. */
const SWEEP_MS = 2_000;
const DAY_MS = 86_400_000;
/** The status recorded for a call settled after its process died (as the LMDB backend records it). */
const INTERRUPTED_STATUS = 500;

type Client = Redis | Cluster;
type Script = (...args: (string | number)[]) => Promise<unknown>;
interface Scripts {
  tgAdmit: Script; tgHold: Script; tgRelease: Script; tgSettle: Script; tgOrphan: Script;
  tgCreate: Script; tgUpdate: Script; tgTopup: Script; tgSwitch: Script; tgForget: Script;
}

/** A call's entry in flight, as the scripts store it (numbers as decimal strings). */
interface CallEntry { o: string; p: 0 | 1; a: string; at: string; h: string; ic?: string; it?: string; e?: string; m?: string; s?: string; k?: string }

const SWITCHES = 'tg:{m}:sw';
/** The owner index named by a process that serves no calls (a command line): never read. */
const NO_OWNER = '-';
const MODEL_AUDIT = 'tg:{m}:au';
const IDS = 'tg:ids';
const OWNERS = 'tg:owners';

const keyName = (h: string): string => `tg:{${h}}:k`;
const rateName = (h: string): string => `tg:{${h}}:r`;
const callsName = (h: string): string => `tg:{${h}}:c`;
const usageIndex = (h: string): string => `tg:{${h}}:u`;
const usageRows = (h: string): string => `tg:{${h}}:ur`;
const dayName = (h: string, at: number): string => `tg:{${h}}:d:${Math.floor(at / DAY_MS)}`;
const auditName = (h: string): string => `tg:{${h}}:au`;
const accountName = (id: string): string => `tg:{${id}}:a`;
const responseName = (account: string, id: string): string => `tg:{${account}}:rs:${id}`;
const ownerCalls = (owner: string): string => `tg:o:${owner}`;
const heartbeat = (owner: string): string => `tg:p:${owner}`;

/** A usage record's member in its key's index: ordered by time, then call id (as LMDB orders them). */
const member = (at: number, callId: string): string => `${String(at).padStart(15, '0')}:${callId}`;

export class RedisStore implements GatewayStore {
  readonly backend = 'redis' as const;
  private owner: string | null = null;
  private timers: NodeJS.Timeout[] = [];
  private healthy = true;
  /** Releases and settlements that failed or whose reply was lost, tried again in order (store/retry.ts; each is idempotent). */
  private readonly retries = new RetryQueue<() => Promise<unknown>>(commitInOrder);
  private readonly pendingAudit = new PendingAudit();
  private auditSeq = 0;
  private readonly s: Scripts;
  /** The scripts of the request path, as run on one server (run). */
  private readonly hot: { admit: HotScript; hold: HotScript; release: HotScript; settle: HotScript };
  /** The connection the scripts in `loaded` were sent on (as text, or found there). */
  private loadedOn: unknown = null;
  private readonly loaded = new Set<HotScript>();
  /** The connection corked for this event-loop turn's commands (send), or null. */
  private corked: { uncork(): void } | null = null;
  /** Key records by their JSON (keyOf). */
  private readonly parsedKeys = new Map<string, KeyRecord>();

  private constructor(
    private readonly client: Client,
    /** A single server: keys of no slot go inside the scripts. A Cluster: beside them. */
    private readonly single: boolean,
    /** How long an owner record lives (storage.responseRetentionDays), as its TTL in ms, decimal. */
    private readonly responseTtl: string,
  ) {
    this.s = client as unknown as Scripts;
    const scripts = scriptsFor(single);
    this.hot = { admit: scripts.tgAdmit, hold: scripts.tgHold, release: scripts.tgRelease, settle: scripts.tgSettle };
    const ping = setInterval(() => {
      client.ping().then(() => (this.healthy = true), () => (this.healthy = false));
    }, 1_000);
    ping.unref();
    this.timers.push(ping);
  }

  /**
   * Connects to `url`; a server that reports `cluster_enabled:1` is used as a Redis Cluster
   * through it (ioredis discovers the other nodes). Rejects when nothing answers within a few
   * seconds. `responseRetentionDays`: the TTL of the owner records its settlements write.
   */
  static async open(url: string, storeOptions: { responseRetentionDays?: number } = {}): Promise<RedisStore> {
    const options: RedisOptions = {
      lazyConnect: true,
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: COMMAND_TIMEOUT_MS,
      // Reconnects for ever, soon: traffic resumes by itself when Redis is back.
      retryStrategy: (times) => Math.min(50 * times, 500),
    };
    const probe = new Redis(url, options);
    probe.on('error', () => undefined);
    try {
      await probe.connect();
    } catch (err) {
      probe.disconnect();
      throw new Error(`cannot reach Redis at ${redacted(url)}: ${(err as Error).message}`);
    }
    let client: Client = probe;
    let single = true;
    const info = await probe.info('cluster');
    if (/cluster_enabled:1/.test(info)) {
      probe.disconnect();
      const u = new URL(url);
      const cluster = new Cluster([{ host: u.hostname, port: Number(u.port) }], {
        lazyConnect: true,
        enableAutoPipelining: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: (times) => Math.min(50 * times, 500),
        redisOptions: { ...options, username: u.username || undefined, password: u.password ? decodeURIComponent(u.password) : undefined },
      });
      cluster.on('error', () => undefined);
      await cluster.connect();
      client = cluster;
      single = false;
    }
    let down = false;
    client.on('error', (err: Error) => {
      if (!down) log('error', 'store_unreachable', { backend: 'redis', error: err.message });
      down = true;
    });
    client.on('ready', () => {
      if (down) log('info', 'store_reachable', { backend: 'redis' });
      down = false;
    });
    // A fixed number of keys per script (ioredis then routes and groups a script by its first
    // key; with a variable count it would take the count for a key). One server: the keys of
    // no slot are in KEYS too; a Cluster: sent beside.
    for (const { name, lua, keys } of Object.values(scriptsFor(single))) client.defineCommand(name, { lua, numberOfKeys: keys });
    return new RedisStore(client, single, String((storeOptions.responseRetentionDays ?? DEFAULT_RESPONSE_RETENTION_DAYS) * DAY_MS));
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.retries.close();
    if (this.owner !== null) {
      await Promise.allSettled([this.client.del(heartbeat(this.owner))]);
      this.owner = null;
    }
    await this.client.quit().catch(() => this.client.disconnect());
  }

  answers(): boolean {
    return this.healthy && this.client.status === 'ready';
  }

  // ── the request path ─────────────────────────────────────────────────────

  admit(hash: string, surface: KeyMode, callId: string, done: AdmissionListener): void {
    const ownerMember = `${hash} ${callId}`;
    const keys = [keyName(hash), rateName(hash), callsName(hash)];
    if (this.single) keys.push(ownerCalls(this.owner ?? NO_OWNER), SWITCHES);
    this.run(this.hot.admit, [...keys, surface, callId, this.owner ?? '', ownerMember], (err, reply) => {
      if (err !== null) return this.admitFailed(hash, callId, err, done);
      const [code, retryAfter, raw] = reply as [string, number, string | null];
      const key = raw ? this.keyOf(raw) : undefined;
      // On a Cluster the owner's index is in another slot: a slot taken is indexed now.
      if (!this.single && this.owner !== null && code === '' && key?.concurrency != null) void this.client.sadd(ownerCalls(this.owner), ownerMember).catch(() => undefined);
      safely(() => done(key, code === '' ? null : (code as Refusal), retryAfter));
    });
  }

  admitHolding(hash: string, surface: KeyMode, callId: string, hold: HoldEitherWay, done: AdmissionListener): void {
    const { credit, token } = hold;
    const owner = this.owner ?? '';
    const ownerMember = `${hash} ${callId}`;
    // The call's entry (CallEntry) but for what the key decides (account, key id, hold,
    // interrupted charge), which the script adds.
    const entry = `{"o":${JSON.stringify(owner)},"p":1,"at":"${credit.at}","it":"${credit.interruptedInputTokens}","e":${JSON.stringify(credit.endpoint)},"m":${JSON.stringify(credit.model)},"s":"${credit.stream ? '1' : '0'}"`;
    const args = [keyName(hash), rateName(hash), callsName(hash)];
    if (this.single) args.push(ownerCalls(this.owner ?? NO_OWNER), SWITCHES);
    args.push(surface, callId, owner, ownerMember, credit.model, credit.enabledByDefault ? '1' : '0', entry,
      String(credit.amount), String(credit.interruptedCharge), String(token.amount), String(token.interruptedCharge));
    if (credit.previousResponses !== null) args.push(...credit.previousResponses);
    const decided = (err: Error | null, reply: unknown, switchedOn = true): void => {
      if (err !== null) return this.admitFailed(hash, callId, err, done);
      const [code, retryAfter, raw] = reply as [string, number, string | null];
      const key = raw ? this.keyOf(raw) : undefined;
      if (!this.single) {
        if (code !== '') this.unindex(ownerMember);
        // Step 10's switch comes before the responses the call continues.
        if (!switchedOn && (code === '' || code === 'previous_response_not_found')) {
          if (code === '') this.releaseByHash(hash, callId);
          return safely(() => done(key, 'model_not_available', 0));
        }
      }
      safely(() => done(key, code === '' ? null : (code as Refusal), retryAfter));
    };
    if (this.single) return this.run(this.hot.admit, args, decided);
    // On a Cluster the switch and the owner index are in other slots: sent in the same turn, so
    // they travel in the same round trip (the index entry is taken back if nothing is held).
    if (this.owner !== null) void this.client.sadd(ownerCalls(this.owner), ownerMember).catch(() => undefined);
    Promise.all([this.s.tgAdmit(...args), this.client.hget(SWITCHES, credit.model)]).then(
      ([reply, sw]) => decided(null, reply, sw === null ? credit.enabledByDefault : sw === '1'),
      (err: Error) => decided(err, null),
    );
  }

  /** An admission whose reply did not come: refused 503, and whatever it may have taken freed. */
  private admitFailed(hash: string, callId: string, err: Error, done: AdmissionListener): void {
    this.failed('admit', err);
    // The script may have run and taken a slot or placed a hold whose reply was lost: free it (idempotent).
    this.releaseByHash(hash, callId);
    safely(() => done(undefined, 'store_unavailable', 0));
  }

  /** On a Cluster: takes a call out of this process's owner index (sent beside the scripts). */
  private unindex(ownerMember: string): void {
    if (this.owner !== null) void this.client.srem(ownerCalls(this.owner), ownerMember).catch(() => undefined);
  }

  /**
   * A key record from its JSON as a script returned it: parsed once per version of the record
   * (the last few hundred are kept), not once per call. Records are never changed in place.
   */
  private keyOf(raw: string): KeyRecord {
    let key = this.parsedKeys.get(raw);
    if (key === undefined) {
      if (this.parsedKeys.size >= 512) this.parsedKeys.clear();
      key = JSON.parse(raw) as KeyRecord;
      this.parsedKeys.set(raw, key);
    }
    return key;
  }

  lookup(hash: string, done: (key: KeyRecord | undefined, failure: unknown) => void): void {
    this.client.get(keyName(hash)).then((raw) => safely(() => done(raw ? (JSON.parse(raw) as KeyRecord) : undefined, null)), (err: unknown) => {
      this.failed('lookup', err);
      safely(() => done(undefined, err));
    });
  }

  responseOwner(account: string, id: string, done: (owner: ResponseOwner | undefined, failure: unknown) => void): void {
    this.client.get(responseName(account, id)).then((raw) => safely(() => done(raw === null ? undefined : rowToResponse(JSON.parse(raw) as ResponseRow), null)), (err: unknown) => {
      this.failed('response_owner', err);
      safely(() => done(undefined, err));
    });
  }

  modelEnabled(id: string, byDefault: boolean, done: (enabled: boolean | null) => void): void {
    this.client.hget(SWITCHES, id).then((v) => safely(() => done(v === null ? byDefault : v === '1')), (err: unknown) => {
      this.failed('model_switch', err);
      safely(() => done(null));
    });
  }

  readModelSwitches(done: (switches: ReadonlyMap<string, boolean> | null) => void): void {
    this.client.hgetall(SWITCHES).then((all) => safely(() => done(new Map(Object.entries(all).map(([id, v]) => [id, v === '1'])))), (err: unknown) => {
      this.failed('model_switch', err);
      safely(() => done(null));
    });
  }

  hold(key: KeyRecord, callId: string, hold: Hold, done: HoldListener): void {
    const entry: CallEntry = {
      o: this.owner ?? '', p: 1, a: key.account, at: String(hold.at), h: String(hold.amount), ic: String(hold.interruptedCharge),
      it: String(hold.interruptedInputTokens), e: hold.endpoint, m: hold.model, s: hold.stream ? '1' : '0', k: key.id,
    };
    const ownerMember = `${key.hash} ${callId}`;
    const args = [callsName(key.hash), accountName(key.account)];
    if (this.single) args.push(SWITCHES, ownerCalls(this.owner ?? NO_OWNER));
    args.push(callId, JSON.stringify(entry), String(hold.amount), hold.model, hold.enabledByDefault ? '1' : '0', ownerMember);
    if (hold.previousResponses !== null) args.push(...hold.previousResponses);
    const placed = (err: Error | null, reply: unknown, switchedOn = true): void => {
      if (err !== null) {
        this.failed('hold', err);
        this.release(key, callId);
        return safely(() => done('store_unavailable'));
      }
      if (!switchedOn) {
        this.release(key, callId);
        return safely(() => done('model_not_available'));
      }
      safely(() => done(reply === '' ? null : (reply as Refusal)));
    };
    if (this.single) return this.run(this.hot.hold, args, placed);
    // On a Cluster the switch and the owner index are in other slots: sent in the same turn,
    // so they travel in the same round trip.
    if (this.owner !== null) void this.client.sadd(ownerCalls(this.owner), ownerMember).catch(() => undefined);
    Promise.all([this.s.tgHold(...args), this.client.hget(SWITCHES, hold.model)]).then(
      ([reply, sw]) => placed(null, reply, sw === null ? hold.enabledByDefault : sw === '1'),
      (err: Error) => placed(err, null),
    );
  }

  release(key: KeyRecord, callId: string): void {
    this.releaseByHash(key.hash, callId);
  }

  private releaseByHash(hash: string, callId: string): void {
    const ownerMember = `${hash} ${callId}`;
    const args = [callsName(hash)];
    if (this.single) args.push(ownerCalls(this.owner ?? NO_OWNER));
    args.push(callId, ownerMember);
    const attempt = (): Promise<unknown> => this.runPromised(this.hot.release, args).then(() => {
      if (!this.single && this.owner !== null) return this.client.srem(ownerCalls(this.owner), ownerMember);
      return undefined;
    });
    attempt().catch(() => this.retries.add(attempt, callId));
  }

  record(key: KeyRecord, usage: UsageRecord, charge: Charge, listener: CommitListener, settles = true, response: MadeResponse | null = null): void {
    const ownerMember = `${key.hash} ${usage.callId}`;
    const args = [callsName(key.hash), accountName(key.account), usageIndex(key.hash), usageRows(key.hash), dayName(key.hash, usage.at)];
    if (this.single) args.push(ownerCalls(this.owner ?? NO_OWNER));
    args.push(usage.callId, member(usage.at, usage.callId), JSON.stringify(usageToRow(usage)), String(charge.nano), String(charge.tokens), usage.model,
      String(usage.tokensCharged), settles ? '1' : '0', ownerMember,
      response === null ? '' : response.id, response === null ? '' : JSON.stringify(responseToRow(response, usage.at)), this.responseTtl);
    const stored = (reply: unknown): void => {
      if (reply === 0 && settles) log('warn', 'call_already_settled', { requestId: usage.callId, keyPrefix: key.prefix });
      if (!this.single && this.owner !== null) void this.client.srem(ownerCalls(this.owner), ownerMember).catch(() => undefined);
    };
    this.run(this.hot.settle, args, (err, reply) => {
      if (err === null) {
        stored(reply);
        return tellCommitted(listener, null);
      }
      this.failed('settle', err);
      // Idempotent by call id: tried again until Redis has it, so what the provider billed is
      // charged once (or, should this process die first, settled as interrupted by a survivor).
      this.retries.add(() => this.runPromised(this.hot.settle, args).then(stored), usage.callId);
      tellCommitted(listener, err);
    });
  }

  /**
   * Runs a script of the request path: on one server straight through the connection
   * (hotScript), on a Cluster through ioredis's commands (routed by slot, auto-pipelined).
   * `args`: its keys, then its arguments.
   */
  private run(script: HotScript, args: string[], done: (err: Error | null, reply: unknown) => void): void {
    if (!this.single) {
      (this.s[script.name](...args) as Promise<unknown>).then((reply) => done(null, reply), (err: Error) => done(err, null));
      return;
    }
    this.send(script, args, (err, reply) => {
      // A server that lost its scripts (restarted): the script's text once, then its SHA again.
      if (err !== null && err.message.startsWith('NOSCRIPT')) return this.send(script, args, done, true);
      done(err, reply);
    });
  }

  private runPromised(script: HotScript, args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => this.run(script, args, (err, reply) => (err === null ? resolve(reply) : reject(err))));
  }

  /**
   * One script call on the single server's connection, with ioredis's own command (its reply
   * parsing, its command timeout, its failure when the connection is down), but not through its
   * auto-pipelining: the connection is corked at the first command of an event-loop turn and
   * uncorked at the end of the turn (setImmediate, after the turn's I/O callbacks), so every
   * command of the turn leaves in one write, and a turn's commands go out at once rather than
   * wait for the previous batch's replies (ioredis keeps one auto-pipeline in flight).
   * Measured (a script returning at once, 32 callers): 10.5 µs of client CPU per call against
   * 19.3 µs through auto-pipelining.
   */
  private send(script: HotScript, args: string[], done: (err: Error | null, reply: unknown) => void, text = false): void {
    const client = this.client as Redis;
    const stream = client.stream;
    // The script's text the first time on a connection (as ioredis's defineCommand does), its SHA after.
    if (stream !== this.loadedOn) {
      this.loadedOn = stream;
      this.loaded.clear();
    }
    if (!this.loaded.has(script)) {
      this.loaded.add(script);
      text = true;
    }
    if (this.corked === null && stream && client.status === 'ready') {
      stream.cork();
      this.corked = stream;
      setImmediate(this.uncork);
    }
    const command = new Command(text ? 'eval' : 'evalsha', [text ? script.lua : script.sha, script.keys, ...args], UTF8, (err: Error | null | undefined, reply: unknown) => {
      if (err) {
        if (err.message.startsWith('NOSCRIPT')) this.loaded.delete(script);
        return done(err, null);
      }
      done(null, reply);
    });
    client.sendCommand(command);
  }

  private readonly uncork = (): void => {
    const stream = this.corked;
    this.corked = null;
    stream?.uncork();
  };

  // ── calls whose process died ─────────────────────────────────────────────

  private serving: Promise<void> | null = null;

  serveCalls(): Promise<void> {
    if (this.serving !== null) return this.serving;
    const owner = newInstanceId();
    this.owner = owner;
    // The heartbeat's value: when it beat, then what proves this process gone (store/instance.ts).
    const proof = proofText(ownProof());
    const beat = (): void => {
      this.client.set(heartbeat(owner), `${Date.now()} ${proof}`, 'PX', OWNER_TTL_MS).catch(() => undefined);
    };
    beat();
    void this.client.sadd(OWNERS, owner).catch(() => undefined);
    const sweep = (): Promise<void> => this.settleOrphans().then(() => undefined, (err: unknown) => {
      log('error', 'orphan_sweep_failed', { error: String(err) });
    });
    const timers = [setInterval(beat, HEARTBEAT_MS), setInterval(() => void sweep(), SWEEP_MS)];
    for (const t of timers) t.unref();
    this.timers.push(...timers);
    this.serving = sweep();
    return this.serving;
  }

  /** Tries now what failed commands left; resolves to how many are still kept. */
  retryFailed(): Promise<number> {
    return this.retries.retry();
  }


  /**
   * Settles, exactly once, every call whose owner's heartbeat has expired (OWNER_TTL_MS):
   * recorded as `error: "interrupted"`, estimated, charged its input estimate, its hold
   * released; a call that only held a concurrency slot just frees it. The LMDB backend's rule.
   * Returns how many calls were settled.
   */
  async settleOrphans(): Promise<number> {
    const owners = await this.client.smembers(OWNERS);
    let settled = 0;
    let dead = 0;
    for (const owner of owners) {
      if (owner === this.owner || !(await this.ownerIsGone(owner))) continue;
      dead++;
      const members = await this.client.smembers(ownerCalls(owner));
      // Every call of the owner read at once, then every settlement sent in the same turn: one
      // pipeline, which Redis runs back to back, so readers see the owner's calls settled
      // together (as LMDB's one transaction shows them).
      const calls = members.map((m) => m.split(' ') as [string, string]);
      const entries = await Promise.all(calls.map(([hash, callId]) => this.client.hget(callsName(hash), callId)));
      const modes = await Promise.all(entries.map((raw) => (raw === null ? null : this.client.hget(accountName((JSON.parse(raw) as CallEntry).a), 'm'))));
      const results = await Promise.all(calls.map(([hash, callId], i) => this.settleOrphan(owner, hash, callId, entries[i]!, modes[i]!)));
      settled += results.filter(Boolean).length;
      if (!this.single && members.length > 0) await this.client.srem(ownerCalls(owner), ...members);
      if ((await this.client.scard(ownerCalls(owner))) === 0) await this.client.srem(OWNERS, owner);
    }
    if (settled > 0) log('warn', 'orphaned_calls_settled', { calls: settled, owners: dead });
    return settled;
  }

  /**
   * Gone: its heartbeat expired, or (the LMDB backend's rule, at once rather than after the
   * heartbeat's TTL) it is proven gone on this machine: same boot, same PID namespace, its pid
   * gone or reused (store/instance.ts). A heartbeat of an older build holds no proof.
   */
  private async ownerIsGone(owner: string): Promise<boolean> {
    const beat = await this.client.get(heartbeat(owner));
    if (beat === null) return true;
    return provenGone(proofFrom(beat.slice(beat.indexOf(' ') + 1)));
  }

  /** One orphaned call, from its entry as read (`raw`) and its account's mode. */
  private async settleOrphan(owner: string, hash: string, callId: string, raw: string | null, mode: string | null): Promise<boolean> {
    const ownerMember = `${hash} ${callId}`;
    const c = raw === null ? null : (JSON.parse(raw) as CallEntry);
    // Settled meanwhile, or (cannot happen, but an index entry left behind can) another owner's.
    if (c === null || c.o !== owner) {
      await this.client.srem(ownerCalls(owner), ownerMember);
      return false;
    }
    const credit = mode !== '1';
    const at = Number(c.at);
    const charge = Number(c.ic ?? '0');
    const record: UsageRecord = {
      at, callId, requestId: callId, endpoint: (c.e ?? 'chat') as UsageRecord['endpoint'], model: c.m ?? '', stream: c.s === '1',
      status: INTERRUPTED_STATUS, inputTokens: Number(c.it ?? '0'), outputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
      costNano: credit ? charge : null, tokensCharged: credit ? 0 : charge, error: 'interrupted', estimated: true, clientGone: false,
      ...PLAIN_USAGE_DETAIL, estimateReason: 'interrupted',
    };
    const keys = [callsName(hash), accountName(c.a), usageIndex(hash), usageRows(hash), dayName(hash, at)];
    if (this.single) keys.push(ownerCalls(owner));
    const done = await this.s.tgOrphan(...keys, callId, raw!, member(at, callId), JSON.stringify(usageToRow(record)), String(charge),
      record.model, String(credit ? charge : 0), String(record.tokensCharged), ownerMember);
    return done === 1;
  }

  // ── issuer changes ───────────────────────────────────────────────────────

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const raw = await this.client.get(keyName(hash));
    return raw === null ? undefined : (JSON.parse(raw) as KeyRecord);
  }

  async keyById(id: string): Promise<KeyRecord | undefined> {
    const hash = await this.client.hget(IDS, id);
    return hash === null ? undefined : this.keyByHash(hash);
  }

  async allKeys(): Promise<KeyRecord[]> {
    const hashes = Object.values(await this.client.hgetall(IDS));
    const keys = (await Promise.all(hashes.map((h) => this.keyByHash(h)))).filter((k): k is KeyRecord => k !== undefined);
    return keys.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  async account(id: string): Promise<Account | undefined> {
    const a = await this.client.hgetall(accountName(id));
    if (a.m === undefined) return undefined;
    return { mode: a.m === '0' ? 'credit' : 'token', balanceNano: Number(a.bal), budgetTokens: Number(a.bud), usedTokens: Number(a.used), held: Number(a.held ?? 0) };
  }

  fitsAccount(account: string, hash: string): boolean {
    return slotOf(account) === slotOf(hash);
  }

  async createKey(fields: NewKey, now = Date.now()): Promise<KeyRecord> {
    const record: KeyRecord = {
      id: newId('key'), hash: fields.hash, prefix: fields.prefix, name: fields.name, mode: fields.mode, models: fields.models, rpm: fields.rpm,
      concurrency: fields.concurrency, expiresAt: fields.expiresAt, status: 'active', createdAt: now,
      // In the slot of the key's hash, so a call's every check runs on one shard.
      account: accountIdInSlot(slotOf(fields.hash)), rotatedFrom: null,
    };
    const audit = this.takeAudit(record);
    // The index first: an index entry whose key was never written is skipped; a key without one would be lost.
    await this.client.hset(IDS, record.id, record.hash);
    const created = await this.s.tgCreate(keyName(record.hash), accountName(record.account), auditName(record.hash), JSON.stringify(record), audit, fields.mode === 'credit' ? '0' : '1', String(fields.amount));
    if (created !== 1) {
      await this.client.hdel(IDS, record.id);
      throw new Error('a key with this secret already exists');
    }
    return record;
  }

  async rotateKey(oldId: string, hash: string, prefix: string, now = Date.now()): Promise<KeyRecord | undefined> {
    const old = await this.keyById(oldId);
    if (!old) {
      this.takeAudit(undefined);
      return undefined;
    }
    const record: KeyRecord = { ...old, id: newId('key'), hash, prefix, status: 'active', createdAt: now, rotatedFrom: old.id };
    const audit = this.takeAudit(record);
    await this.client.hset(IDS, record.id, hash);
    const created = await this.s.tgCreate(keyName(hash), accountName(record.account), auditName(hash), JSON.stringify(record), audit, '', '0');
    if (created !== 1) throw new Error('a key with this secret already exists');
    return record;
  }

  async updateKey(id: string, change: (key: KeyRecord) => KeyRecord): Promise<KeyRecord | undefined> {
    const make = this.pendingAudit.take();
    const hash = await this.client.hget(IDS, id);
    if (hash === null) return undefined;
    for (;;) {
      const raw = await this.client.get(keyName(hash));
      if (raw === null) return undefined;
      const next = change(JSON.parse(raw) as KeyRecord);
      const audit = this.auditJson(make?.(next));
      if ((await this.s.tgUpdate(keyName(hash), auditName(hash), raw, JSON.stringify(next), audit)) === 1) return next;
      // Another change came first: apply this one to the record as it is now.
    }
  }

  async topUp(accountId: string, amount: number): Promise<Account | undefined> {
    const e = this.pendingAudit.take()?.(undefined);
    // The entry goes to the audit trail of the key it names (in the account's slot).
    const hash = e?.keyId ? await this.client.hget(IDS, e.keyId) : null;
    const auditList = hash === null ? auditName(accountId) : auditName(hash);
    const done = await this.s.tgTopup(accountName(accountId), auditList, String(amount), this.auditJson(e));
    return done === 1 ? this.account(accountId) : undefined;
  }

  async modelSwitch(id: string): Promise<boolean | undefined> {
    const v = await this.client.hget(SWITCHES, id);
    return v === null ? undefined : v === '1';
  }

  async setModelSwitch(id: string, enabled: boolean): Promise<boolean> {
    await this.s.tgSwitch(SWITCHES, MODEL_AUDIT, id, enabled ? '1' : '0', this.takeAudit(true));
    return true;
  }

  audited<T>(entry: (result: T) => AuditEntry | undefined, change: () => Promise<T>): Promise<T> {
    return this.pendingAudit.around(entry, change);
  }

  /** The pending audit entry for this change's result, as the JSON its script stores ('' for none). */
  private takeAudit(result: unknown): string {
    return this.auditJson(this.pendingAudit.take()?.(result));
  }

  private auditJson(e: AuditEntry | undefined): string {
    if (e === undefined) return '';
    return JSON.stringify({ ...e, seq: `${String(e.at).padStart(15, '0')}.${process.pid.toString(36)}.${(this.auditSeq++).toString(36).padStart(6, '0')}` });
  }

  async auditTrail(keyId?: string, limit = 10_000): Promise<AuditEntry[]> {
    let lists: string[];
    if (keyId !== undefined) {
      const hash = await this.client.hget(IDS, keyId);
      lists = hash === null ? [] : [auditName(hash)];
    } else {
      const hashes = Object.values(await this.client.hgetall(IDS));
      lists = [MODEL_AUDIT, ...hashes.map(auditName)];
    }
    const entries = (await Promise.all(lists.map((l) => this.client.lrange(l, 0, -1)))).flat().map((j) => JSON.parse(j) as AuditEntry & { seq: string });
    entries.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    return entries.slice(0, limit).map(({ seq: _seq, ...e }) => e);
  }

  /** Durability is Redis's own (appendonly, appendfsync: see the README); nothing to flush here. */
  flushToDisk(): Promise<void> {
    return Promise.resolve();
  }

  // ── usage ────────────────────────────────────────────────────────────────

  async usageOf(key: KeyRecord, limit: number, before?: [number, string]): Promise<UsageRecord[]> {
    const max = before ? `(${member(before[0], before[1])}` : '+';
    const members = await this.client.zrevrangebylex(usageIndex(key.hash), max, '-', 'LIMIT', 0, limit);
    return this.rows(key.hash, members);
  }

  async usageBetween(key: KeyRecord, from: number, to: number, limit: number): Promise<UsageRecord[]> {
    const members = await this.client.zrangebylex(usageIndex(key.hash), `[${String(from).padStart(15, '0')}`, `(${String(to).padStart(15, '0')}`, 'LIMIT', 0, limit);
    return this.rows(key.hash, members);
  }

  private async rows(hash: string, members: string[]): Promise<UsageRecord[]> {
    if (members.length === 0) return [];
    const rows = await this.client.hmget(usageRows(hash), ...members);
    return rows.filter((r): r is string => r !== null).map((r) => rowToUsage(JSON.parse(r)));
  }

  async dailyOf(key: KeyRecord, fromDay: string, toDay: string): Promise<Map<string, DailyTotals>> {
    const from = Math.floor(Date.parse(`${fromDay}T00:00:00Z`) / DAY_MS);
    const to = Math.floor(Date.parse(`${toDay}T00:00:00Z`) / DAY_MS);
    const days = new Map<string, DailyTotals>();
    const hashes = await Promise.all(Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => this.client.hgetall(dayName(key.hash, (from + i) * DAY_MS))));
    hashes.forEach((fields, i) => {
      const names = Object.keys(fields);
      if (names.length === 0) return;
      const totals: DailyTotals = { requests: 0, costNano: 0, tokens: 0, byModel: {} };
      for (const name of names) {
        const model = name.slice(2);
        const n = Number(fields[name]);
        const m = (totals.byModel[model] ??= { requests: 0, costNano: 0, tokens: 0 });
        if (name.startsWith('r:')) {
          m.requests = n;
          totals.requests += n;
        } else if (name.startsWith('c:')) {
          m.costNano = n;
          totals.costNano += n;
        } else {
          m.tokens = n;
          totals.tokens += n;
        }
      }
      days.set(new Date((from + i) * DAY_MS).toISOString().slice(0, 10), totals);
    });
    return days;
  }

  async deleteUsageBefore(before: number, limit: number, fromKeyId: string): Promise<{ deleted: number; next: string | null }> {
    const ids = await this.client.hgetall(IDS);
    const order = Object.keys(ids).filter((id) => id >= fromKeyId).sort();
    let deleted = 0;
    for (const id of order) {
      if (deleted >= limit) return { deleted, next: id };
      const hash = ids[id]!;
      const doomed = await this.client.zrangebylex(usageIndex(hash), '-', `(${String(before).padStart(15, '0')}`, 'LIMIT', 0, limit - deleted);
      if (doomed.length > 0) deleted += Number(await this.s.tgForget(usageIndex(hash), usageRows(hash), ...doomed));
      if (deleted >= limit) return { deleted, next: id }; // it may hold more old records
    }
    return { deleted, next: null };
  }

  // ── moving up from LMDB (tollgate store migrate, ./migrate.ts) ───────────

  /** A Redis Cluster (rather than one server). */
  get isCluster(): boolean {
    return !this.single;
  }

  private masters(): Redis[] {
    return this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
  }

  /** Whether the server (every master of a Cluster) holds none of tollgate's names. */
  async isEmpty(): Promise<boolean> {
    for (const node of this.masters()) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', 'tg:*', 'COUNT', 1000);
        if (found.length > 0) return false;
        cursor = next;
      } while (cursor !== '0');
    }
    return true;
  }

  /** Deletes every one of tollgate's names (migrate --force). */
  async clear(): Promise<void> {
    for (const node of this.masters()) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', 'tg:*', 'COUNT', 1000);
        // One name at a time: on a Cluster, names of one scan are in many slots.
        await Promise.all(found.map((name) => node.unlink(name)));
        cursor = next;
      } while (cursor !== '0');
    }
  }

  /**
   * Writes what an LMDB store holds. On a Cluster, an account whose id is not in its keys' slot
   * gets a new id that is (every check of a call must be one script on one shard); returns the
   * ids changed, old → new, and how many owner records were carried: each with what is left of
   * its retention (`responseRetentionDays` from when its call started) as its TTL, none with
   * less than a minute left. An account whose keys (a key and its rotations) fall in different
   * slots cannot be moved to a Cluster, and nothing is written then.
   */
  async load(dump: StoreDump, responseRetentionDays: number, now = Date.now()): Promise<{ renamed: Map<string, string>; responses: number }> {
    const renamed = new Map<string, string>();
    if (!this.single) {
      const slots = new Map<string, Set<number>>();
      for (const k of dump.keys) (slots.get(k.account) ?? slots.set(k.account, new Set()).get(k.account)!).add(slotOf(k.hash));
      for (const [account, set] of slots) {
        if (set.size > 1) throw new Error(`account ${account} is drawn on by keys in ${set.size} Cluster slots (a key and its rotations); it can be moved to one Redis server, not to a Cluster`);
        const slot = [...set][0]!;
        if (slotOf(account) !== slot) renamed.set(account, accountIdInSlot(slot));
      }
    }
    const acct = (id: string): string => renamed.get(id) ?? id;
    const hashOf = new Map(dump.keys.map((k) => [k.id, k.hash]));
    const writes: Array<() => Promise<unknown>> = [];
    for (const k of dump.keys) {
      writes.push(() => this.client.hset(IDS, k.id, k.hash));
      writes.push(() => this.client.set(keyName(k.hash), JSON.stringify({ ...k, account: acct(k.account) })));
    }
    for (const [id, a] of dump.accounts) {
      writes.push(() => this.client.hset(accountName(acct(id)), 'm', a.mode === 'credit' ? '0' : '1', 'bal', String(a.balanceNano), 'bud', String(a.budgetTokens), 'used', String(a.usedTokens), 'held', String(a.held)));
    }
    for (const c of dump.calls) {
      const hash = hashOf.get(c.keyId);
      if (hash === undefined) continue;
      const entry: CallEntry = { o: c.owner, p: c.phase, a: acct(c.account), at: String(c.at), h: String(c.held), ic: String(c.interruptedCharge), it: String(c.interruptedInputTokens), e: c.endpoint, m: c.model, s: c.stream ? '1' : '0', k: c.keyId };
      writes.push(() => this.client.hset(callsName(hash), c.callId, JSON.stringify(entry)));
      // The LMDB processes that owned them have no heartbeat here: the first `serve` settles them.
      writes.push(() => this.client.sadd(ownerCalls(c.owner), `${hash} ${c.callId}`));
      writes.push(() => this.client.sadd(OWNERS, c.owner));
    }
    for (const [keyId, u] of dump.usage) {
      const hash = hashOf.get(keyId);
      if (hash === undefined) continue;
      const m = member(u.at, u.callId);
      writes.push(() => this.client.zadd(usageIndex(hash), 0, m));
      writes.push(() => this.client.hset(usageRows(hash), m, JSON.stringify(usageToRow(u))));
    }
    for (const d of dump.daily) {
      const hash = hashOf.get(d.keyId);
      if (hash === undefined) continue;
      writes.push(() => this.client.hset(dayName(hash, Date.parse(`${d.day}T00:00:00Z`)), `r:${d.model}`, String(d.requests), `c:${d.model}`, String(d.costNano), `t:${d.model}`, String(d.tokens)));
    }
    for (const [model, on] of dump.switches) writes.push(() => this.client.hset(SWITCHES, model, on ? '1' : '0'));
    dump.audit.forEach((e, i) => {
      const hash = e.keyId === null ? undefined : hashOf.get(e.keyId);
      const seq = `${String(e.at).padStart(15, '0')}.0.${i.toString(36).padStart(6, '0')}`;
      writes.push(() => this.client.rpush(hash === undefined ? MODEL_AUDIT : auditName(hash), JSON.stringify({ ...e, seq })));
    });
    let responses = 0;
    for (const r of dump.responses) {
      const left = r.at + responseRetentionDays * DAY_MS - now;
      // Past (or all but past) its retention: it would expire before the copy is checked.
      if (left < 60_000) continue;
      responses++;
      writes.push(() => this.client.set(responseName(acct(r.account), r.id), JSON.stringify(responseToRow(r, r.at)), 'PX', left));
    }
    // In slices: each slice's commands go out pipelined in one turn.
    for (let i = 0; i < writes.length; i += 1000) await Promise.all(writes.slice(i, i + 1000).map((w) => w()));
    return { renamed, responses };
  }

  /** Owner records of stored responses, on every master (for migrate's check). */
  async responseCount(): Promise<number> {
    let n = 0;
    for (const node of this.masters()) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', 'tg:{*}:rs:*', 'COUNT', 1000);
        n += found.length;
        cursor = next;
      } while (cursor !== '0');
    }
    return n;
  }

  /** Counts for migrate's check: usage records, day-total rows and calls in flight of a key. */
  async countsOf(key: KeyRecord): Promise<{ usage: number; calls: number }> {
    const [usage, calls] = await Promise.all([this.client.zcard(usageIndex(key.hash)), this.client.hlen(callsName(key.hash))]);
    return { usage, calls };
  }

  async switchCount(): Promise<number> {
    return this.client.hlen(SWITCHES);
  }

  private failed(what: string, err: unknown): void {
    this.healthy = this.client.status === 'ready';
    log('error', 'store_command_failed', { backend: 'redis', command: what, error: err instanceof Error ? err.message : String(err) });
  }
}

/**
 * Runs a listener of the request path. It runs in a promise's callback, where a throw would be
 * an unhandled rejection (which ends the process): it is logged instead, like a failing listener
 * of LMDB's group commit.
 */
/** A script of the request path: its name for ioredis (a Cluster), its text, SHA-1 and number of keys. */
interface HotScript { name: keyof Scripts; lua: string; sha: string; keys: number }

function hotScript(name: keyof Scripts, lua: string, keys: number): HotScript {
  return { name, lua, sha: createHash('sha1').update(lua).digest('hex'), keys };
}

/**
 * Every script with its number of keys: on a single server the scripts of the request path
 * also name the keys of no slot (owner index, model switches), which a Cluster sends beside them.
 */
function scriptsFor(single: boolean): Record<keyof Scripts, HotScript> {
  const extra = single ? 1 : 0;
  const table: Array<[keyof Scripts, string, number]> = [
    ['tgAdmit', ADMIT, 3 + 2 * extra], ['tgHold', HOLD, 2 + 2 * extra], ['tgRelease', RELEASE, 1 + extra], ['tgSettle', SETTLE, 5 + extra], ['tgOrphan', ORPHAN, 5 + extra],
    ['tgCreate', CREATE, 3], ['tgUpdate', UPDATE, 2], ['tgTopup', TOPUP, 2], ['tgSwitch', SWITCH, 2], ['tgForget', FORGET, 2],
  ];
  return Object.fromEntries(table.map(([name, lua, keys]) => [name, hotScript(name, lua, keys)])) as Record<keyof Scripts, HotScript>;
}

/** Replies as strings (ioredis's default for its commands). */
const UTF8 = { replyEncoding: 'utf8' as const };

function safely(listener: () => void): void {
  try {
    listener();
  } catch (err) {
    log('error', 'store_listener_failed', { error: err instanceof Error ? err.stack ?? err.message : String(err) });
  }
}

/** Runs the kept attempts one after another, stopping at the first that fails: how many succeeded. */
async function commitInOrder(attempts: readonly (() => Promise<unknown>)[]): Promise<number> {
  let done = 0;
  for (const attempt of attempts) {
    try {
      await attempt();
    } catch {
      break;
    }
    done++;
  }
  return done;
}

function tellCommitted(listener: CommitListener, error: unknown): void {
  try {
    listener.committed(error);
  } catch (err) {
    log('error', 'commit_listener_failed', { error: String(err) });
  }
}

function newId(kind: string): string {
  return `${kind}_${randomBytes(8).toString('hex')}`;
}

/** A fresh account id in `slot` (≈ 16,384 random draws of a few µs each, once per key created). */
function accountIdInSlot(slot: number): string {
  for (;;) {
    const id = newId('acct');
    if (slotOf(id) === slot) return id;
  }
}

function redacted(url: string): string {
  const u = new URL(url);
  if (u.password !== '') u.password = '***';
  return u.toString();
}

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
