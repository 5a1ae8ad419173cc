/** The order of checks, billing on both surfaces, streams and stored responses, on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['order-of-checks', 'billing-credit', 'billing-token', 'stream-usage-injected', 'provider-cut-stream', 'client-gone-billed', 'response-ownership']);
