import type { RequestBody } from '../http/body.js';
import type { MemberSpan, TopLevelScanner } from './top-level-scanner.js';

/**
 * The longest `model` value read, in bytes as sent. Model ids are short; a longer value cannot
 * name a model, and decoding megabytes of it only to refuse it would cost the event loop.
 */
export const MAX_MODEL_BYTES = 256;

/**
 * What the gateway reads from a request body: the model and whether a stream was asked for, on
 * every call; any other top-level member, and the whole body, only when asked (parsed then, from
 * the bytes the scanner located). The body itself is `raw`, the bytes as received.
 */
export class RequestFacts {
  private names: string[] | undefined;
  /** The values of the members asked for and present, parsed once (absent ones are not kept: finding them absent again costs less than keeping them). */
  private parsed: Map<string, unknown> | undefined;
  private whole: Record<string, unknown> | undefined;

  constructor(
    readonly raw: RequestBody,
    readonly model: string,
    readonly stream: boolean,
    private readonly members: readonly MemberSpan[],
    /**
     * Indices in the members of those that may make a reference to an object stored on the
     * provider's account (the scanner's flags: see formats/references.ts); null for none.
     */
    readonly flagged: readonly number[] | null = null,
  ) {}

  /** Where every top-level member called `name` sits, in body order (JSON.parse keeps the last). */
  spans(name: string): MemberSpan[] {
    // A key longer than `name` with every character escaped (\uXXXX) cannot be `name`.
    const longest = 6 * name.length + 2;
    const names = (this.names ??= new Array<string>(this.members.length));
    const found: MemberSpan[] = [];
    this.members.forEach((m, i) => {
      if (m.keyEnd - m.keyStart > longest) return;
      names[i] ??= keyName(this.raw.slice(m.keyStart, m.keyEnd));
      if (names[i] === name) found.push(m);
    });
    return found;
  }

  /** The last top-level member called `name` (the one JSON.parse keeps), without a list: this runs for several names on every call. */
  private lastSpan(name: string): MemberSpan | undefined {
    const longest = 6 * name.length + 2;
    const names = (this.names ??= new Array<string>(this.members.length));
    for (let i = this.members.length - 1; i >= 0; i--) {
      const m = this.members[i]!;
      if (m.keyEnd - m.keyStart > longest) continue;
      if ((names[i] ??= keyName(this.raw.slice(m.keyStart, m.keyEnd))) === name) return m;
    }
    return undefined;
  }

  /** The name of the top-level member at `index` (in body order). */
  nameAt(index: number): string {
    const m = this.members[index]!;
    return keyName(this.raw.slice(m.keyStart, m.keyEnd));
  }

  /** The JSON text of the top-level member at `index`'s value, as sent. */
  textAt(index: number): string {
    return this.text(this.members[index]!);
  }

  private text(span: MemberSpan): string {
    return this.raw.text(span.valueStart, span.valueEnd);
  }

  private parse(span: MemberSpan): unknown {
    return JSON.parse(this.text(span));
  }

  /** The value of top-level member `name` (the last, as JSON.parse keeps it), or undefined. */
  member(name: string): unknown {
    const span = this.lastSpan(name);
    if (span === undefined) return undefined;
    const parsed = (this.parsed ??= new Map<string, unknown>());
    if (parsed.has(name)) return parsed.get(name);
    const value = this.parse(span);
    parsed.set(name, value);
    return value;
  }

  /**
   * The whole body parsed, once. Only the rare paths that need all of it use this (an input
   * estimate from the prompt's text); a call that completes normally never parses its body.
   */
  get body(): Record<string, unknown> {
    return (this.whole ??= JSON.parse(this.raw.text()) as Record<string, unknown>);
  }
}

/** A key's name from its bytes, quotes included; JSON.parse only for keys with escapes. */
function keyName(bytes: Buffer): string {
  return bytes.indexOf(0x5c) === -1 ? bytes.toString('utf8', 1, bytes.length - 1) : (JSON.parse(bytes.toString('utf8')) as string);
}

/**
 * The facts of a body the scanner read to its end, or undefined (→ 400 model_required) when the
 * body is empty, not JSON, not an object, deeper or wider than the scanner's limits, has no
 * non-empty string `model` (of at most MAX_MODEL_BYTES), or names `model` more than once at the
 * top level: JSON.parse keeps the last duplicate while another parser may keep the first, so
 * the model checked and billed could differ from the one the provider serves.
 */
export function requestFacts(raw: RequestBody, scanner: TopLevelScanner): RequestFacts | undefined {
  if (!scanner.end() || scanner.modelIndex === -1) return undefined;
  const { members } = scanner;
  const m = members[scanner.modelIndex]!;
  const size = m.valueEnd - m.valueStart;
  if (size > MAX_MODEL_BYTES + 2 || size <= 2) return undefined; // too long, or "" or not a string
  const modelBytes = raw.slice(m.valueStart, m.valueEnd);
  if (modelBytes[0] !== 0x22 /* " */) return undefined;
  const model = JSON.parse(modelBytes.toString('utf8')) as string;
  let stream = false;
  if (scanner.streamIndex !== -1) {
    const s = members[scanner.streamIndex]!;
    stream = s.valueEnd - s.valueStart === 4 && raw.slice(s.valueStart, s.valueEnd).toString('latin1') === 'true';
  }
  return new RequestFacts(raw, model, stream, members, flaggedMembers(scanner));
}

/** The members the scanner flagged, and those holding an item whose type it told apart (`item_reference`), ascending. */
function flaggedMembers(scanner: TopLevelScanner): number[] | null {
  const { flagged, items } = scanner;
  if (items === null) return flagged;
  const all = new Set(flagged);
  for (let i = 0; i < items.length; i += 2) all.add(items[i]!);
  return [...all].sort((a, b) => a - b);
}
