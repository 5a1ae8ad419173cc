import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Observer } from '../observe/call.js';
import { GATEWAY_ERRORS, rawErrorResponse, type GatewayErrorCode } from './errors.js';
import { nextRequestId } from './request-id.js';

/**
 * The server's 'clientError' hook: where Node's HTTP parser refuses a request (a header with a
 * NUL or a folded line — a key pasted with its line break —, bad chunked framing, a head over
 * `limits.maxHeaderBytes`) or a request misses its time limit, the client gets the gateway's
 * error envelope instead of Node's bare status line, then the connection is closed.
 *
 * Nothing is written when the socket can no longer take it or when a response has begun and
 * not ended: a status line in the middle of a response would corrupt it, so the connection is
 * only closed. Node's own default (lib/_http_server.js, socketOnError) also closes without an
 * answer when the response before has ended but is not yet flushed (a pipelined request after
 * a refused one), losing that response's unsent bytes; here the answer follows it instead.
 * Each answer is counted in the metrics and written to the access log like any other.
 * `extraHeader`: a header every answer of this server carries (`x-tollgate-mock`).
 */
export function clientErrorHandler(observer: Observer, extraHeader?: readonly [string, string]): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    // `_httpMessage` is the response in progress on this socket, as Node's default handler reads it.
    const inProgress = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    const midResponse = inProgress !== undefined && inProgress !== null && inProgress.headersSent && !inProgress.writableEnded;
    // The client ended its side in the body of a request whose head was read (`incoming`, the
    // request the parser is filling): that request has its own answer and its own line already
    // (499 client_gone, or the refusal it got before its body came); it is not a second one.
    const incoming = (socket as Duplex & { parser?: { incoming?: { complete: boolean } | null } }).parser?.incoming;
    const bodyCut = err.code === 'HPE_INVALID_EOF_STATE' && incoming !== undefined && incoming !== null && !incoming.complete;
    if (err.code === 'ECONNRESET' || !socket.writable || midResponse || bodyCut) {
      socket.destroy();
      return;
    }
    const code = codeFor(err);
    const requestId = nextRequestId();
    socket.end(rawErrorResponse(code, requestId, extraHeader), 'latin1');
    // Close once the answer is flushed, whatever the client keeps sending.
    (socket as Duplex & { destroySoon?: () => void }).destroySoon?.();
    observer.refused(requestId, GATEWAY_ERRORS[code][0], code);
  };
}

function codeFor(err: NodeJS.ErrnoException): GatewayErrorCode {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'headers_too_large';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'request_timeout';
    default:
      return 'malformed_request';
  }
}
