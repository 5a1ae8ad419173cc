// Loaded into a server under test (NODE_OPTIONS="--expose-gc --import=…/memory-preload.mjs"): on
// SIGUSR2 it runs a full garbage collection and writes the process's memory to stderr as one line,
// `memory {"rss":…,"heapUsed":…,"external":…}` (bytes). Live memory after a full collection shows
// a leak that RSS hides behind the heap the engine keeps committed.
process.on('SIGUSR2', () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const { rss, heapUsed, external } = process.memoryUsage();
  process.stderr.write(`memory ${JSON.stringify({ rss, heapUsed, external })}\n`);
});
