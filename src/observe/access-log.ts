import pino from 'pino';
import { log } from '../log.js';

/** One access-log line: exactly these fields (interface.md), never a key or a body. */
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
}

export interface AccessLog {
  write(line: AccessLine): void;
  /** Writes out what is buffered, synchronously (before the process exits). */
  flush(): void;
}

/** More than this waiting to be written (a stdout nobody reads) and lines are dropped, not held. */
const MAX_BUFFERED = 16 * 1024 * 1024;

/**
 * The access log on stdout through pino's asynchronous destination (sonic-boom): `write` only
 * appends to a buffer, and the buffer goes out in one `fs.write` while the event loop runs, so
 * a request never waits for the terminal or pipe. Throughput with the log on and off:
 * README, Operating it.
 */
export function stdoutAccessLog(fd = 1): AccessLog {
  // Writes of whole lines, at most PIPE_BUF (4096) bytes each: atomic on a pipe, so the lines of
  // several cluster workers sharing one stdout never interleave mid-line.
  const dest = pino.destination({ fd, sync: false, maxLength: MAX_BUFFERED, maxWrite: 4096 });
  let dropped = 0;
  dest.on('drop', () => {
    if (dropped++ === 0) log('warn', 'access_log_dropping', { reason: 'stdout is not being read fast enough' });
  });
  return {
    write(line) {
      dest.write(`${JSON.stringify(line)}\n`);
    },
    flush() {
      try {
        dest.flushSync();
      } catch {
        // a closed stdout: nothing more can be said there
      }
    },
  };
}
