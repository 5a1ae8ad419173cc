/**
 * The LMDB store writes its commits straight into the memory-mapped data file, which the
 * filesystem backs page by page; on a full filesystem such a write would stop the process. So it
 * keeps a floor of free space (store/lmdb/free-space.ts): below it a serving process admits no new
 * call (503 `store_unavailable`, nothing forwarded, /readyz 503), the calls already in flight
 * finish and are billed, and an issuer change is refused saying why (the admin API: 503
 * `store_unavailable`); once space is back, calls are admitted again. In process, on a real data
 * directory: the filesystem's free space is what the test says it is (StoreOptions.freeBytes),
 * and the store looks at it every second as it serves.
 */
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { displayPrefix, generateKey, hashKey } from '../src/auth/keys.js';
import { createAdminServer } from '../src/admin/listener.js';
import { compileConfig } from '../src/config/load.js';
import { FREE_SPACE_FLOOR } from '../src/store/lmdb/free-space.js';
import { Store } from '../src/store/lmdb/store.js';
import { startMockProvider } from './fixtures/mock-provider.js';
import { defaultConfig, gatewayInProcess } from './helpers/harness.js';

const GiB = 1024 * 1024 * 1024;

t.test('below the free-space floor no new call is admitted, the calls in flight are billed, and calls resume once space is back', async (t) => {
  const mock = await startMockProvider();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-free-space-'));
  let free = GiB;
  const store = Store.open(join(dir, 'data'), { fsync: 'interval', fsyncIntervalMs: 1000, freeBytes: () => free });
  const secret = generateKey();
  const key = await store.createKey({ hash: hashKey(secret), prefix: displayPrefix(secret), name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1e9 });
  const { port } = await gatewayInProcess(t, store, mock, dir);
  const base = `http://127.0.0.1:${port}`;
  const config = compileConfig(defaultConfig(mock.url), null);
  const admin = createAdminServer({
    store, config, env: {}, token: 'admin-token', metrics: { text: async () => '', contentType: 'text/plain' },
    readiness: { draining: () => false, storeAnswers: () => store.answers(), notInRotation: () => [] },
  });
  await new Promise<void>((resolve) => admin.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => admin.close(() => resolve())));
  const adminBase = `http://127.0.0.1:${(admin.address() as AddressInfo).port}`;
  const call = (content: string, inputTokens = 11, hold: string | null = null): Promise<Response> =>
    fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], mock: { inputTokens, outputTokens: 7, ...(hold === null ? {} : { hold }) } }),
    });
  /**
   * /readyz's answer once it is `status`, or its last after 10 s (the store looks at the free
   * space every second): the status is asserted by the caller.
   */
  const readyzBecomes = async (status: number): Promise<{ status: number; body: unknown }> => {
    for (let tries = 0; ; tries++) {
      const res = await fetch(`${base}/readyz`);
      const body: unknown = await res.json();
      if (res.status === status || tries === 200) return { status: res.status, body };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  t.equal((await call('first')).status, 200, 'with space, a call is answered');

  // A call in flight when the space runs low: held by the provider until the test lets it go.
  const inFlight = call('in flight', 13, 'in-flight');
  await mock.waitHeld('in-flight');

  free = FREE_SPACE_FLOOR - 1;
  t.match(await readyzBecomes(503), { status: 503, body: { status: 'store_unavailable' } }, '/readyz says the store cannot take calls');
  const forwardedBefore = mock.requests.length;
  const refused = await call('refused');
  t.equal(refused.status, 503, 'a new call is refused 503');
  t.match(await refused.json(), { error: { code: 'store_unavailable' } }, 'as store_unavailable');
  t.equal(mock.requests.length, forwardedBefore, 'and nothing of it reached the provider');
  const adminRefused = await fetch(`${adminBase}/admin/v1/keys`, { method: 'POST', headers: { authorization: 'Bearer admin-token', 'content-type': 'application/json' }, body: JSON.stringify({ mode: 'credit', balance: '1' }) });
  t.equal(adminRefused.status, 503, 'a key created through the admin API is refused 503');
  t.match(await adminRefused.json(), { error: { code: 'store_unavailable', message: /has 63\.9 MiB free, under the 64\.0 MiB the store keeps free/ } }, 'as store_unavailable, saying what is free');
  await t.rejects(
    store.createKey({ hash: hashKey(generateKey()), prefix: 'gw_live_x', name: null, mode: 'credit', models: null, rpm: null, concurrency: null, expiresAt: null, amount: 1 }),
    { message: /has 63\.9 MiB free, under the 64\.0 MiB the store keeps free; free some space/ },
    'an issuer change is refused, saying what is free and what is kept',
  );

  mock.release('in-flight');
  const finished = await inFlight;
  t.equal(finished.status, 200, 'the call in flight finished');
  await finished.text();
  const records = await store.usageOf(key, 10);
  t.match(records.find((r) => r.inputTokens === 13), { status: 200, outputTokens: 7, error: null }, 'and was billed its usage');
  t.equal(records.filter((r) => r.status === 200 && (r.costNano ?? 0) > 0).length, 2, 'both answered calls are billed');
  t.ok(records.every((r) => r.status === 200 || r.costNano === 0), 'the refused call charged nothing');

  free = GiB;
  t.match(await readyzBecomes(200), { status: 200 }, '/readyz is ready again');
  t.equal((await call('after')).status, 200, 'once space is back, calls are admitted again');
});
