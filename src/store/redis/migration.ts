import { Cluster, Redis } from 'ioredis';
import type { KeyRecord } from '../../domain/types.js';
import type { StoreDump } from '../dump.js';
import { responseToRow, usageToRow } from '../rows.js';
import { accountIdInSlot } from './issuer.js';
import { accountName, auditName, callsName, DAY_MS, dayName, IDS, keyName, member, MODEL_AUDIT, OWNERS, ownerCalls, responseName, slotOf, STORE_ID, SWITCHES, usageIndex, usageRows, type CallEntry } from './names.js';
import { RedisUsage } from './usage.js';

/** Moving up from LMDB: what `tollgate store migrate` (../migrate.ts) writes and checks. */
export class RedisMigration extends RedisUsage {
  /** A Redis Cluster (rather than one server). */
  get isCluster(): boolean {
    return !this.single;
  }

  protected masters(): Redis[] {
    return this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
  }

  /** Whether the server (every master of a Cluster) holds none of tollgate's names but the store's identity, which opening it made. */
  async isEmpty(): Promise<boolean> {
    for (const node of this.masters()) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', 'tg:*', 'COUNT', 1000);
        if (found.some((name) => name !== STORE_ID)) return false;
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
    // What is written next is another store: a process still serving the one deleted says so.
    await this.identify();
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
}
