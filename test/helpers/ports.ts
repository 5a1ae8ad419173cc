/**
 * Ports a test must name before anything listens on them: a port written into a config file or
 * TOLLGATE_PORT, a redis-server's --port, or a port that must stay closed (a provider nobody
 * serves).
 *
 * Why not a bind to port 0, closed again: tap runs test files side by side, and the kernel can
 * hand that port to another file's listener or outgoing connection in the gap. It hands out only
 * ports of its local range (`ip_local_port_range`) that way, so a port below that range can be
 * taken only by a bind that names it; the ports here are drawn at random below it and checked
 * free.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port the kernel hands out by itself (Linux's default range starts at 32768). */
function localRangeStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 0) return low;
  } catch {
    // Not Linux: take the default range.
  }
  return 32768;
}

const LOWEST = 10_000;
const BELOW = localRangeStart();

/** Whether a listener can take `port` on 127.0.0.1 right now (it is let go again). */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port on 127.0.0.1 that nothing listens on and that no bind to port 0 will be given. With
 * `alsoAt`, the port that far above it is free and below the range as well (a Redis Cluster
 * node's bus listens 10000 above its port).
 */
export async function unlistenedPort(alsoAt = 0): Promise<number> {
  const span = BELOW - alsoAt - LOWEST;
  if (span < 1_000) throw new Error(`the kernel's local port range starts at ${BELOW}: too few ports below it for tests`);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * span);
    if ((await canListen(port)) && (alsoAt === 0 || (await canListen(port + alsoAt)))) return port;
  }
  throw new Error(`no free port found between ${LOWEST} and ${BELOW}`);
}
