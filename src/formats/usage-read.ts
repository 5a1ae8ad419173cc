import { MAX_INPUT_TOKENS, MAX_OUTPUT_CAP, MAX_TOOL_CALLS } from '../config/load.js';
import { emptyCounts, emptyUsage, isObject, type TokenCounts, type Usage } from './types.js';

/** The token counts a usage record keeps, each on one side of the call. */
export type CountKind = 'input' | 'cachedInput' | 'cacheWrite' | 'cacheWrite1h' | 'audioInput' | 'imageInput'
  | 'output' | 'reasoning' | 'audioOutput' | 'imageOutput';
export type Side = 'input' | 'output';

const SIDE: Readonly<Record<CountKind, Side>> = {
  input: 'input', cachedInput: 'input', cacheWrite: 'input', cacheWrite1h: 'input', audioInput: 'input', imageInput: 'input',
  output: 'output', reasoning: 'output', audioOutput: 'output', imageOutput: 'output',
};

/**
 * One count of a usage object: where it sits, what it adds to, and what its absence means.
 *
 * - `total`: the side's main count (`prompt_tokens`, `output_tokens`). Without it the side
 *   cannot be read, and its tokens are estimated.
 * - `addend`: another term of the side's total (Messages reports cache reads and writes beside
 *   `input_tokens`). Absent means 0; unreadable means the side's total is unknown.
 * - `part`: a detail inside a total (`cached_tokens`, `audio_tokens`, `ephemeral_1h_input_tokens`).
 *   Absent means 0. One that is unreadable, or larger than its whole, cannot be trusted, so it
 *   is bounded the way that costs most: a `discount` part (cache reads) counts 0, any other part
 *   counts as its whole (every input token audio, every cache write a 1-hour one).
 */
export interface CountField {
  /** Dotted path inside the usage object. */
  path: string;
  /** The kinds this count adds to (Messages' cache reads add to `input` and `cachedInput`). */
  adds: readonly CountKind[];
  role: 'total' | 'addend' | 'part';
  /** For parts: the count it is a part of. */
  of?: CountKind;
  /** For parts: priced no higher than its whole (cache reads, reasoning), so an untrustworthy value counts 0. */
  discount?: boolean;
}

/** Everything a format's usage object can report. */
export interface UsageSchema {
  counts: readonly CountField[];
  /** Counts of fee-bearing server tool calls inside the usage object: dotted path → fee name. */
  toolCounts?: readonly { path: string; tool: string }[];
  /** Dotted path of the service tier inside the usage object (Messages). */
  tierPath?: string;
  /** Dotted path of the speed the call was served at (Messages' `speed`). */
  speedPath?: string;
  /** Dotted path of the inference geography the call was served in (Messages' `inference_geo`). */
  geoPath?: string;
  /**
   * Dotted path of a list of the call's passes, each a usage object with the same counts
   * (Messages' `iterations`). When the answer has one, the call's counts are the sums of its
   * entries (the top-level counts then describe only the last pass), and each entry is priced
   * on its own.
   */
  partsPath?: string;
}

/**
 * What could be read of a usage object. `problem` is the first reason it cannot be taken as
 * complete and unambiguous (a stable marker, stored as the record's `estimateReason`):
 * `usage_absent`, `usage_malformed`, `usage_field_missing:PATH`, `usage_field_invalid:PATH`
 * or `usage_inconsistent:PATH`. A side whose total is unknown is estimated; counts already
 * read stay as a floor.
 */
export interface Reading {
  usage: Usage;
  known: Record<Side, boolean>;
  problem: string | null;
}

/** A count the provider may report: a non-negative safe integer (not a string, fraction, or negative). */
function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Paths split once per path, not per read (this runs for every answer). */
const SEGMENTS = new Map<string, readonly string[]>();

function segmentsOf(path: string): readonly string[] {
  let segments = SEGMENTS.get(path);
  if (segments === undefined) SEGMENTS.set(path, (segments = path.split('.')));
  return segments;
}

/** The value at `segments` inside `obj` (undefined where a step is missing or not an object). */
function valueAt(obj: Record<string, unknown>, segments: readonly string[]): unknown {
  let v: unknown = obj[segments[0]!];
  for (let i = 1; i < segments.length; i++) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[segments[i]!];
  }
  return v;
}

function at(obj: Record<string, unknown>, path: string): unknown {
  return valueAt(obj, segmentsOf(path));
}

/**
 * Reads a usage object against a format's schema. `u` is what the answer carried where its usage
 * belongs: undefined or null when there was none.
 */
