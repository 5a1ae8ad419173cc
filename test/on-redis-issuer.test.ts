/** Live CLI changes, the usage API, the audit trail, the admin API, keys' amounts and names, and the SDKs, on the Redis backend (./helpers/on-redis.ts). */
import t from 'tap';
import { runOnRedis } from './helpers/on-redis.js';

t.setTimeout(20 * 60_000);
runOnRedis(t, ['cli-live-changes', 'usage-api', 'audit-trail', 'admin-api-operations', 'key-amounts-exact', 'key-names-printable', 'sdk-openai', 'sdk-anthropic']);
