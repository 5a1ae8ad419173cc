// Loaded into a server under test with `node --import bench/loop-delay-preload.mjs …`: samples
// the event loop's delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and, on SIGUSR2,
// writes what it saw since the last SIGUSR2 to stderr as one line, then starts afresh. The
// server's own code is not touched, so the same preload measures any build.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
process.on('SIGUSR2', () => {
  const ms = (ns) => Number((ns / 1e6).toFixed(3));
  const report = { max: ms(histogram.max), p99: ms(histogram.percentile(99)), p50: ms(histogram.percentile(50)), samples: histogram.count };
  process.stderr.write(`loop-delay ${JSON.stringify(report)}\n`);
  histogram.reset();
});
