/**
 * `limits.maxConnections` caps the client connections one process keeps open: a connection over
 * the cap is closed as it arrives, without an answer, while those already open keep working; once
 * one of them closes, a new connection is served again.
 */
import type { Socket } from 'node:net';
import t from 'tap';
import { closed, open, parseResponses, portOf, readUntil } from './helpers/raw-http.js';
import { defaultConfig, startGateway } from './helpers/harness.js';

const CAP = 5;
const USAGE_PAGE = 'GET /usage HTTP/1.1\r\nhost: x\r\n\r\n';
const answered = (d: Buffer): boolean => parseResponses(d).responses.length === 1;

t.test('connections over limits.maxConnections are closed at once; the open ones keep working', async (t) => {
  const gw = await startGateway(t, {
    config: (url) => ({ ...defaultConfig(url), limits: { maxConnections: CAP } }),
  });
  const port = portOf(gw.base);
  const held: Socket[] = [];
  for (let i = 0; i < CAP; i++) {
    const socket = await open(port);
    socket.write(USAGE_PAGE);
    await readUntil(socket, answered); // the server has accepted it and answered on it
    held.push(socket);
  }

  const extra = await open(port);
  const got: Buffer[] = [];
  extra.on('data', (d: Buffer) => got.push(d));
  extra.write(USAGE_PAGE);
  await closed(extra);
  t.equal(Buffer.concat(got).length, 0, 'the connection over the cap is closed without an answer');

  held[0]!.write(USAGE_PAGE);
  t.equal(parseResponses(await readUntil(held[0]!, answered)).responses[0]!.status, 200, 'an open connection keeps working');

  held.pop()!.destroy();
  // The server counts the closed connection out when it sees it close: until then, retry.
  let served = false;
  for (const deadline = Date.now() + 10_000; !served && Date.now() < deadline;) {
    const socket = await open(port);
    socket.write(USAGE_PAGE);
    served = await readUntil(socket, answered).then(() => true, () => false);
    socket.destroy();
  }
  t.ok(served, 'once one closed, a new connection is served');
  for (const socket of held) socket.destroy();
});
