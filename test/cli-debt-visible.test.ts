/**
 * An overdrawn key's debt is visible in `tollgate keys list/show`, not only in --json: a token
 * key that used 5,000 tokens on a 10-token budget shows 4,990 over budget (not a bare `0/10`),
 * a credit key below zero shows what it owes, and `keys topup` says how much of the top-up
 * went to the debt.
 */
import t from 'tap';
import { post, startGateway, usageOf } from './helpers/harness.js';

const chat = (mock: Record<string, number>): Record<string, unknown> => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], mock });

t.test('token key: overdraft in list and show, and where a top-up went', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'token', '--budget', '10']);
  const res = await post(`${gw.base}/token/v1/chat/completions`, k.key, chat({ inputTokens: 4000, outputTokens: 1000 }));
  t.equal(res.status, 200);

  const list = await gw.cli(['keys', 'list']);
  t.equal(list.code, 0);
  const row = list.stdout.split('\n').find((l) => l.includes(k.id))!;
  t.match(row, /0\/10 tokens \(4990 over budget\)/, `list row: ${row}`);
  t.match(row, /token_budget_exhausted/);
  const show = await gw.cli(['keys', 'show', k.id]);
  t.match(show.stdout, /budget\s+0\/10 tokens \(4990 over budget\)/);
  const json = JSON.parse((await gw.cli(['keys', 'show', k.id, '--json'])).stdout);
  t.match(json, { budgetTokens: 10, usedTokens: 5000, remainingTokens: 0, overdraftTokens: 4990 });

  const first = await gw.cli(['keys', 'topup', k.id, '--tokens', '1000']);
  t.equal(first.code, 0);
  t.match(first.stdout, /now has 0\/1010 tokens \(3990 over budget\); all of the top-up went to the key's debt, which is still 3990 tokens\n$/);
  t.equal((await post(`${gw.base}/token/v1/chat/completions`, k.key, chat({}))).status, 402, 'still refused');

  const second = await gw.cli(['keys', 'topup', k.id, '--tokens', '5000']);
  t.match(second.stdout, /now has 1010\/6010 tokens; 3990 tokens of the top-up paid the key's debt\n$/);
  t.equal((await post(`${gw.base}/token/v1/chat/completions`, k.key, chat({}))).status, 200, 'works again');

  const third = await gw.cli(['keys', 'topup', k.id, '--tokens', '5']);
  t.notMatch(third.stdout, /debt/, 'a top-up of a key without debt says nothing about debt');
});

t.test('credit key: a negative balance says what the key owes', async (t) => {
  const gw = await startGateway(t);
  const k = await gw.createKey(['--mode', 'credit', '--balance', '0.0001']);
  // 1000 × 150 + 1000 × 600 nUSD = $0.00075 on a $0.0001 balance
  const res = await post(`${gw.base}/v1/chat/completions`, k.key, chat({ inputTokens: 1000, outputTokens: 1000 }));
  t.equal(res.status, 200);
  t.equal((await usageOf(gw.base, k.key)).key.balanceNanoUsd, 100_000 - 750_000);

  const list = await gw.cli(['keys', 'list']);
  t.match(list.stdout.split('\n').find((l) => l.includes(k.id)), /-\$0\.000650 \(owes \$0\.000650\)/);
  const show = await gw.cli(['keys', 'show', k.prefix]);
  t.match(show.stdout, /balance\s+-\$0\.000650 \(owes \$0\.000650\)/);

  const topup = await gw.cli(['keys', 'topup', k.id, '--usd', '1']);
  t.match(topup.stdout, /now has \$0\.999350; \$0\.000650 of the top-up paid the key's debt\n$/);
});
