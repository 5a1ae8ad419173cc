/** Holds and concurrency, the rate burst, exact sums under load and a crash mid-stream, on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['holds-released-every-ending', 'concurrency-limit', 'rate-limit-burst', 'concurrent-exact-sums', 'crash-settles-holds']);
