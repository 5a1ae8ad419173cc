/**
 * Cost budget: what one call costs in writes, reads, store calls, commits and Redis commands, per
 * plain call and per streamed call, with every check, the hold, metering, the usage record,
 * metrics and the access log on (test/fixtures/cost-gateway.ts), on LMDB and on Redis. Counts,
 * not times: WINDOW calls one after another on one keep-alive connection, counted by the
 * gateway's process:
 *
 * - clientWrites: writes made by the client's socket (one write to the kernel each). A plain
 *   answer is held until its record is committed and sent whole: one write. A stream's writes are
 *   at most one per provider read (what a read brought leaves in one write; a stream's
 *   last read goes with the chunked body's end once the record is committed, but a stream that
 *   came whole in one read is written at once and ended after the commit) plus
 *   STREAM_EXTRA_WRITES per call; checked on the mock's stream in one write, on one of 20
 *   separate writes, and on one of 20 chunks of the chunked encoding sent together (one read,
 *   passed on chunk by chunk and still one write: Node corks the socket until the next tick).
 * - providerReads: reads made by the gateway's sockets to the provider.
 * - storeCalls: calls of the store's request-path methods (on both backends: admitHolding, record).
 * - transactions (LMDB): write transactions that carried calls' work; at c=1, one group commit
 *   per store call that waits for one (at higher concurrency calls share them).
 * - redisScripts: round trips to Redis, one script each (test/redis-round-trips.test.ts pins
 *   the same figure); redisCommands: every command Redis ran, the scripts' own included (INFO
 *   commandstats, its INFO calls left out). The store's intervals (ping, heartbeat, sweep) wait
 *   while a window is open, so both are the calls' own.
 *
 * Each count is exact, so no margin: one more write, commit or command per call is the change
 * the budget is there to show. Re-seeding: the test prints `# counts: BACKEND KIND: {…}` with
 * the budgeted figures per call, in the shape of COUNTS; copy them there.
 */
import t from 'tap';
import { chatCall, openClients, startCostGateway, type Clients, type CostGateway, type WindowReport } from './helpers/cost-gateway.js';
import { startRedis, type RedisServer } from './helpers/redis.js';

// Thousands of sequential calls: on two busy cores (CI runs two files at once) this passes tap's 120 s.
t.setTimeout(10 * 60_000);

/** Per call, at most: the figures of the last seeding (the lines this test prints). */
const COUNTS: Record<'lmdb' | 'redis', Record<'plain' | 'stream', Partial<Figures>>> = {
  lmdb: {
    plain: { clientWrites: 1, storeCalls: 2, transactions: 2 },
    stream: { storeCalls: 2, transactions: 2 },
  },
  redis: {
    plain: { clientWrites: 1, storeCalls: 2, redisScripts: 2, redisCommands: 24 },
    stream: { storeCalls: 2, redisScripts: 2, redisCommands: 24 },
  },
};
/** A stream's client writes beyond one per provider read (the end of a stream that came whole in one read). */
const STREAM_EXTRA_WRITES = 1;

const WARM_UP = 20;
const WINDOW = 50;

interface Figures { clientWrites: number; providerReads: number; storeCalls: number; transactions: number; redisScripts: number; redisCommands: number }

async function measure(gw: CostGateway, clients: Clients, request: Buffer, redis: RedisServer | null): Promise<{ report: WindowReport; figures: Figures }> {
  await clients.run(request, WARM_UP);
  // Redis is asked while the window is open: the store's intervals (ping, heartbeat, sweep) wait.
  await gw.begin();
  const before = redis === null ? null : await commands(redis);
  await clients.run(request, WINDOW);
  const after = redis === null ? null : await commands(redis);
  const report = await gw.end();
  const c = report.counts;
  const storeCalls = Object.values(c.store).reduce((a, b) => a + b, 0);
  const per = (n: number): number => n / WINDOW;
  return {
    report,
    figures: {
      clientWrites: per(c.clientWrites), providerReads: per(c.providerReads), storeCalls: per(storeCalls), transactions: per(c.transactions),
      redisScripts: before === null ? 0 : per(after!.scripts - before.scripts), redisCommands: before === null ? 0 : per(after!.all - before.all),
    },
  };
}

/** Commands the Redis server has run (its INFO calls left out), and of them the scripts (EVALSHA, EVAL). */
async function commands(redis: RedisServer): Promise<{ all: number; scripts: number }> {
  const ran = { all: 0, scripts: 0 };
  for (const m of (await redis.cli('info', 'commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) {
    if (m[1] === 'info') continue;
    ran.all += Number(m[2]);
    if (m[1] === 'evalsha' || m[1] === 'eval') ran.scripts += Number(m[2]);
  }
  return ran;
}

for (const backend of ['lmdb', 'redis'] as const) {
  t.test(`${backend}: writes, reads, store calls and commits per call stay within budget`, async (t) => {
    const redis = backend === 'redis' ? await startRedis(t) : null;
    const gw = await startCostGateway(t, { flags: [], ...(redis === null ? {} : { redis }) });
    const clients = await openClients(t, gw.url, 1);
    const kinds = [
      ['plain', 'plain', chatCall(gw.key, false)],
      ['stream', 'stream', chatCall(gw.key, true)],
      // The mock's 20 events written one by one, back to back: several reads, as many as the timing makes.
      ['stream of 20 separate writes', 'stream', chatCall(gw.key, true, { chunks: 20, separateWrites: true })],
      // Each event its own chunk of the chunked encoding, all in one tick: one read, several chunks.
      ['stream of 20 events in one read', 'stream', chatCall(gw.key, true, { chunks: 20, writePerEvent: true })],
    ] as const;
    for (const [kind, budgetKind, request] of kinds) {
      const { report, figures } = await measure(gw, clients, request, redis);
      const budget = COUNTS[backend][budgetKind];
      const shown = Object.fromEntries(Object.keys(COUNTS[backend][budgetKind]).map((name) => [name, figures[name as keyof Figures]]));
      t.comment(`counts: ${backend} ${kind}: ${JSON.stringify(shown)}; client writes ${figures.clientWrites}, provider reads ${figures.providerReads}; store calls ${JSON.stringify(report.counts.store)}`);
      // Every figure budgeted is at least one per call: a 0 would mean the counting saw nothing.
      for (const [name, most] of Object.entries(budget)) {
        t.ok(figures[name as keyof Figures] >= 1, `${kind}: ${name} counted`);
        t.ok(figures[name as keyof Figures] <= most, `${kind}: ${figures[name as keyof Figures]} ${name} per call, budget ${most}`);
      }
      if (budgetKind === 'plain') continue;
      const { clientWrites, providerReads } = report.counts;
      t.ok(clientWrites >= WINDOW && providerReads >= WINDOW, `${kind}: client writes and provider reads counted`);
      t.ok(clientWrites <= providerReads + STREAM_EXTRA_WRITES * WINDOW, `${kind}: ${clientWrites} client writes for ${providerReads} provider reads in ${WINDOW} calls (one per read, plus ${STREAM_EXTRA_WRITES} per call)`);
    }
  });
}
