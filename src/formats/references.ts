import type { RequestFacts } from './model.js';
import { isObject } from './types.js';

/**
 * References to objects stored on the provider's account, which every key of the gateway shares:
 * files, vector stores, containers and skills, MCP tunnels, conversations and threads, stored
 * prompts, stored items and audio answers. A key that learnt another tenant's file id could read
 * that file, so none of them is forwarded (400
 * `unsupported_option`), nor is `background: true` (a response generated after the call is
 * answered, which the gateway could not meter).
 *
 * The request scanner flags the top-level members in which a key with one of these names stands
 * (REFERENCE_NAMES), or an item shaped like a reference to a stored item; a body without them
 * costs nothing here. Only a flagged member is parsed, and only the places where the provider
 * reads an id are looked at: a function's JSON schema with a `file_id` property, `metadata`
 * holding one, a citation's `file_id` inside an output item sent back in full, or a user's text
 * naming one are not references.
 */

/** Looks at one top-level member's value: the JSON path of the reference it makes, or null. */
export type ReferenceCheck = (value: unknown, path: string) => string | null;

/**
 * What `unsupported_option` says of the first reference (or `background: true`) in a request's
 * flagged members, every occurrence of a member named twice included: a message naming the member
 * by its JSON path; null when there is none.
 */
export function unsupportedIn(facts: RequestFacts, checks: Readonly<Record<string, ReferenceCheck>>): string | null {
  const flagged = facts.flagged;
  if (flagged === null) return null;
  for (const index of flagged) {
    const name = facts.nameAt(index);
    if (!Object.hasOwn(checks, name)) continue;
    const text = facts.textAt(index);
    const repeated = repeatedKey(text, name);
    if (repeated !== null) return `"${repeated}" is given twice. JSON.parse reads the last copy and another parser may read the first, so where a reference to the provider's account can stand each member must be given once.`;
    const path = checks[name]!(JSON.parse(text), name);
    if (path !== null) return messageFor(path);
  }
  return null;
}

/**
 * The path of the first key named twice in one object of `text` (a JSON value the request
 * scanner has already found well formed), or null. The checks below read a member as JSON.parse
 * does, keeping a key's last copy; a provider's parser may keep the first, so a member in which
 * a reference can stand is only judged when that cannot differ (a repeated top-level member is
 * checked in every copy instead, see RequestFacts.spans).
 *
 * One pass over the text: strings are skipped with the native `indexOf`, a value never decoded
 * and a key only when it holds an escape; the path is written only for the key found.
 */
export function repeatedKey(text: string, path: string): string | null {
  const r: JsonReader = { text, at: 0, segments: [] };
  return repeatedIn(r) ? path + r.segments.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('') : null;
}

interface JsonReader {
  text: string;
  at: number;
  /** Where the reader is: keys and array indices, outermost first. */
  segments: Array<string | number>;
}

function skipSpace(r: JsonReader): void {
  let c = r.text.charCodeAt(r.at);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = r.text.charCodeAt(++r.at);
}

/** Moves past the string whose opening quote is at `at`. */
function skipString(r: JsonReader): void {
  const text = r.text;
  let quote = text.indexOf('"', r.at + 1);
  for (;;) {
    // A quote after an odd run of backslashes is escaped.
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) break;
    quote = text.indexOf('"', quote + 1);
  }
  r.at = quote + 1;
}

