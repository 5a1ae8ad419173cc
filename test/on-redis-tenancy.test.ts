/** What one tenant of a shared provider account can see of it and of the gateway, on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['models-listed-per-key', 'provider-credential-refused', 'admin-csv-and-key-urls', 'request-head-limits', 'planted-members-billing', 'shared-account-references']);
