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
    const store = new RedisStore(client, single, String((storeOptions.responseRetentionDays ?? DEFAULT_RESPONSE_RETENTION_DAYS) * DAY_MS));
    try {
      await store.identify();
    } catch (err) {
      client.disconnect();
      throw err;
    }
    return store;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.retries.close();
    const owner = this.owner;
    this.owner = null;
    if (owner !== null && this.single) {
      // The heartbeat's delete and QUIT in one pipeline: one write, answered in order, one round
      // trip at shutdown. Sent as two commands they went out in the wrong order (ioredis never
      // auto-pipelines QUIT, so it overtook the DEL queued for the next tick) and the server
      // closed before deleting: the heartbeat lived on for its TTL, and this process's calls
      // left in flight waited that long for the fleet.
      await this.client.pipeline().del(heartbeat(owner)).quit().exec().catch(() => this.client.disconnect());
      return;
    }
    if (owner !== null) await Promise.allSettled([this.client.del(heartbeat(owner))]);
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
