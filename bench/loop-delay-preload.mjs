// Loaded into a server under test with `node --import bench/loop-delay-preload.mjs …`: samples
// the event loop's delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and the garbage
// collector's pauses and, on SIGUSR2, writes what it saw since the last SIGUSR2 to stderr as one
// line, then starts afresh. The server's own code is not touched, so the same preload measures
// any build.
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
let gcMax = 0;
let gcTotal = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcMax = Math.max(gcMax, entry.duration);
    gcTotal += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });
process.on('SIGUSR2', () => {
  const ms = (ns) => Number((ns / 1e6).toFixed(3));
  const report = {
    max: ms(histogram.max), p99: ms(histogram.percentile(99)), p50: ms(histogram.percentile(50)), samples: histogram.count,
    gcMax: Number(gcMax.toFixed(3)), gcTotal: Number(gcTotal.toFixed(3)),
  };
  process.stderr.write(`loop-delay ${JSON.stringify(report)}\n`);
  histogram.reset();
  gcMax = 0;
  gcTotal = 0;
});
