/**
 * A recording pass-through in front of tollgate: it forwards every request and answer unchanged
 * (method, path, headers, body, streamed bytes as they come) and notes what the client asked for
 * and what tollgate answered. Calls tollgate refuses never reach the provider, so only this view
 * shows them (Claude Code's `count_tokens` and reachability probes, for example).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';

export interface WireCall {
  seq: number;
  method: string;
  url: string;
  /** The request headers, the credential ones left out. */
  headers: Record<string, string | string[]>;
  /** The request body as sent (text). */
  body: string;
  status: number;
  /** tollgate's `error.code` when it answered an error of its own, else null. */
  code: string | null;
  /** The answer's x-request-id (for a forwarded call, the provider's). */
  requestId: string | null;
}

export interface Recorder { url: string; calls: WireCall[]; close(): Promise<void> }

/** Bytes of an error answer kept to read its code. */
const ERROR_PEEK = 4096;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host']);
const CREDENTIALS = new Set(['authorization', 'x-api-key']);

export async function startRecorder(target: string): Promise<Recorder> {
  const upstream = new URL(target);
  const calls: WireCall[] = [];
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    const shown = Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIALS.has(name)));
    const call: WireCall = { seq: calls.length + 1, method: req.method ?? '', url: req.url ?? '', headers: shown, body: '', status: 0, code: null, requestId: null };
    calls.push(call);
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      call.status = answer.statusCode ?? 0;
      const id = answer.headers['x-request-id'];
      call.requestId = typeof id === 'string' ? id : null;
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
      res.writeHead(call.status, out);
      let peek = '';
      answer.on('data', (chunk: Buffer) => {
        if (call.status >= 400 && peek.length < ERROR_PEEK) peek += chunk.toString('utf8');
        res.write(chunk);
      });
      answer.on('end', () => {
        if (peek !== '') call.code = errorCode(peek);
        res.end();
      });
      answer.on('error', () => res.destroy());
    });
    forward.on('error', (err) => {
      call.status = 599;
      call.code = `recorder: ${err.message}`;
      res.destroy();
    });
    req.on('data', (chunk: Buffer) => {
      call.body += chunk.toString('utf8');
      forward.write(chunk);
    });
    req.on('end', () => forward.end());
    res.on('close', () => {
      if (!res.writableFinished) forward.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    calls,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function errorCode(text: string): string | null {
  try {
    const code = JSON.parse(text)?.error?.code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}
