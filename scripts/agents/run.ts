/**
 * `npm run agents`: Claude Code and Codex CLI, at pinned versions, run headless with their
 * defaults through the real `tollgate serve` against a scripted provider; then the Vercel AI SDK
 * and LangChain.js, one plain and one streamed call on each API. Everything is checked: the
 * agents' proof file, that every call reached the provider with tollgate's credential only, and
 * that every call is billed exactly what the provider reported at the listed price. Prints a
 * report; exits 1 on any failure. Outside `npm test`: it downloads the agents (once, into
 * .cache/agents).
 *
 *   npm run agents [-- --only claude,codex,frameworks] [-- --surfaces credit,token] [-- --keep]
 *
 * Prices: tollgate's built-in catalogue, which serves the agents' default models; the bills are
 * checked against the prices `tollgate models list --json` shows.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatUsd } from '../../src/money.js';
import { allRecords, PROVIDER_ENV, startGateway, type Harness } from '../../test/helpers/harness.js';
import { expectedBill, findModel, type ListedModel } from './bill.js';
import { redact, runClaudeCode, runCodex, type AgentRun } from './coding-agents.js';
import { runFrameworks, type FrameworkCall } from './frameworks.js';
import { installPinned, PINNED } from './install.js';
import { startRecorder, type Recorder, type WireCall } from './recorder.js';
import { FINAL_TEXT, PROOF_FILE, PROOF_TEXT, REPLY_TEXT, startScriptedProvider, type ProviderCall, type ScriptedProvider } from './scripted-provider.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CACHE = join(ROOT, '.cache', 'agents');
/** The models the frameworks are asked for (agents choose their own). */
const FRAMEWORK_MODELS = { openai: 'gpt-6.1-sol', anthropic: 'claude-sonnet-5-5' };
const PROMPT = `Create the file ${PROOF_FILE} holding the word ${PROOF_TEXT}, using the shell.`;

type Surface = 'credit' | 'token';
type Part = 'claude' | 'codex' | 'frameworks';

function options(): { parts: Part[]; surfaces: Surface[]; keep: boolean } {
  const argv = process.argv.slice(2);
  const value = (flag: string): string | undefined => {
    const at = argv.indexOf(flag);
    return at === -1 ? undefined : argv[at + 1];
  };
  const parts = (value('--only') ?? 'claude,codex,frameworks').split(',') as Part[];
  const surfaces = (value('--surfaces') ?? 'credit,token').split(',') as Surface[];
  for (const p of parts) if (!['claude', 'codex', 'frameworks'].includes(p)) throw new Error(`--only: unknown part ${p}`);
  for (const s of surfaces) if (s !== 'credit' && s !== 'token') throw new Error(`--surfaces: unknown surface ${s}`);
  return { parts, surfaces, keep: argv.includes('--keep') };
}

/** One scenario's findings: failures fail the run; notes are reported. */
interface Section {
  title: string;
  surface: Surface;
  keyPrefix: string;
  failures: string[];
  notes: string[];
  lines: string[];
  agent?: AgentRun;
  frameworks?: FrameworkCall[];
  providerCalls: ProviderCall[];
  wireCalls: WireCall[];
  records: any[];
}

const out: string[] = [];
function say(line = ''): void {
  out.push(line);
  process.stdout.write(`${line}\n`);
}

