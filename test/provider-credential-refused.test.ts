/**
 * A provider's 401 refuses the gateway's own credential, never the client's key: the client
 * gets the gateway's 502 `upstream_unavailable` with `x-should-retry: false` (both SDKs raise an
 * InternalServerError and do not retry), nothing of the provider's answer, nothing billed; the
 * usage record is an `upstream_unavailable` error at zero cost, the access log's code the
 * gateway's. The credential leaves the rotation: with no other credential, the provider's next
 * calls are answered so without a send (until its probe, a minute on: pool-rotation.test.ts
 * drives that clock). The operator sees it at once: one stderr line naming the credential when
 * it goes out, and /readyz listing it (still 200). A provider's 403 passes through unchanged and
 * changes nothing.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t, { type Test } from 'tap';
import { post, PROVIDER_ENV, readReply, startGateway, usageOf, type Harness } from './helpers/harness.js';

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hello' }] };
const messages = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }] };

/** Anything of a provider credential or of a provider's 401 that must not reach the client. */
const LEAKS = [PROVIDER_ENV.OPENAI_API_KEY.slice(0, 7), PROVIDER_ENV.OPENAI_API_KEY.slice(-4), PROVIDER_ENV.ANTHROPIC_API_KEY.slice(-4), '****', 'Incorrect API key', 'invalid x-api-key', 'authentication_error'];

function leaks(text: string): string[] {
  return LEAKS.filter((s) => text.includes(s));
}

/** `client.call()`'s rejection, and how many requests the provider got meanwhile (retries included). */
async function refusedCall(gw: Harness, call: () => Promise<unknown>): Promise<{ err: any; providerRequests: number }> {
  const before = gw.mock.requests.length;
  const err = await call().then(() => undefined, (e: unknown) => e);
  return { err, providerRequests: gw.mock.requests.length - before };
}

function refusalLines(gw: Harness, provider: string): any[] {
  return gw.serverLog().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => l.event === 'provider_credential_refused' && l.provider === provider);
}

