import { DEFAULT_RESPONSE_RETENTION_DAYS } from '../../config/load.js';
import type { GatewayStore } from '../../domain/interfaces.js';
import { RedisAdmission } from './admission.js';
import { connect } from './connection.js';
import { DAY_MS, heartbeat } from './names.js';

export { COMMAND_TIMEOUT_MS } from './connection.js';
export { OWNER_TTL_MS } from './liveness.js';
export { slotOf } from './names.js';

/** The Redis/Valkey backend: any number of gateway hosts share one store and behave as one (./names.ts has its layout). */
export class RedisStore extends RedisAdmission implements GatewayStore {
  readonly backend = 'redis' as const;

  /**
   * Connects to `url` (connection.ts); `responseRetentionDays`: the TTL of the owner records its
   * settlements write.
   */
  static async open(url: string, storeOptions: { responseRetentionDays?: number } = {}): Promise<RedisStore> {
    const { client, single } = await connect(url);
    return new RedisStore(client, single, String((storeOptions.responseRetentionDays ?? DEFAULT_RESPONSE_RETENTION_DAYS) * DAY_MS));
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.retries.close();
    // The heartbeat's delete and QUIT go out together (commands on one connection are answered
    // in order): one round trip at shutdown, not two.
    const owner = this.owner;
    this.owner = null;
    const forgotten = owner === null ? null : this.client.del(heartbeat(owner)).catch(() => undefined);
    await Promise.all([forgotten, this.client.quit().catch(() => this.client.disconnect())]);
  }
}
