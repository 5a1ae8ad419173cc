import cluster from 'node:cluster';
import { performance } from 'node:perf_hooks';
import { log } from '../log.js';

/**
 * One access-log line: exactly these fields (interface.md's, then whether and why the call's
 * tokens were estimated), never a key or a body.
 */
export interface AccessLine {
  time: string;
  requestId: string;
  keyPrefix: string | null;
  surface: string;
  endpoint: string;
  model: string | null;
  status: number;
  code: string;
  stream: boolean;
  inputTokens: number;
  outputTokens: number;
  costUsd: string | null;
  tokensCharged: number;
  durationMs: number;
  clientGone: boolean;
  /** The tokens were estimated, not read from the provider's usage (README, Usage checker) … */
  estimated: boolean;
  /** … and why (the record's `estimateReason`); null when they were read. */
  estimateReason: string | null;
  /** Sends to the provider, retries included (0: none). */
  attempts: number;
  /** The provider credential's name (never its value) whose answer was passed on, else of the last send; null without a send. */
  credential: string | null;
}

export interface AccessLog {
  write(line: AccessLine): void;
  /** Writes out what is batched; resolves once written, or after a wait for a stdout not being read. */
  flush(): Promise<void>;
}

const str = (s: string | null): string => (s === null ? 'null' : SAFE.test(s) ? `"${s}"` : JSON.stringify(s));
/**
 * The line's last fields, `attempts` and `credential`, and its end. Credential names are few and
 * fixed by the config: a call sent once (nearly all) takes its credential's text built the first
 * time, not put together on every line.
 */
const sentOnceTails = new Map<string, string>();
function tail(attempts: number, credential: string | null): string {
  if (attempts !== 1 || credential === null) return `,"attempts":${attempts},"credential":${str(credential)}}\n`;
  let text = sentOnceTails.get(credential);
  if (text === undefined) sentOnceTails.set(credential, (text = `,"attempts":1,"credential":${str(credential)}}\n`));
  return text;
}
/**
 * `new Date(ms).toISOString()` for the access log's `time`, from the current second's text: V8's
 * toISOString formats in C++ and looks up the local time zone's offset on every call (≈ 2 µs of a
 * call at c=1 under `perf`, bench/README.md 2026-11-27); the lines of one second share all but
 * the milliseconds. Falls back to toISOString for anything but a whole millisecond in years
 * 0000–9999.
 */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    const text = new Date(ms).toISOString();
    if (text.length !== 24 || !Number.isInteger(ms)) return text;
    isoSecond = second;
    isoPrefix = text.slice(0, 20);
    return text;
  }
  const milli = ms - second * 1000;
  if (!Number.isInteger(milli)) return new Date(ms).toISOString();
  return `${isoPrefix}${String(milli).padStart(3, '0')}Z`;
}
let isoSecond = NaN;
let isoPrefix = '';

/**
 * The text JSON gives a duration in whole microseconds, as milliseconds (`String(us / 1000)`:
 * `12.3`, `0.045`, `7`), put together from integers: a fraction's shortest decimal form is the
 * dearest number to print (V8's NumberToString, ≈ 1 µs of a call at c=1 under `perf`).
 */
export function millisecondsText(ms: number): string {
  const us = Math.round(ms * 1000);
  // Exactly a whole number of microseconds (its shortest form has at most three decimals).
  if (!(us >= 0 && us <= 1e15) || us / 1000 !== ms) return String(ms);
  let fraction = us % 1000;
  const whole = (us - fraction) / 1000;
  if (fraction === 0) return `${whole}`;
  let digits = 3;
  while (fraction % 10 === 0) {
    fraction /= 10;
    digits--;
  }
  return `${whole}.${String(fraction).padStart(digits, '0')}`;
}

/** Strings that need no escaping in JSON (ids, prefixes, model names as usually written). */
const SAFE = /^[\w.:\-/@+ ]*$/;

/**
 * The line, built field by field in interface.md's order: measured ≈ 1 µs less per request
 * than JSON.stringify of the object (bench/observe-cost.ts). Strings that might need escaping
 * still go through JSON.stringify.
 */
export function lineText(l: AccessLine): string {
  return `{"time":"${l.time}","requestId":${str(l.requestId)},"keyPrefix":${str(l.keyPrefix)},"surface":"${l.surface}","endpoint":"${l.endpoint}","model":${str(l.model)},"status":${l.status},"code":"${l.code}","stream":${l.stream},"inputTokens":${l.inputTokens},"outputTokens":${l.outputTokens},"costUsd":${str(l.costUsd)},"tokensCharged":${l.tokensCharged},"durationMs":${millisecondsText(l.durationMs)},"clientGone":${l.clientGone},"estimated":${l.estimated},"estimateReason":${str(l.estimateReason)}${tail(l.attempts, l.credential)}`;
}

/** The lines at the start of `text` within `chars` characters; the first line alone when it is longer. */
function wholeLines(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const nl = text.lastIndexOf('\n', chars - 1);
  return text.slice(0, nl >= 0 ? nl + 1 : text.indexOf('\n') + 1 || text.length);
}

/** More than this many characters waiting to be written (a stdout nobody reads) and lines are dropped, not held. */
const MAX_BUFFERED = 16 * 1024 * 1024;

