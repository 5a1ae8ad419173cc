/** Every price lever, the recorded answers, the catalogue's prices and its aliases and switches, on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['price-levers', 'recorded-answers-billed', 'catalogue-prices-table', 'catalogue-config']);
