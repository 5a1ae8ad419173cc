import type { Config, Provider } from '../config/types.js';
import { startMockProvider, type MockProvider } from './provider.js';

/**
 * The variable the gateway reads every provider's credential from when it runs on the mock
 * provider, and the value it is given: the mock accepts any credential, and pointing every
 * provider at this one means no real credential variable is read, nor any secret sent.
 */
const MOCK_CREDENTIAL_ENV = 'TOLLGATE_MOCK_PROVIDER_KEY';
export const MOCK_PROVIDER_ENV: NodeJS.ProcessEnv = { [MOCK_CREDENTIAL_ENV]: 'mock-provider-credential' };

/**
 * The configuration with every provider served by the mock provider at `mockUrl`: same names,
 * auth headers, catalogue, prices and limits; each provider's origin the mock's, its path the
 * mock's `/v1`, its credential the mock's own variable (MOCK_PROVIDER_ENV).
 */
export function pointedAtMock(config: Config, mockUrl: string): Config {
  const origin = new URL(mockUrl).origin;
  const providers = new Map<string, Provider>();
  for (const [name, p] of config.providers) providers.set(name, { ...p, origin, basePath: '/v1', credentials: p.credentials.map((c) => ({ ...c, origin, basePath: '/v1', apiKeyEnv: MOCK_CREDENTIAL_ENV })) });
  const models = new Map([...config.models].map(([id, m]) => [id, { ...m, provider: providers.get(m.provider.name)! }]));
  const catalogProvider = { openai: providers.get(config.catalogProvider.openai.name)!, anthropic: providers.get(config.catalogProvider.anthropic.name)! };
  return { ...config, providers, models, catalogProvider };
}

/** A mock provider running in this process, and the configuration pointed at it. */
export interface OfflineProviders {
  mock: MockProvider;
  config: Config;
  /** The environment the gateway reads its provider credentials from (MOCK_PROVIDER_ENV). */
  env: NodeJS.ProcessEnv;
}

/**
 * Starts the mock provider in this process on 127.0.0.1 (an ephemeral port, nothing reachable
 * from elsewhere) and points every provider of `config` at it: `tollgate serve --mock` and
 * `tollgate demo` run on this.
 */
export async function offlineProviders(config: Config): Promise<OfflineProviders> {
  // Its model lists are the catalogue's entries, each in the list of its catalogue provider.
  const idsOf = (provider: Provider): string[] => [...config.models.values()].filter((m) => m.provider === provider).map((m) => m.id);
  const models = { openai: idsOf(config.catalogProvider.openai), anthropic: idsOf(config.catalogProvider.anthropic) };
  const mock = await startMockProvider({ host: '127.0.0.1', port: 0, record: false, models });
  return { mock, config: pointedAtMock(config, mock.url), env: MOCK_PROVIDER_ENV };
}