function accessLines(gw: Harness): any[] {
  return gw.serverOut().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

async function waitForAccessLine(gw: Harness, requestId: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const line = accessLines(gw).find((l) => l.requestId === requestId);
    if (line !== undefined) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

/** `sent`: how many requests the provider got for the call (1 for the first; 0 while the credential is out of rotation). */
function checkOpenAI(t: Test, { err, providerRequests }: { err: any; providerRequests: number }, what: string, sent = 1): void {
  t.ok(err instanceof OpenAI.InternalServerError, `${what}: InternalServerError (got ${err?.constructor?.name}: ${err?.message})`);
  t.notOk(err instanceof OpenAI.AuthenticationError, `${what}: not an AuthenticationError`);
  t.equal(err?.status, 502);
  t.equal(err?.code, 'upstream_unavailable');
  t.equal(err?.type, 'api_error');
  t.equal(err?.headers?.get('x-should-retry'), 'false');
  t.match(err?.error?.message, /^The model provider could not be reached/, `${what}: the gateway's message`);
  t.same(leaks(`${err?.message} ${JSON.stringify(err?.error)}`), [], `${what}: nothing of the credential or of the provider's 401`);
  t.equal(providerRequests, sent, `${what}: sent ${sent} time(s), not retried (the SDK retries a 502 otherwise)`);
}

function checkAnthropic(t: Test, { err, providerRequests }: { err: any; providerRequests: number }, what: string, sent = 1): void {
  t.ok(err instanceof Anthropic.InternalServerError, `${what}: InternalServerError (got ${err?.constructor?.name}: ${err?.message})`);
  t.notOk(err instanceof Anthropic.AuthenticationError, `${what}: not an AuthenticationError`);
  t.equal(err?.status, 502);
  t.equal(err?.error?.error?.code, 'upstream_unavailable');
  t.equal(err?.headers?.get('x-should-retry'), 'false');
  t.match(err?.error?.error?.message, /^The model provider could not be reached/, `${what}: the gateway's message`);
  t.same(leaks(`${err?.message} ${JSON.stringify(err?.error)}`), [], `${what}: nothing of the credential or of the provider's 401`);
  t.equal(providerRequests, sent, `${what}: sent ${sent} time(s), not retried`);
}

t.test('inference calls, plain and streamed, through both SDKs (default retries)', async (t) => {
  const gw = await startGateway(t);
  const credit = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const token = await gw.createKey(['--mode', 'token', '--budget', '100000']);
  gw.mock.refuseCredential(PROVIDER_ENV.OPENAI_API_KEY);
  gw.mock.refuseCredential(PROVIDER_ENV.ANTHROPIC_API_KEY);
  const openai = new OpenAI({ apiKey: credit.key, baseURL: `${gw.base}/v1` });
  const anthropic = new Anthropic({ apiKey: token.key, baseURL: `${gw.base}/token` });

  // The first call of each provider is sent and refused; its one credential is then out of
  // rotation, and the calls after it are answered the same without a send.
  checkOpenAI(t, await refusedCall(gw, () => openai.chat.completions.create(chat)), 'chat, plain');
  checkOpenAI(t, await refusedCall(gw, () => openai.chat.completions.create({ ...chat, stream: true })), 'chat, streamed', 0);
  checkOpenAI(t, await refusedCall(gw, () => openai.responses.create({ model: 'gpt-4o-mini', input: 'hello' })), 'responses, plain', 0);
  checkAnthropic(t, await refusedCall(gw, () => anthropic.messages.create(messages)), 'messages, plain');
  checkAnthropic(t, await refusedCall(gw, () => anthropic.messages.create({ ...messages, stream: true })), 'messages, streamed', 0);

  const cu = await usageOf(gw.base, credit.key);
  t.equal(cu.key.balanceNanoUsd, 1_000_000_000, 'nothing billed');
  t.equal(cu.requests.length, 3);
  for (const r of cu.requests) t.match(r, { status: 502, error: 'upstream_unavailable', costNanoUsd: 0, tokensCharged: 0, estimated: false }, 'recorded as the client saw it, at zero cost');
  t.same(cu.requests.map((r: any) => r.stream).sort(), [false, false, true]);
  t.same(cu.requests.map((r: any) => r.attempts).sort(), [0, 0, 1], 'one send, then none');
  t.notOk(cu.requests.some((r: any) => 'credential' in r), 'the credential is the operator\'s: not in the tenant\'s usage');
  const tu = await usageOf(gw.base, token.key);
  t.equal(tu.key.usedTokens, 0, 'no token charged');
  for (const r of tu.requests) t.match(r, { status: 502, error: 'upstream_unavailable', tokensCharged: 0 });
});

t.test('raw HTTP: the gateway\'s envelope and headers, none of the provider\'s; the access log\'s code', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  gw.mock.refuseCredential(PROVIDER_ENV.ANTHROPIC_API_KEY);
  const r = await readReply(await fetch(`${gw.base}/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(messages),
  }));
  t.equal(r.status, 502);
  t.same(r.json, { error: { message: 'The model provider could not be reached. Nothing was billed.', type: 'api_error', code: 'upstream_unavailable', param: null } });
  t.equal(r.headers.get('x-should-retry'), 'false');
  t.equal(r.headers.get('content-length'), String(Buffer.byteLength(r.text)));
  t.equal(r.headers.get('request-id'), null, 'no header of the provider\'s answer');
  const requestId = r.headers.get('x-request-id')!;
  t.notMatch(requestId, /^req_mock_/, 'the gateway\'s request id, not the provider\'s');
  t.match(await waitForAccessLine(gw, requestId), { status: 502, code: 'upstream_unavailable', endpoint: 'messages', costUsd: '0.000000' }, 'the access log names the gateway\'s code');
});

t.test('GET /models of both SDKs: 502, not retried', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  gw.mock.refuseCredential(PROVIDER_ENV.OPENAI_API_KEY);
  gw.mock.refuseCredential(PROVIDER_ENV.ANTHROPIC_API_KEY);
  checkOpenAI(t, await refusedCall(gw, () => new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1` }).models.list()), 'openai models.list');
  checkAnthropic(t, await refusedCall(gw, () => new Anthropic({ apiKey: key, baseURL: gw.base }).models.list()), 'anthropic models.list');
  t.equal((await usageOf(gw.base, key)).requests.length, 0, 'not listed');
});

