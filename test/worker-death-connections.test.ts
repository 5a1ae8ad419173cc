/**
 * A cluster worker that dies leaves no client connection hanging: the workers take connections
 * from the shared socket, not from the primary (test/helpers/worker-death.ts says why and how).
 * The single binary runs the same check in test/binary-smoke.test.ts.
 */
import t from 'tap';
import { startGateway } from './helpers/harness.js';
import { connectionsOutliveAStoppedWorker } from './helpers/worker-death.js';

t.test('connections opened while a worker is stopped, then killed, are all answered by the other', async (t) => {
  await connectionsOutliveAStoppedWorker(t, await startGateway(t, { workers: 2 }));
});
