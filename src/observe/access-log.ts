import cluster from 'node:cluster';
import pino from 'pino';
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
  /** Writes out what is buffered, synchronously (before the process exits). */
  flush(): void;
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
/** Strings that need no escaping in JSON (ids, prefixes, model names as usually written). */
const SAFE = /^[\w.:\-/@+ ]*$/;

/**
 * The line, built field by field in interface.md's order: measured ≈ 1 µs less per request
 * than JSON.stringify of the object (bench/observe-cost.ts). Strings that might need escaping
 * still go through JSON.stringify.
 */
export function lineText(l: AccessLine): string {
  return `{"time":"${l.time}","requestId":${str(l.requestId)},"keyPrefix":${str(l.keyPrefix)},"surface":"${l.surface}","endpoint":"${l.endpoint}","model":${str(l.model)},"status":${l.status},"code":"${l.code}","stream":${l.stream},"inputTokens":${l.inputTokens},"outputTokens":${l.outputTokens},"costUsd":${str(l.costUsd)},"tokensCharged":${l.tokensCharged},"durationMs":${l.durationMs},"clientGone":${l.clientGone},"estimated":${l.estimated},"estimateReason":${str(l.estimateReason)}${tail(l.attempts, l.credential)}`;
}

/** More than this waiting to be written (a stdout nobody reads) and lines are dropped, not held. */
const MAX_BUFFERED = 16 * 1024 * 1024;

/**
 * The access log on stdout through pino's asynchronous destination (sonic-boom). A request only
 * appends its line to this turn's batch; the batch is handed to the destination once per
 * event-loop turn (setImmediate), which writes it with `fs.write` off the request path.
 * Measured (bench/observe-cost.ts): one `dest.write` per line cost ≈ 6–7 µs per request, most
 * of it sonic-boom measuring its growing buffer on every write; one per turn ≈ 2 µs (README,
 * Access log).
 *
 * In a cluster worker the batch is cut at line boundaries into writes of at most PIPE_BUF (4096)
 * bytes: atomic on a pipe, so the lines of workers sharing one stdout never interleave.
 */
export function stdoutAccessLog(fd = 1): AccessLog {
  const maxWrite = cluster.isWorker ? 4096 : 16_384;
  const dest = pino.destination({ fd, sync: false, maxLength: MAX_BUFFERED, maxWrite });
  let dropped = 0;
  dest.on('drop', () => {
    if (dropped++ === 0) log('warn', 'access_log_dropping', { reason: 'stdout is not being read fast enough' });
  });
  let batch = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const text = batch;
    batch = '';
    if (text.length <= maxWrite / 4) return void dest.write(text); // ≤ 4 bytes per UTF-16 unit
    // Whole lines, each write at most maxWrite bytes (as sonic-boom groups separate writes).
    let from = 0;
    while (from < text.length) {
      let to = Math.min(text.length, from + maxWrite / 4);
      if (to < text.length) {
        const nl = text.lastIndexOf('\n', to - 1);
        to = nl >= from ? nl + 1 : text.indexOf('\n', to) + 1 || text.length;
      }
      dest.write(text.slice(from, to));
      from = to;
    }
  };
  return {
    write(line) {
      batch += lineText(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush() {
      if (batch.length > 0) flush();
      try {
        dest.flushSync();
      } catch {
        // a closed stdout: nothing more can be said there
      }
    },
  };
}