/** Whether a key is named twice in one object of the value at `at`; if so, `segments` lead to it. */
function repeatedIn(r: JsonReader): boolean {
  skipSpace(r);
  const c = r.text.charCodeAt(r.at);
  if (c === 0x7b /* { */) {
    r.at++;
    skipSpace(r);
    if (r.text.charCodeAt(r.at) === 0x7d) {
      r.at++;
      return false;
    }
    const keys = new Set<string>();
    for (;;) {
      skipSpace(r);
      const start = r.at;
      skipString(r);
      const raw = r.text.slice(start, r.at);
      const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      r.segments.push(key);
      if (keys.has(key)) return true;
      keys.add(key);
      skipSpace(r);
      r.at++; // ':'
      if (repeatedIn(r)) return true;
      r.segments.pop();
      skipSpace(r);
      if (r.text.charCodeAt(r.at++) === 0x7d) return false; // '}', else ','
    }
  }
  if (c === 0x5b /* [ */) {
    r.at++;
    skipSpace(r);
    if (r.text.charCodeAt(r.at) === 0x5d) {
      r.at++;
      return false;
    }
    for (let i = 0; ; i++) {
      r.segments.push(i);
      if (repeatedIn(r)) return true;
      r.segments.pop();
      skipSpace(r);
      if (r.text.charCodeAt(r.at++) === 0x5d) return false; // ']', else ','
    }
  }
  if (c === 0x22) {
    skipString(r);
    return false;
  }
  // A number, true, false or null: up to the next delimiter.
  for (let d = c; d !== 0x2c && d !== 0x5d && d !== 0x7d && d !== 0x20 && d !== 0x0a && d !== 0x0d && d !== 0x09 && r.at < r.text.length; d = r.text.charCodeAt(++r.at));
  return false;
}

function messageFor(path: string): string {
  if (path === 'background') {
    return 'This gateway does not run background responses ("background": true): they are generated after the call is answered, where the gateway cannot meter them. Leave "background" out (a stream keeps a long call alive).';
  }
  return `"${path}" refers to an object stored on the provider's account (a file, vector store, container, skill, MCP tunnel, conversation, thread, stored prompt, stored item or audio response). Every key of this gateway shares that account, so such references are not forwarded. Send the content itself instead.`;
}

