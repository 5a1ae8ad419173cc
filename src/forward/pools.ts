import { Pool } from 'undici';
import type { Config, Provider } from '../config/types.js';

/** The name of a provider's one credential (`apiKeyEnv`), as owner records and logs name it. */
const DEFAULT_CREDENTIAL = 'default';

/** Everything needed to call one provider, built once at start-up. */
export interface Upstream {
  provider: Provider;
  pool: Pool;
  /** The provider's own credential header, from the environment variable the config names. */
  credential: readonly [string, string];
  /** That credential's name (never its value). */
  credentialName: string;
  /** False when the provider's credential variable is unset or empty: it is never called then. */
  usable: boolean;
  /** Headers the provider requires when the client did not send them. */
  defaults: readonly [string, string][];
}

/**
 * One undici Pool per provider: connections are kept alive and reused, and a slow or stuck
 * provider can only fill its own pool, never another provider's.
 */
export function buildUpstreams(config: Config, env: NodeJS.ProcessEnv = process.env): Map<string, Upstream> {
  const upstreams = new Map<string, Upstream>();
  for (const provider of config.providers.values()) {
    const secret = env[provider.apiKeyEnv] ?? '';
    upstreams.set(provider.name, {
      provider,
      pool: new Pool(provider.origin, {
        connections: config.limits.upstreamConnections,
        headersTimeout: config.limits.upstreamHeadersTimeoutMs,
        bodyTimeout: config.limits.upstreamBodyTimeoutMs,
        keepAliveTimeout: 30_000,
        connect: { timeout: 10_000 },
      }),
      usable: secret.length > 0,
      credentialName: DEFAULT_CREDENTIAL,
      credential: provider.auth === 'bearer' ? ['authorization', `Bearer ${secret}`] : ['x-api-key', secret],
      // Anthropic refuses a Messages call without a version; SDKs send one, curl users may not.
      defaults: provider.auth === 'x-api-key' ? [['anthropic-version', '2023-06-01']] : [],
    });
  }
  return upstreams;
}

/** Per provider, the calls waiting in its pool's queue for a connection (undici's pool stats). */
export function queuedCalls(upstreams: Map<string, Upstream>): Array<readonly [string, number]> {
  return [...upstreams.values()].map((u) => [u.provider.name, u.pool.stats.queued] as const);
}

export async function closeUpstreams(upstreams: Map<string, Upstream>): Promise<void> {
  await Promise.all([...upstreams.values()].map((u) => u.pool.close().catch(() => u.pool.destroy())));
}