function clip(text: string, max = 160): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Every tool a call offers, by name and type, namespaces flattened (Responses' additional_tools included). */
function toolsOffered(body: any): { where: string; type: string; name: string }[] {
  const found: { where: string; type: string; name: string }[] = [];
  const walk = (list: unknown, where: string, prefix: string): void => {
    if (!Array.isArray(list)) return;
    for (const tool of list) {
      if (tool?.type === 'namespace') walk(tool.tools, where, `${tool.name}.`);
      // Anthropic's client tools carry no type (or `custom`); OpenAI's carry `function` or `custom`.
      else found.push({ where, type: String(tool?.type ?? 'client'), name: `${prefix}${tool?.name ?? tool?.type}` });
    }
  };
  walk(body?.tools, 'tools', '');
  for (const item of Array.isArray(body?.input) ? body.input : []) if (item?.type === 'additional_tools') walk(item.tools, 'additional_tools', '');
  return found;
}

const BULKY = new Set(['model', 'stream', 'messages', 'input', 'system', 'tools', 'instructions', 'client_metadata', 'metadata']);

/** What a provider call asked for, for the report: path, model, options, tools, items sent back. */
function describe(call: ProviderCall): string[] {
  const lines = [`#${call.seq} ${call.method} ${call.url}  model=${call.model ?? '-'} stream=${call.stream} → ${call.turn}${call.toolCall ? ` ${call.toolCall.name} ${clip(JSON.stringify(call.toolCall.arguments), 120)}` : ''}`];
  const headers = ['anthropic-beta', 'anthropic-version', 'openai-beta'].filter((h) => call.headers[h] !== undefined).map((h) => `${h}: ${call.headers[h]}`);
  if (headers.length > 0) lines.push(`    headers: ${headers.join('; ')}`);
  const body = call.body;
  if (body === null || typeof body !== 'object') return lines;
  const opts = Object.entries(body).filter(([k]) => !BULKY.has(k)).map(([k, v]) => `${k}=${clip(JSON.stringify(v), 120)}`);
  if (body.metadata !== undefined) opts.push(`metadata: ${Object.keys(body.metadata).join(', ')}`);
  if (body.client_metadata !== undefined) opts.push(`client_metadata: ${Object.keys(body.client_metadata).join(', ')}`);
  if (opts.length > 0) lines.push(`    options: ${opts.join('  ')}`);
  const tools = toolsOffered(body);
  if (tools.length > 0) {
    const byWhere = [...new Set(tools.map((t) => t.where))].map((w) => `${w}: ${tools.filter((t) => t.where === w).map((t) => (t.type === 'function' || t.type === 'client' ? t.name : `${t.name} (${t.type})`)).join(', ')}`);
    lines.push(`    tools offered (${tools.length}) ${byWhere.join(' | ')}`);
  }
  const web = tools.filter((t) => t.type.startsWith('web_search'));
  lines.push(`    web search offered: ${web.length === 0 ? 'no' : web.map((t) => t.type).join(', ')}`);
  if (Array.isArray(body.input)) {
    const items = body.input.map((i: any) => `${i?.type ?? 'message'}${i?.id !== undefined ? '(id)' : ''}${i?.encrypted_content !== undefined ? '(encrypted_content)' : ''}`);
    lines.push(`    input items: ${items.join(', ')}`);
  }
  if (Array.isArray(body.messages)) {
    const roles = body.messages.map((m: any) => `${m.role}${Array.isArray(m.content) ? `[${m.content.map((b: any) => b.type).join('+')}]` : ''}`);
    lines.push(`    messages: ${roles.join(', ')}`);
  }
  const breakpoints = (call.rawBody.match(/"cache_control"/g) ?? []).length;
  if (breakpoints > 0) lines.push(`    cache_control breakpoints: ${breakpoints} (ttl 1h: ${(call.rawBody.match(/"ttl"\s*:\s*"1h"/g) ?? []).length})`);
  return lines;
}

const INFERENCE = new Set(['messages', 'responses', 'chat']);

/**
 * The checks shared by every scenario: each provider call came through tollgate with its
 * credential and nothing of the client's key; each inference call has one usage record, billed
 * exactly; no record without a call; tollgate refused no inference call.
 */
function checkCalls(section: Section, key: string, models: ListedModel[]): void {
  const { failures, notes, lines } = section;
  for (const call of section.providerCalls) {
    lines.push(...describe(call));
    const expected = call.api === 'messages' || call.api === 'count_tokens' || call.headers['anthropic-version'] !== undefined
      ? PROVIDER_ENV.ANTHROPIC_API_KEY : PROVIDER_ENV.OPENAI_API_KEY;
    if (call.credential !== expected) failures.push(`#${call.seq}: the provider got credential ${call.credential === null ? 'none' : redact(call.credential)}, not tollgate's`);
    const seen = JSON.stringify(call.headers) + call.rawBody;
    if (seen.includes(key) || seen.includes('gw_live_')) failures.push(`#${call.seq}: the client's key (or a gw_live_ key) reached the provider`);
    if (!INFERENCE.has(call.api)) continue;
    if (call.status !== 200 || call.usage === null) {
      failures.push(`#${call.seq}: the scripted provider could not answer this call (status ${call.status})`);
      continue;
    }
    const records = section.records.filter((r) => r.requestId === call.requestId);
    if (records.length !== 1) {
      failures.push(`#${call.seq}: ${records.length} usage records for ${call.requestId}, expected 1`);
      continue;
    }
    const record = records[0];
    const model = findModel(models, call.model ?? '');
    if (model === undefined) {
      failures.push(`#${call.seq}: model ${call.model} is not in the catalogue tollgate lists`);
      continue;
    }
    let bill;
    try {
      bill = expectedBill(call.usage, model.price);
    } catch (err) {
      failures.push(`#${call.seq}: ${(err as Error).message}`);
      continue;
    }
    const tokens = bill.tokens;
    const got = { inputTokens: record.inputTokens, outputTokens: record.outputTokens, cachedInputTokens: record.cachedInputTokens, cacheWriteTokens: record.cacheWriteTokens, cacheWrite1hTokens: record.cacheWrite1hTokens, reasoningTokens: record.reasoningTokens };
    const amount = section.surface === 'credit'
      ? `billed $${record.costUsd} (${record.costNanoUsd} nUSD), expected $${formatUsd(bill.costNanoUsd)} (${bill.costNanoUsd} nUSD) at ${model.id}'s ${bill.rates} rates`
      : `charged ${record.tokensCharged} tokens, expected ${bill.tokensCharged}`;
    const right = record.status === 200 && record.model === call.model && record.estimated === false && record.error === null
      && JSON.stringify(got) === JSON.stringify(tokens)
      && (section.surface === 'credit' ? record.costNanoUsd === bill.costNanoUsd : record.tokensCharged === bill.tokensCharged);
    lines.push(`    usage reported: ${JSON.stringify(call.usage)}`);
    lines.push(`    ${right ? 'OK' : 'WRONG'}: ${amount}`);
    if (!right) {
      failures.push(`#${call.seq} ${call.model}: ${amount}; record ${JSON.stringify({ status: record.status, model: record.model, estimated: record.estimated, estimateReason: record.estimateReason, error: record.error, worstCase: record.worstCase, ...got })}, expected tokens ${JSON.stringify(tokens)}`);
    }
  }
  const requestIds = new Set(section.providerCalls.map((c) => c.requestId));
  for (const record of section.records) {
    if (!requestIds.has(record.requestId)) failures.push(`usage record ${record.requestId} (${record.endpoint} ${record.model} ${record.status} ${record.error}) matches no provider call`);
  }
  for (const wire of section.wireCalls) {
    if (wire.status < 400 && wire.status !== 0) continue;
    const path = wire.url.split('?')[0]!;
    const inference = wire.method === 'POST' && /\/(messages|responses|chat\/completions)$/.test(path);
    const text = `tollgate answered ${wire.status}${wire.code === null ? '' : ` ${wire.code}`} to ${wire.method} ${wire.url}${wire.body === '' ? '' : ` (model ${clip(safeModel(wire.body), 40)})`}`;
    if (inference) failures.push(text);
    else notes.push(`${text} — not forwarded`);
  }
}

/** The model a request body names, or '-'. */
function safeModel(body: string): string {
  try {
    const model = JSON.parse(body)?.model;
    return typeof model === 'string' ? model : '-';
  } catch {
    return '-';
  }
}

function newSection(title: string, surface: Surface, keyPrefix: string): Section {
  return { title, surface, keyPrefix, failures: [], notes: [], lines: [], providerCalls: [], wireCalls: [], records: [] };
}

/** Runs `body` and records, into `section`, the calls made meanwhile and the key's usage records. */
async function observe<T>(section: Section, provider: ScriptedProvider, recorder: Recorder, harness: Harness, key: string, body: () => Promise<T>): Promise<T> {
  const providerFrom = provider.calls.length;
  const wireFrom = recorder.calls.length;
  const result = await body();
  section.providerCalls = provider.calls.slice(providerFrom);
  section.wireCalls = recorder.calls.slice(wireFrom);
  section.records = (await allRecords(harness.base, key, 500)).records;
  return result;
}

function checkAgent(section: Section, run: AgentRun, expectProof: boolean): void {
  section.agent = run;
  const { failures, notes, lines } = section;
  lines.unshift(
    `command: ${run.command}`,
    `environment: ${Object.entries(run.env).filter(([k]) => k !== 'PATH').map(([k, v]) => `${k}=${v}`).join(' ')}`,
    ...Object.entries(run.files).flatMap(([path, text]) => [`${path}:`, ...text.trimEnd().split('\n').map((l) => `    ${l}`)]),
    `exit code ${run.exitCode}${run.timedOut ? ' (timed out, killed)' : ''} after ${(run.durationMs / 1000).toFixed(1)} s; last message: ${JSON.stringify(run.finalText)}`,
    ...run.notes.map((n) => `agent: ${n}`),
    expectProof ? `proof file ${PROOF_FILE}: ${run.proof === null ? 'MISSING' : JSON.stringify(run.proof)}` : '',
    `calls the provider received (${section.providerCalls.length}):`,
  );
  if (run.exitCode !== 0) failures.push(`${run.agent} exited with ${run.exitCode}${run.timedOut ? ' (timed out)' : ''}: ${clip(run.stderr.trim(), 600)}`);
  if (expectProof && run.proof?.trim() !== PROOF_TEXT) failures.push(`proof file: ${run.proof === null ? 'missing' : JSON.stringify(run.proof)}, expected ${JSON.stringify(`${PROOF_TEXT}\n`)}`);
  if (run.finalText?.includes(FINAL_TEXT) !== true) failures.push(`the agent's last message is ${JSON.stringify(run.finalText)}, not the scripted provider's final text`);
  const shellCalls = section.providerCalls.filter((c) => c.turn === 'tool_call');
  if (expectProof && shellCalls.length !== 1) failures.push(`${shellCalls.length} calls were answered with the shell tool call, expected 1`);
  // What the agent asked tollgate for, refused calls included.
  const models = [...new Set(section.wireCalls.map((w) => safeModel(w.body)).filter((m) => m !== '-'))];
  notes.push(`models asked for (no model flag given): ${models.join(', ') || 'none'}`);
  notes.push(`requests to tollgate: ${section.wireCalls.map((w) => `${w.method} ${w.url} → ${w.status}`).join('; ')}`);
  const background = section.providerCalls.filter((c) => c.turn === 'text' || c.turn === 'count');
  if (section.providerCalls.length > 0) notes.push(background.length === 0 ? 'no background calls: every call was the task\'s own turn' : `background calls: ${background.map((c) => `#${c.seq} ${c.model}`).join(', ')}`);
}

/**
 * Claude Code works out each call's cost from its own price table: on a credit key, tollgate's
 * bill for the run should come to the same (a cross-check of the prices, not of the meter).
 */
function compareOwnCost(section: Section): void {
  const own = section.agent?.ownCostUsd;
  if (section.surface !== 'credit' || own === null || own === undefined) return;
  const billed = section.records.reduce((sum, r) => sum + (r.costNanoUsd as number), 0);
  const agree = Math.abs(billed / 1e9 - own) < 0.0000005 * Math.max(1, section.records.length);
  section.notes.push(`${section.agent!.agent}'s own cost at its built-in prices: $${own}; tollgate billed $${formatUsd(billed)} in all — ${agree ? 'they agree' : 'they DIFFER'}`);
}

function printSection(s: Section): void {
  say('');
  say(`=== ${s.title} — ${s.surface} surface, key ${s.keyPrefix} — ${s.failures.length === 0 ? 'PASS' : 'FAIL'}`);
  for (const line of s.lines) if (line !== '') say(`  ${line}`);
  for (const note of s.notes) say(`  note: ${note}`);
  for (const failure of s.failures) say(`  FAILURE: ${failure}`);
}

async function main(): Promise<number> {
  const opts = options();
  const teardowns: Array<() => unknown> = [];
  const t = { teardown: (fn: () => unknown): void => void teardowns.unshift(fn) };
  const sections: Section[] = [];
  try {
    say(`pinned: ${Object.entries(PINNED).map(([n, v]) => `${n}@${v}`).join(', ')}`);
    const installed = installPinned(CACHE, say);
    say(`${installed.installed ? 'installed' : 'reusing'} ${CACHE}`);
    say('building tollgate (tsc)…');
    const tsc = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
    if (tsc.status !== 0) throw new Error('tsc failed');

    say('prices: the built-in catalogue');
    const providerModels: string[] = [];
    const provider = await startScriptedProvider({ models: providerModels });
    t.teardown(() => provider.close());
    const harness = await startGateway(t, {
      config: () => ({
        providers: {
          openai: { baseUrl: `${provider.url}/v1`, auth: 'bearer', apiKeyEnv: 'OPENAI_API_KEY' },
          anthropic: { baseUrl: `${provider.url}/v1`, auth: 'x-api-key', apiKeyEnv: 'ANTHROPIC_API_KEY' },
        },
        catalogProvider: { openai: 'openai', anthropic: 'anthropic' },
      }),
    });
    const listed = await harness.cli(['models', 'list', '--json']);
    if (listed.code !== 0) throw new Error(`models list failed: ${listed.stderr}`);
    const models = JSON.parse(listed.stdout) as ListedModel[];
    providerModels.push(...models.map((m) => m.id));
    const recorder = await startRecorder(harness.base);
    t.teardown(() => recorder.close());
    say(`scripted provider ${provider.url}; tollgate ${harness.base} (store in ${harness.dataDir}); agents reach it through the recording pass-through ${recorder.url}`);

    const runsDir = join(CACHE, 'runs');
    mkdirSync(runsDir, { recursive: true });
    // The real path: Claude Code allows reads inside its working directory as it resolves it.
    const runDir = realpathSync(mkdtempSync(join(runsDir, 'run-')));
    if (!opts.keep) t.teardown(() => rmSync(runDir, { recursive: true, force: true }));

    const newKey = async (name: string, surface: Surface): Promise<{ key: string; prefix: string }> => {
      const money = surface === 'credit' ? ['--mode', 'credit', '--balance', '100'] : ['--mode', 'token', '--budget', '100000000'];
      return harness.createKey([...money, '--name', name]);
    };
    const bases = (surface: Surface): { messages: string; openai: string } => ({
      messages: surface === 'credit' ? recorder.url : `${recorder.url}/token`,
      openai: surface === 'credit' ? `${recorder.url}/v1` : `${recorder.url}/token/v1`,
    });

    for (const surface of opts.surfaces) {
      if (opts.parts.includes('claude')) {
        const key = await newKey(`claude-code-${surface}`, surface);
        const section = newSection(`Claude Code ${PINNED['@anthropic-ai/claude-code']}: the proof file through its Bash tool`, surface, key.prefix);
        const run = await observe(section, provider, recorder, harness, key.key, () => runClaudeCode({
          bin: installed.claude, dir: join(runDir, `claude-${surface}`), base: bases(surface).messages, key: key.key, prompt: PROMPT, proofFile: PROOF_FILE,
        }));
        checkAgent(section, run, true);
        checkCalls(section, key.key, models);
        compareOwnCost(section);
        sections.push(section);
        printSection(section);
      }
      if (opts.parts.includes('codex')) {
        const key = await newKey(`codex-${surface}`, surface);
        const section = newSection(`Codex CLI ${PINNED['@openai/codex']}: the proof file through its shell tool`, surface, key.prefix);
        const run = await observe(section, provider, recorder, harness, key.key, () => runCodex({
          bin: installed.codex, dir: join(runDir, `codex-${surface}`), base: bases(surface).openai, key: key.key, prompt: PROMPT, proofFile: PROOF_FILE,
        }));
        checkAgent(section, run, true);
        checkCalls(section, key.key, models);
        sections.push(section);
        printSection(section);
      }
      if (opts.parts.includes('frameworks')) {
        const key = await newKey(`frameworks-${surface}`, surface);
        const section = newSection('Vercel AI SDK and LangChain.js: one plain and one streamed call per API', surface, key.prefix);
        const calls = await observe(section, provider, recorder, harness, key.key, () => runFrameworks(CACHE, {
          openaiBaseURL: bases(surface).openai, anthropicBase: bases(surface).messages, key: key.key,
          openaiModel: FRAMEWORK_MODELS.openai, anthropicModel: FRAMEWORK_MODELS.anthropic,
        }));
        section.frameworks = calls;
        for (const c of calls) {
          section.lines.push(`${c.error === null ? 'ok  ' : 'FAIL'} ${c.framework} ${c.api} ${c.stream ? 'streamed' : 'plain'}: ${c.setup} → ${c.error ?? JSON.stringify(c.text)}`);
          if (c.error !== null) section.failures.push(`${c.framework} ${c.api} ${c.stream ? 'streamed' : 'plain'}: ${c.error}`);
          else if (c.text !== REPLY_TEXT) section.failures.push(`${c.framework} ${c.api} ${c.stream ? 'streamed' : 'plain'}: the text ${JSON.stringify(c.text)} is not the provider's`);
        }
        const expectedCalls = calls.length;
        const inference = section.providerCalls.filter((c) => INFERENCE.has(c.api)).length;
        if (inference !== expectedCalls) section.failures.push(`the provider received ${inference} inference calls for ${expectedCalls} framework calls`);
        section.lines.push(`calls the provider received (${section.providerCalls.length}):`);
        checkCalls(section, key.key, models);
        sections.push(section);
        printSection(section);
      }
    }

    if (opts.parts.includes('claude') && opts.surfaces.includes('credit')) {
      // Reading a large file is what makes Claude Code count tokens (POST /v1/messages/count_tokens).
      const key = await newKey('claude-code-count-tokens', 'credit');
      const section = newSection("Claude Code: reading a large file (its token count)", 'credit', key.prefix);
      const dir = join(runDir, 'claude-read');
      const big = join(dir, 'work', 'big.txt');
      mkdirSync(join(dir, 'work'), { recursive: true });
      writeFileSync(big, Array.from({ length: 4000 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog`).join('\n') + '\n');
      const run = await observe(section, provider, recorder, harness, key.key, () => runClaudeCode({
        bin: installed.claude, dir, base: bases('credit').messages, key: key.key, prompt: `Summarise the file [read ${big}] in one line.`, proofFile: PROOF_FILE, allowedTools: 'Bash,Read',
      }));
      checkAgent(section, run, false);
      const counts = section.wireCalls.filter((w) => w.url.split('?')[0]!.endsWith('/count_tokens'));
      section.notes.push(counts.length === 0
        ? 'Claude Code made no count_tokens call'
        : `Claude Code called count_tokens ${counts.length} time(s): ${counts.map((w) => `${w.method} ${w.url} (model ${safeModel(w.body)}, anthropic-beta: ${w.headers['anthropic-beta'] ?? '-'}) → ${w.status} ${w.code ?? ''}`).join('; ')}; it went on and finished (exit ${run.exitCode})`);
      checkCalls(section, key.key, models);
      compareOwnCost(section);
      sections.push(section);
      printSection(section);
    }

    const failed = sections.filter((s) => s.failures.length > 0);
    say('');
    say(`SUMMARY: ${sections.length - failed.length} of ${sections.length} scenarios passed${failed.length > 0 ? `; failed: ${failed.map((s) => `${s.title} (${s.surface})`).join('; ')}` : ''}`);
    const detail = join(CACHE, 'last-run.json');
    writeFileSync(detail, JSON.stringify({ pinned: PINNED, sections }, null, 1));
    say(`every request in full: ${detail}`);
    return failed.length === 0 ? 0 : 1;
  } catch (err) {
    say(`ERROR: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    return 1;
  } finally {
    for (const fn of teardowns) await fn();
  }
}

process.exitCode = await main();
