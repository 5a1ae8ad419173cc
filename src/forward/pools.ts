import { Pool } from 'undici';
import { credentialValue, missingCredentials } from '../config/load.js';
import type { Config, Provider } from '../config/types.js';
import { Credential, Rotation, type Clock, type RotationListener } from './rotation.js';

/** Everything needed to call one provider, built once at start-up. */
export interface Upstream {
  provider: Provider;
  /** Its credentials that have their key (the others are left out), taking turns. */
  rotation: Rotation;
  /** False when none of its credentials has its key: it is never called then. */
  usable: boolean;
  /** Headers the provider requires when the client did not send them. */
  defaults: readonly [string, string][];
}

/**
 * One undici Pool per credential (its own origin, `limits.upstreamConnections` connections):
 * connections are kept alive and reused, and a slow or stuck provider, or organisation, can only
 * fill its own pools. A credential whose variable is unset or empty (whitespace aside) is left
 * out (named at start-up); a provider left with none is never called.
 */
export function buildUpstreams(config: Config, env: NodeJS.ProcessEnv, clock: Clock, listener: RotationListener): Map<string, Upstream> {
  const upstreams = new Map<string, Upstream>();
  for (const provider of config.providers.values()) {
    const credentials: Credential[] = [];
    for (const c of provider.credentials) {
      const secret = credentialValue(env, c.apiKeyEnv);
      if (secret.length === 0) continue;
      const pool = new Pool(c.origin, {
        connections: config.limits.upstreamConnections,
        headersTimeout: config.limits.upstreamHeadersTimeoutMs,
        bodyTimeout: config.limits.upstreamBodyTimeoutMs,
        keepAliveTimeout: 30_000,
        connect: { timeout: 10_000 },
      });
      const header = provider.auth === 'bearer' ? ['authorization', `Bearer ${secret}`] as const : ['x-api-key', secret] as const;
      credentials.push(new Credential(provider.name, c.name, 1 << provider.credentials.indexOf(c), c.weight, pool, header, c.basePath));
    }
    upstreams.set(provider.name, {
      provider,
      rotation: new Rotation(credentials, clock, listener),
      usable: credentials.length > 0,
      // Anthropic refuses a Messages call without a version; SDKs send one, curl users may not.
      defaults: provider.auth === 'x-api-key' ? [['anthropic-version', '2023-06-01']] : [],
    });
  }
  return upstreams;
}

/** The credentials buildUpstreams left out, their variable unset or empty: never sent, so never in rotation. */
export function unsetCredentials(config: Config, env: NodeJS.ProcessEnv): Array<{ provider: string; name: string }> {
  return [...config.providers.values()].flatMap((p) => missingCredentials(p, env).map((c) => ({ provider: p.name, name: c.name })));
}

/** Every credential of every provider, in the config's order. */
export function allCredentials(upstreams: Map<string, Upstream>): Credential[] {
  return [...upstreams.values()].flatMap((u) => u.rotation.credentials);
}

/** Per provider, the calls waiting in its credentials' pools for a connection (undici's pool stats). */
export function queuedCalls(upstreams: Map<string, Upstream>): Array<readonly [string, number]> {
  return [...upstreams.values()].map((u) => [u.provider.name, u.rotation.credentials.reduce((n, c) => n + c.pool.stats.queued, 0)] as const);
}

export async function closeUpstreams(upstreams: Map<string, Upstream>): Promise<void> {
  await Promise.all(allCredentials(upstreams).map((c) => c.pool.close().catch(() => c.pool.destroy())));
}
