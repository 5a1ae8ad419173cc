/** Holds, limits, exact sums, crashes and faults of the gateway's own, on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['holds-released-every-ending', 'concurrency-limit', 'rate-limit-burst', 'concurrent-exact-sums', 'crash-settles-holds', 'error-path', 'unowned-fault']);