/**
 * The least time between two writes: every write is a system call and, for a reader, a wake-up.
 * Measured with `perf` at 5,000 plain calls/s (stdout to a file, bench/README.md, 2026-11-27): the
 * access log's share of a call went from 5.3 µs with one write per event-loop turn (of it 4.2 µs
 * in the file system) to 2.8 µs with writes 10 ms apart. After a quiet spell the batch goes out at
 * the end of the turn instead: a timer of its own would cost a line its own event-loop iteration
 * (≈ 28,000 instructions per call more in bench/instructions.ts, where calls come one by one).
 */
const BATCH_MS = 10;

/** How long `flush` waits for a stdout that is not being read before the process goes on. */
const FLUSH_WAIT_MS = 2_000;

export interface AccessLogOptions {
  /** Characters waiting past which lines are dropped (default MAX_BUFFERED). */
  maxBuffered?: number;
  /** Bytes per write at most, cut at line ends (default: 4096 in a cluster worker, else unbounded). */
  maxWrite?: number;
  /** The least ms between two writes (default BATCH_MS). */
  batchMs?: number;
  /** How long `flush` waits for the last write (default FLUSH_WAIT_MS). */
  flushWaitMs?: number;
}

/**
 * The access log on stdout (`process.stdout`: a pipe or socket is written through libuv, which
 * writes at once and queues only what the reader has not taken yet; a file or a terminal is
 * written synchronously). A request only appends its line to the batch; the batch is written at
 * the end of the event-loop turn, or BATCH_MS after the last write when that was sooner. Before,
 * pino's asynchronous destination handed every write to libuv's thread pool: measured with the
 * log on and off at 6,000 plain calls/s, the log cost ≈ 14 µs of CPU per call that way, ≈ 8 µs
 * with writes 10 ms apart (bench/README.md, 2026-11-27).
 *
 * One write is in flight at a time; what comes meanwhile waits in the batch. In a cluster worker
 * each write is whole lines of at most PIPE_BUF (4096) bytes: atomic on a pipe, so the lines of
 * workers sharing one stdout never interleave. A stdout that fails (its reader closed it) is
 * reported once on stderr, and lines are dropped from then on: the gateway goes on serving.
 */
export function stdoutAccessLog(out: NodeJS.WritableStream = process.stdout, options: AccessLogOptions = {}): AccessLog {
  const maxBuffered = options.maxBuffered ?? MAX_BUFFERED;
  const maxWrite = options.maxWrite ?? (cluster.isWorker ? 4096 : Infinity);
  const flushWaitMs = options.flushWaitMs ?? FLUSH_WAIT_MS;
  const batchMs = options.batchMs ?? BATCH_MS;
  let batch = '';
  /** The batch's write is due (at the end of this turn, or BATCH_MS after the last write). */
  let scheduled = false;
  let lastWrite = -Infinity;
  let writing = false;
  /** The write in flight was cut to maxWrite: the rest of its batch goes next, without waiting. */
  let cut = false;
  let failed = false;
  let dropped = 0;
  /** Told once nothing is left to write (flush). */
  let idle: (() => void) | null = null;
  const fail = (err: Error): void => {
    if (failed) return;
    failed = true;
    batch = '';
    log('error', 'access_log_failed', { error: err.message });
    idle?.();
  };
  out.on('error', fail);
  const writeNext = (): void => {
    if (writing || failed) return;
    if (batch.length === 0) return idle?.();
    let text = batch;
    if (text.length > maxWrite || (maxWrite !== Infinity && Buffer.byteLength(text) > maxWrite)) {
      // Whole lines that fit: counted in characters (no fewer bytes than characters), else in
      // UTF-16 units of at most 3 bytes each (4 per surrogate pair); a longer line goes alone.
      text = wholeLines(text, maxWrite);
      if (Buffer.byteLength(text) > maxWrite) text = wholeLines(text, Math.floor(maxWrite / 3));
    }
    cut = text.length < batch.length;
    batch = batch.slice(text.length);
    lastWrite = performance.now();
    writing = true;
    out.write(text, written);
  };
  const onDue = (): void => {
    scheduled = false;
    writeNext();
  };
  // A quiet log writes at the end of the turn (no wake-up of its own); a busy one at most once
  // per BATCH_MS.
  const schedule = (): void => {
    if (scheduled || batch.length === 0) return;
    scheduled = true;
    const wait = lastWrite + batchMs - performance.now();
    if (wait <= 0) setImmediate(onDue);
    else setTimeout(onDue, wait);
  };
  const written = (err?: Error | null): void => {
    writing = false;
    if (err) fail(err);
    else if (cut || idle !== null) writeNext();
    else schedule();
  };
  return {
    write(line) {
      if (failed) return;
      if (batch.length > maxBuffered) {
        if (dropped++ === 0) log('warn', 'access_log_dropping', { reason: 'stdout is not being read fast enough' });
        return;
      }
      batch += lineText(line);
      schedule();
    },
    flush() {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, flushWaitMs);
        function done(): void {
          clearTimeout(timer);
          idle = null;
          resolve();
        }
        idle = done;
        if (failed || (!writing && batch.length === 0)) return done();
        writeNext();
      });
    },
  };
}
