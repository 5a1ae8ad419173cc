/**
 * A provider that answers every call with an answer recorded against the real API
 * (test/fixtures/recorded/): the request's `replay` member names the recording
 * (`anthropic/anthropic-compaction.1`); `"stream": true` plays its `.chunks.txt`, one event per
 * line, framed as the provider frames it (an `event:` line named after the payload's `type` for
 * Responses and Messages; Chat Completions bare, ended by `data: [DONE]`); otherwise its `.json`
 * is the body. The gateway forwards the request unchanged, so the member reaches it.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const RECORDED = fileURLToPath(new URL('../fixtures/recorded/', import.meta.url));

export interface ReplayProvider {
  /** http://127.0.0.1:PORT */
  url: string;
  /** Bodies of the calls received, as sent. */
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The recording's events as the provider sends them on the wire. */
export function sseOf(path: string, lines: string[]): string {
  const chat = path.endsWith('/chat/completions');
  let out = '';
  for (const line of lines) {
    if (line.trim() === '') continue;
    const type = chat ? undefined : (JSON.parse(line) as { type?: string }).type;
    out += `${type === undefined ? '' : `event: ${type}\n`}data: ${line}\n\n`;
  }
  return chat ? `${out}data: [DONE]\n\n` : out;
}

export async function startReplayProvider(): Promise<ReplayProvider> {
  const requests: Record<string, unknown>[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (text += d));
    req.on('end', () => {
      const body = JSON.parse(text) as { replay?: string; stream?: boolean };
      requests.push(body);
      const name = body.replay!;
      if (body.stream === true) {
        const lines = readFileSync(`${RECORDED}${name}.chunks.txt`, 'utf8').split('\n');
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': `req_replay_${requests.length}` });
        res.end(sseOf(req.url!, lines));
      } else {
        const answer = readFileSync(`${RECORDED}${name}.json`);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length, 'x-request-id': `req_replay_${requests.length}` });
        res.end(answer);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