export function readUsage(u: unknown, schema: UsageSchema): Reading {
  const usage = emptyUsage();
  if (u === undefined || u === null) return { usage, known: { input: false, output: false }, problem: 'usage_absent' };
  if (!isObject(u) || Array.isArray(u)) return { usage, known: { input: false, output: false }, problem: 'usage_malformed' };
  const reading: Reading = { usage, known: { input: true, output: true }, problem: null };
  readCounts(u, schema.counts, usage, reading, '');
  const parts = schema.partsPath === undefined ? undefined : at(u, schema.partsPath);
  if (parts !== undefined && parts !== null) readParts(parts, schema, reading);
  if (usage.input > MAX_INPUT_TOKENS) unbelievable(reading, schema, 'input');
  if (usage.output > MAX_OUTPUT_CAP) unbelievable(reading, schema, 'output');
  for (const { path, tool } of schema.toolCounts ?? []) {
    const v = at(u, path);
    if (v === undefined || v === null) continue;
    if (!isCount(v)) {
      reading.problem ??= `usage_field_invalid:${path}`;
      continue;
    }
    // More than one call can make is not believed, but bounded the way that costs most.
    if (v > MAX_TOOL_CALLS) reading.problem ??= `usage_field_invalid:${path}`;
    usage.toolCalls[tool] = Math.min(MAX_TOOL_CALLS, (usage.toolCalls[tool] ?? 0) + v);
  }
  usage.serviceTier = stringAt(u, schema.tierPath);
  usage.speed = stringAt(u, schema.speedPath);
  usage.inferenceGeo = stringAt(u, schema.geoPath);
  return reading;
}

/**
 * A side counted past what one call can be (config/load.ts, MAX_INPUT_TOKENS, MAX_OUTPUT_CAP) is
 * not believed: its counts are dropped and it is estimated, as an unreadable side is. Beyond
 * those counts a charge would no longer be an exact integer.
 */
function unbelievable(reading: Reading, schema: UsageSchema, side: Side): void {
  const total = schema.counts.find((f) => f.role === 'total' && SIDE[f.adds[0]!] === side);
  reading.problem ??= `usage_field_invalid:${total?.path ?? side}`;
  reading.known[side] = false;
  const usage = reading.usage;
  for (const kind of KINDS) if (SIDE[kind] === side) usage[kind] = 0;
  usage.parts = null;
}

function stringAt(u: Record<string, unknown>, path: string | undefined): string | null {
  if (path === undefined) return null;
  const v = at(u, path);
  return typeof v === 'string' ? v : null;
}

/**
 * A call reported in parts: each entry read against the same counts, the call's counts their
 * sums. Anything unreadable in the list leaves the call's counts unknown (the top-level counts,
 * already read, stay as a floor under the estimate).
 */
function readParts(parts: unknown, schema: UsageSchema, reading: Reading): void {
  const path = schema.partsPath!;
  if (!Array.isArray(parts) || parts.length === 0 || !parts.every((p) => isObject(p) && !Array.isArray(p))) {
    reading.problem ??= `usage_field_invalid:${path}`;
    reading.known = { input: false, output: false };
    return;
  }
  const read: TokenCounts[] = [];
  const sums = emptyCounts();
  for (const part of parts as Record<string, unknown>[]) {
    const counts = emptyCounts();
    readCounts(part, schema.counts, counts, reading, `${path}.`);
    read.push(counts);
    for (const kind of Object.keys(sums) as CountKind[]) sums[kind] += counts[kind];
  }
  // The sums replace the top-level counts only where they are at least as large: a list that
  // reports less than the top level cannot be the whole call.
  if (sums.input < reading.usage.input || sums.output < reading.usage.output) {
    reading.problem ??= `usage_inconsistent:${path}`;
    reading.known = { input: false, output: false };
    return;
  }
  Object.assign(reading.usage, sums);
  reading.usage.parts = read;
}

/** The kinds in a fixed order: a count's kind is its index here while a usage object is read. */
const KINDS: readonly CountKind[] = ['input', 'cachedInput', 'cacheWrite', 'cacheWrite1h', 'audioInput', 'imageInput', 'output', 'reasoning', 'audioOutput', 'imageOutput'];
const INPUT = 0;

/** A CountField prepared for reading: its path split, its kinds as indices in KINDS. */
interface PreparedField {
  field: CountField;
  segments: readonly string[];
  adds: readonly number[];
  side: Side;
  /** For parts: the index of its whole; else -1. */
  of: number;
}

