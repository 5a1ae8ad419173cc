/**
 * The Vercel AI SDK and LangChain.js pointed at tollgate as the README says: one plain and one
 * streamed call with each framework on each API it offers for OpenAI (Responses, Chat
 * Completions) and on Anthropic Messages. The packages come from the run's cache (install.ts),
 * loaded by path, so they never become dependencies of the project.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface FrameworkCall {
  framework: 'Vercel AI SDK' | 'LangChain.js';
  /** How the client was made, as the README shows it. */
  setup: string;
  api: 'responses' | 'chat' | 'messages';
  stream: boolean;
  text: string;
  error: string | null;
}

export interface FrameworkTarget {
  /** OpenAI-style base: `{base}/v1` (credit) or `{base}/token/v1` (token). */
  openaiBaseURL: string;
  /** Anthropic SDK-style base (no /v1): `{base}` or `{base}/token`. */
  anthropicBase: string;
  key: string;
  openaiModel: string;
  anthropicModel: string;
}

/* Just what is called of each package (they are loaded at run time, untyped). */
interface TextResult { text: string }
interface StreamResult { textStream: AsyncIterable<string> }
interface AiSdk {
  generateText(options: { model: unknown; prompt: string; maxRetries: number }): Promise<TextResult>;
  streamText(options: { model: unknown; prompt: string; maxRetries: number; onError?: (e: { error: unknown }) => void }): StreamResult;
}
type ProviderFactory = (options: { baseURL: string; apiKey: string }) => ((id: string) => unknown) & { chat(id: string): unknown; responses?(id: string): unknown };
interface ChatModel {
  invoke(input: string): Promise<{ content: unknown }>;
  stream(input: string): Promise<AsyncIterable<{ content: unknown }>>;
}
type ChatModelClass = new (options: Record<string, unknown>) => ChatModel;

async function load(cacheDir: string, name: string): Promise<any> {
  const path = createRequire(join(cacheDir, 'package.json')).resolve(name);
  const mod = await import(pathToFileURL(path).href);
  return { ...mod.default, ...mod };
}

/** A message's content as text (LangChain gives the Responses API's content as parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}

async function attempt(call: Omit<FrameworkCall, 'text' | 'error'>, run: () => Promise<string>): Promise<FrameworkCall> {
  try {
    return { ...call, text: await run(), error: null };
  } catch (err) {
    return { ...call, text: '', error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
}

async function collect(stream: AsyncIterable<string>): Promise<string> {
  let text = '';
  for await (const part of stream) text += part;
  return text;
}

const PROMPT = 'Say hello through the gateway.';

/**
 * Every call is made once (no retries), so each reaches the provider at most once and its bill
 * is found by the provider's request id.
 */
export async function runFrameworks(cacheDir: string, t: FrameworkTarget): Promise<FrameworkCall[]> {
  const ai: AiSdk = await load(cacheDir, 'ai');
  const createOpenAI: ProviderFactory = (await load(cacheDir, '@ai-sdk/openai')).createOpenAI;
  const createAnthropic: ProviderFactory = (await load(cacheDir, '@ai-sdk/anthropic')).createAnthropic;
  const ChatOpenAI: ChatModelClass = (await load(cacheDir, '@langchain/openai')).ChatOpenAI;
  const ChatAnthropic: ChatModelClass = (await load(cacheDir, '@langchain/anthropic')).ChatAnthropic;

  const openai = createOpenAI({ baseURL: t.openaiBaseURL, apiKey: t.key });
  const anthropic = createAnthropic({ baseURL: `${t.anthropicBase}/v1`, apiKey: t.key });
  const aiSdk: Array<[FrameworkCall['api'], string, unknown]> = [
    ['responses', `createOpenAI({ baseURL: '${t.openaiBaseURL}' })('${t.openaiModel}')`, openai(t.openaiModel)],
    ['chat', `createOpenAI({ baseURL: '${t.openaiBaseURL}' }).chat('${t.openaiModel}')`, openai.chat(t.openaiModel)],
    ['messages', `createAnthropic({ baseURL: '${t.anthropicBase}/v1' })('${t.anthropicModel}')`, anthropic(t.anthropicModel)],
  ];
  const langChain: Array<[FrameworkCall['api'], string, ChatModel]> = [
    ['chat', `new ChatOpenAI({ model: '${t.openaiModel}', configuration: { baseURL: '${t.openaiBaseURL}' } })`,
      new ChatOpenAI({ model: t.openaiModel, apiKey: t.key, configuration: { baseURL: t.openaiBaseURL }, maxRetries: 0 })],
    ['responses', `new ChatOpenAI({ model: '${t.openaiModel}', useResponsesApi: true, configuration: { baseURL: '${t.openaiBaseURL}' } })`,
      new ChatOpenAI({ model: t.openaiModel, apiKey: t.key, useResponsesApi: true, configuration: { baseURL: t.openaiBaseURL }, maxRetries: 0 })],
    ['messages', `new ChatAnthropic({ model: '${t.anthropicModel}', anthropicApiUrl: '${t.anthropicBase}' })`,
      new ChatAnthropic({ model: t.anthropicModel, apiKey: t.key, anthropicApiUrl: t.anthropicBase, maxRetries: 0 })],
  ];

  const calls: FrameworkCall[] = [];
  for (const [api, setup, model] of aiSdk) {
    calls.push(await attempt({ framework: 'Vercel AI SDK', setup, api, stream: false }, async () => (await ai.generateText({ model, prompt: PROMPT, maxRetries: 0 })).text));
    calls.push(await attempt({ framework: 'Vercel AI SDK', setup, api, stream: true }, async () => {
      // streamText reports a failed call through onError and ends the text stream empty.
      let failure: unknown = null;
      const text = await collect(ai.streamText({ model, prompt: PROMPT, maxRetries: 0, onError: ({ error }) => (failure = error) }).textStream);
      if (failure !== null) throw failure;
      return text;
    }));
  }
  for (const [api, setup, model] of langChain) {
    calls.push(await attempt({ framework: 'LangChain.js', setup, api, stream: false }, async () => textOf((await model.invoke(PROMPT)).content)));
    calls.push(await attempt({ framework: 'LangChain.js', setup, api, stream: true }, async () => {
      let text = '';
      for await (const chunk of await model.stream(PROMPT)) text += textOf(chunk.content);
      return text;
    }));
  }
  return calls;
}
