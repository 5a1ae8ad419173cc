// Loaded into a server under test with `node --import bench/heap-sample-preload.mjs …`: on the
// first SIGUSR2 starts V8's sampling heap profiler, keeping the objects collected since (so the
// profile is every sampled allocation, not what is still alive); on the next, stops it and
// writes the profile to HEAP_SAMPLE_FILE. The server's own code is not touched.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const interval = Number(process.env.HEAP_SAMPLE_INTERVAL || 64);
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.startSampling', { samplingInterval: interval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    return;
  }
  sampling = false;
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err) throw err;
    writeFileSync(process.env.HEAP_SAMPLE_FILE, JSON.stringify(result.profile));
  });
});