/**
 * Each schema's fields prepared once: kinds as indices into an array of counts, so a read makes
 * no lookup by a kind's name (measured in process: readUsage of a Chat usage object 1,040 ns
 * with the counts looked up by name, bench/README.md).
 */
const PREPARED = new WeakMap<readonly CountField[], readonly PreparedField[]>();

function prepared(fields: readonly CountField[]): readonly PreparedField[] {
  let list = PREPARED.get(fields);
  if (list === undefined) {
    if (fields.length > 31) throw new Error('a usage schema has at most 31 counts');
    list = fields.map((field) => ({
      field,
      segments: segmentsOf(field.path),
      adds: field.adds.map((kind) => KINDS.indexOf(kind)),
      side: SIDE[field.adds[0]!],
      of: field.of === undefined ? -1 : KINDS.indexOf(field.of),
    }));
    PREPARED.set(fields, list);
  }
  return list;
}

/**
 * Reads `schema` counts of one usage object into `counts`; problems go to `reading` (the first
 * is kept; a side whose total cannot be read is unknown). `prefix` names where the object sits.
 */
function readCounts(u: Record<string, unknown>, fields: readonly CountField[], counts: TokenCounts, reading: Reading, prefix: string): void {
  const list = prepared(fields);
  const n = [counts.input, counts.cachedInput, counts.cacheWrite, counts.cacheWrite1h, counts.audioInput, counts.imageInput, counts.output, counts.reasoning, counts.audioOutput, counts.imageOutput];
  /** Bit i set: the part list[i] cannot be trusted. */
  let untrusted = 0;
  for (let i = 0; i < list.length; i++) {
    const f = list[i]!;
    const v = valueAt(u, f.segments);
    if (v === undefined || v === null) {
      if (f.field.role === 'total') {
        reading.known[f.side] = false;
        reading.problem ??= `usage_field_missing:${prefix}${f.field.path}`;
      }
      continue;
    }
    if (!isCount(v)) {
      reading.problem ??= `usage_field_invalid:${prefix}${f.field.path}`;
      if (f.field.role === 'part') untrusted |= 1 << i;
      else reading.known[f.side] = false;
      continue;
    }
    for (let k = 0; k < f.adds.length; k++) n[f.adds[k]!]! += v;
  }
  // Parts are checked against their wholes once every total and addend is in.
  for (let i = 0; i < list.length; i++) {
    const f = list[i]!;
    if (f.of === -1 || (untrusted & (1 << i)) !== 0) continue;
    if (n[f.adds[0]!]! > n[f.of]!) {
      reading.problem ??= `usage_inconsistent:${prefix}${f.field.path}`;
      untrusted |= 1 << i;
    }
  }
  // Together, too: the input's parts priced apart (cache reads and writes, audio, image) cannot add
  // up to more than the input. When they do, the one priced below it (cache reads) is not trusted.
  let parts = 0;
  let discount = -1;
  for (let i = 0; i < list.length; i++) {
    const f = list[i]!;
    if (f.of !== INPUT || (untrusted & (1 << i)) !== 0) continue;
    parts += n[f.adds[0]!]!;
    if (f.field.discount === true) discount = i;
  }
  if (parts > n[INPUT]! && discount !== -1) {
    reading.problem ??= `usage_inconsistent:${prefix}${list[discount]!.field.path}`;
    untrusted |= 1 << discount;
  }
  for (let i = 0; i < list.length; i++) {
    if ((untrusted & (1 << i)) === 0) continue;
    const f = list[i]!;
    n[f.adds[0]!] = f.field.discount === true ? 0 : n[f.of]!;
  }
  counts.input = n[0]!;
  counts.cachedInput = n[1]!;
  counts.cacheWrite = n[2]!;
  counts.cacheWrite1h = n[3]!;
  counts.audioInput = n[4]!;
  counts.imageInput = n[5]!;
  counts.output = n[6]!;
  counts.reasoning = n[7]!;
  counts.audioOutput = n[8]!;
  counts.imageOutput = n[9]!;
}

/**
 * Merges what a later event restates into an earlier usage object: fields the later one sends
 * as numbers (or objects of them) replace the earlier ones; absent and null fields are "not
 * restated" (Anthropic's message_delta sends null for counts it does not repeat, and the SDK's
 * own MessageStream skips those too).
 */
export function mergeRestated(base: Record<string, unknown>, later: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [name, v] of Object.entries(later)) {
    if (v === null || v === undefined) continue;
    const prev = out[name];
    out[name] = isObject(v) && !Array.isArray(v) && isObject(prev) && !Array.isArray(prev) ? mergeRestated(prev, v) : v;
  }
  return out;
}