/** Whether a member is given at all (`null` is as good as absent to the providers). */
function given(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/** The first non-null result of `check` over an array's elements, each with its path. */
function firstIn(list: unknown, path: string, check: (element: Record<string, any>, path: string) => string | null): string | null {
  if (!Array.isArray(list)) return null;
  for (let i = 0; i < list.length; i++) {
    const element: unknown = list[i];
    if (!isObject(element) || Array.isArray(element)) continue;
    const found = check(element, `${path}[${i}]`);
    if (found !== null) return found;
  }
  return null;
}

// OpenAI Responses

/** A content part (`input_file`, `input_image`, a computer call's screenshot) given by file id. */
function partFileId(part: Record<string, any>, path: string): string | null {
  return given(part.file_id) ? `${path}.file_id` : null;
}

/**
 * One input item: a reference to a stored item (`item_reference`, nothing but `id` besides
 * `type`, or an `id` with neither `type` nor `role`), or content parts given by file id (a
 * message's `content`, a tool call output's `output`). An output item sent back in full passes,
 * ids and citations included.
 */
function inputItem(item: Record<string, any>, path: string): string | null {
  if (item.type === 'item_reference') return given(item.id) ? `${path}.id` : `${path}.type`;
  const keys = Object.keys(item);
  if (keys.includes('id') && keys.every((k) => k === 'id' || k === 'type')) return `${path}.id`;
  // An id in an item that names neither its type nor its role: OpenAI's item reference has an
  // optional type; every item sent back in full names one or the other.
  if (given(item.id) && !keys.includes('type') && !keys.includes('role')) return `${path}.id`;
  const parts = firstIn(item.content, `${path}.content`, partFileId) ?? firstIn(item.output, `${path}.output`, partFileId);
  if (parts !== null) return parts;
  return isObject(item.output) && !Array.isArray(item.output) ? partFileId(item.output, `${path}.output`) : null;
}

/**
 * A container object made by the provider on the account (`id`, a `container_reference`'s
 * `container_id`) or given its files or skills (`file_ids`, `skill_reference`s); a container
 * made for the call alone (`{"type": "auto"}`, `container_auto` with inline skills) passes.
 */
function containerObject(container: Record<string, any>, path: string): string | null {
  // (`id`: not an API shape, but a container object naming one is refused rather than guessed at.)
  if (given(container.id)) return `${path}.id`;
  if (given(container.container_id)) return `${path}.container_id`;
  if (Array.isArray(container.file_ids) && container.file_ids.length > 0) return `${path}.file_ids`;
  return firstIn(container.skills, `${path}.skills`, (skill, at) => (given(skill.skill_id) || skill.type === 'skill_reference' ? `${at}.skill_id` : null));
}

/**
 * A tool searching vector stores, running in a container by id or with files or skills (a
 * `code_interpreter`'s `container`, a `shell`'s `environment`), reaching an MCP server through
 * the account's tunnel, or masking with a file.
 */
function responsesTool(tool: Record<string, any>, path: string): string | null {
  if (given(tool.vector_store_ids)) return `${path}.vector_store_ids`;
  const container: unknown = tool.container;
  if (typeof container === 'string') return `${path}.container`;
  if (isObject(container) && !Array.isArray(container)) {
    const found = containerObject(container, `${path}.container`);
    if (found !== null) return found;
  }
  const environment: unknown = tool.environment;
  if (isObject(environment) && !Array.isArray(environment)) {
    const found = containerObject(environment, `${path}.environment`);
    if (found !== null) return found;
  }
  if (given(tool.tunnel_id)) return `${path}.tunnel_id`;
  if (isObject(tool.input_image_mask) && given(tool.input_image_mask.file_id)) return `${path}.input_image_mask.file_id`;
  return null;
}

export const RESPONSES_REFERENCES: Readonly<Record<string, ReferenceCheck>> = {
  input: (v, path) => firstIn(v, path, inputItem),
  tools: (v, path) => firstIn(v, path, responsesTool),
  conversation: (v, path) => (given(v) ? path : null),
  prompt: (v, path) => (typeof v === 'string' ? path : isObject(v) && given(v.id) ? `${path}.id` : null),
  background: (v, path) => (v === true ? path : null),
};

// OpenAI Chat Completions

/** A message's `file` content parts given by file id; an assistant's earlier audio answer by id (kept on the account). */
function chatMessage(message: Record<string, any>, path: string): string | null {
  if (isObject(message.audio) && given(message.audio.id)) return `${path}.audio.id`;
  return firstIn(message.content, `${path}.content`, (part, at) => (isObject(part.file) && given(part.file.file_id) ? `${at}.file.file_id` : null));
}

export const CHAT_REFERENCES: Readonly<Record<string, ReferenceCheck>> = {
  messages: (v, path) => firstIn(v, path, chatMessage),
};

// Anthropic Messages

/**
 * A content block given by file id: a `container_upload` (`file_id`), a document or image whose
 * source is a file; blocks nested in a tool result's `content` or a document's content source
 * are looked into too.
 */
function anthropicBlock(block: Record<string, any>, path: string): string | null {
  if (given(block.file_id)) return `${path}.file_id`;
  const source: unknown = block.source;
  if (isObject(source) && !Array.isArray(source)) {
    if (given(source.file_id) || source.type === 'file') return `${path}.source.file_id`;
    const inSource = firstIn(source.content, `${path}.source.content`, anthropicBlock);
    if (inSource !== null) return inSource;
  }
  return firstIn(block.content, `${path}.content`, anthropicBlock);
}

export const MESSAGES_REFERENCES: Readonly<Record<string, ReferenceCheck>> = {
  messages: (v, path) => firstIn(v, path, (message, at) => firstIn(message.content, `${at}.content`, anthropicBlock)),
  container: (v, path) => {
    if (typeof v === 'string') return path;
    if (!isObject(v) || Array.isArray(v)) return null;
    if (given(v.id)) return `${path}.id`;
    const skills: unknown = v.skills;
    return given(skills) && !(Array.isArray(skills) && skills.length === 0) ? `${path}.skills` : null;
  },
  // Conversation state held on the account (a Thread): made under a response's id, continued by it.
  thread: (v, path) => (given(v) ? path : null),
  // Compares this prompt with the request an earlier response answered: a tenant's own, or another's.
  diagnostics: (v, path) => (isObject(v) && given(v.previous_message_id) ? `${path}.previous_message_id` : null),
};
