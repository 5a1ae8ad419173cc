/** What the gateway reads from a request body: the model, and whether a stream was asked for. */
export interface RequestFacts {
  model: string;
  stream: boolean;
  /** The parsed body, for adapters that must look further (never re-serialised unless changed). */
  body: Record<string, unknown>;
}

/**
 * Reads `model` from a JSON body. Undefined (→ 400 model_required) when the body is empty, not
 * JSON, not an object, has no non-empty string `model`, or names `model` more than once at the
 * top level: JSON.parse keeps the last duplicate while another parser may keep the first, so the
 * model checked and billed could differ from the one the provider serves.
 */
export function readRequestFacts(body: Buffer): RequestFacts | undefined {
  if (body.length === 0) return undefined;
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const obj = parsed as Record<string, unknown>;
  const model = obj.model;
  if (typeof model !== 'string' || model.length === 0) return undefined;
  // A duplicate needs either a second literal "model" or an escaped key; most bodies have
  // neither, and two native indexOf calls keep the scan off their path.
  const first = text.indexOf('"model"');
  if (first !== text.lastIndexOf('"model"') || text.includes('\\u')) {
    if (countTopLevelKey(text, 'model') !== 1) return undefined;
  }
  return { model, stream: obj.stream === true, body: obj };
}

/**
 * Counts how often `name` is a key of the top-level object in valid JSON `text`, decoding
 * escaped key spellings. Nested objects and strings are skipped.
 */
export function countTopLevelKey(text: string, name: string): number {
  let depth = 0;
  let found = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
      if (depth === 1 && expectKey) {
        if (JSON.parse(text.slice(start, i + 1)) === name) found++;
        expectKey = false;
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++;
      expectKey = depth === 1 && c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x2c /* , */ && depth === 1) {
      expectKey = true;
    }
  }
  return found;
}
