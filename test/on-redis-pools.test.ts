/** Credential pools (choice, rests, retries, stored responses pinned, the SDKs) on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['pool-weights-affinity', 'pool-rests', 'pool-retries', 'pool-pinned-and-sdks']);