t.test('the operator: one stderr line naming the credential as it goes out, /readyz lists it (200)', async (t) => {
  const gw = await startGateway(t, { admin: true });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 });
  t.same(await (await fetch(`${gw.base}/readyz`)).json(), { status: 'ready' }, 'nothing listed before');

  gw.mock.refuseCredential(PROVIDER_ENV.OPENAI_API_KEY);
  await openai.chat.completions.create(chat).catch(() => undefined);
  const lines = refusalLines(gw, 'openai');
  t.equal(lines.length, 1, 'one line at the first refusal');
  t.match(lines[0], { level: 'error', event: 'provider_credential_refused', provider: 'openai', credential: 'default' });
  t.same(leaks(gw.serverLog()), [], 'the line carries nothing of the credential');
  // More calls, within the minute: the credential is out, nothing is sent, no second line.
  const before = gw.mock.requests.length;
  await openai.chat.completions.create(chat).catch(() => undefined);
  await openai.models.list().catch(() => undefined);
  t.equal(gw.mock.requests.length, before, 'nothing sent to a credential out of rotation');
  t.equal(refusalLines(gw, 'openai').length, 1, 'no second line');

  const out = { provider: 'openai', credential: 'default', reason: 'unauthenticated', until: null };
  for (const base of [gw.base, gw.admin!]) {
    const ready = await fetch(`${base}/readyz`);
    t.equal(ready.status, 200, 'still ready: the process serves');
    const body = await ready.json() as { status: string; notInRotation: any[] };
    t.match(body, { status: 'ready', notInRotation: [out] }, `/readyz lists the credential and why (${base === gw.base ? 'public' : 'admin'} listener)`);
    t.equal(body.notInRotation.length, 1);
    t.ok(Number.isFinite(Date.parse(body.notInRotation[0].since)), 'since when');
  }

  // Another provider's refusal is a line of its own at once.
  gw.mock.refuseCredential(PROVIDER_ENV.ANTHROPIC_API_KEY);
  await new Anthropic({ apiKey: key, baseURL: gw.base, maxRetries: 0 }).messages.create(messages).catch(() => undefined);
  t.equal(refusalLines(gw, 'anthropic').length, 1);
  const both = ((await (await fetch(`${gw.admin}/readyz`)).json()) as { notInRotation: any[] }).notInRotation;
  t.same(both.map((e) => `${e.provider}/${e.credential}/${e.reason}`), ['anthropic/default/unauthenticated', 'openai/default/unauthenticated']);
});

t.test('with --workers: every listener\'s /readyz names what any worker saw', async (t) => {
  const gw = await startGateway(t, { admin: true, workers: 2 });
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  gw.mock.refuseCredential(PROVIDER_ENV.OPENAI_API_KEY);
  await new OpenAI({ apiKey: key, baseURL: `${gw.base}/v1`, maxRetries: 0 }).chat.completions.create(chat).catch(() => undefined);
  // The worker that got the call tells the primary, which tells every worker: waited for, not timed.
  const named = async (base: string): Promise<boolean> => {
    for (let i = 0; i < 250; i++) {
      const body = (await (await fetch(`${base}/readyz`, { headers: { connection: 'close' } })).json()) as { notInRotation?: Array<{ provider: string }> };
      if (body.notInRotation?.some((e) => e.provider === 'openai')) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return false;
  };
  t.ok(await named(gw.admin!), 'the primary\'s admin listener');
  // A new connection each time: the cluster hands connections to its workers in turn.
  t.ok(await named(gw.base) && await named(gw.base), 'the public listener, once the primary has told the workers');
  for (let i = 0; i < 6; i++) {
    const body = await (await fetch(`${gw.base}/readyz`, { headers: { connection: 'close' } })).json() as { notInRotation: unknown[] };
    t.match(body, { status: 'ready', notInRotation: [{ provider: 'openai', credential: 'default', reason: 'unauthenticated', until: null }] }, 'the public listener, whichever worker answers');
    t.equal(body.notInRotation.length, 1);
  }
});

t.test('a provider\'s 403 passes through unchanged', async (t) => {
  const gw = await startGateway(t);
  const { key } = await gw.createKey(['--mode', 'credit', '--balance', '1']);
  const r = await readReply(await fetch(`${gw.base}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...chat, mock: { status: 403 } }),
  }));
  t.equal(r.status, 403);
  t.same(r.json, { error: { message: 'mock error', type: 'invalid_request_error', param: null, code: null } }, 'the provider\'s own body');
  t.equal(r.headers.get('x-should-retry'), null);
  const err = await new Anthropic({ apiKey: key, baseURL: gw.base, maxRetries: 0 }).messages.create({ ...messages, mock: { status: 403 } } as any).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof Anthropic.PermissionDeniedError, 'the SDK sees the provider\'s 403');
  t.match((err as any).error, { type: 'error', error: { type: 'permission_error', message: 'mock error' } });
  t.match((await usageOf(gw.base, key)).requests[0], { status: 403, error: 'upstream_status_403', costNanoUsd: 0 });
  t.same(await (await fetch(`${gw.base}/readyz`)).json(), { status: 'ready' }, 'a 403 says nothing about the credential');
  t.equal((await post(`${gw.base}/v1/chat/completions`, key, chat)).status, 200, 'which stays in rotation');
});
