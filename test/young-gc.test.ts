/**
 * The gateway asks V8 for a young-generation collection after every YOUNG_GC_BYTES of provider
 * body passed on, so that dead socket buffers are freed as a stream goes rather than once 64 MiB
 * of them have piled up (src/forward/young-gc.ts). Checked with V8's own record of collections.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import t from 'tap';
import { YOUNG_GC_BYTES, notePassed } from '../src/forward/young-gc.js';

/** Young collections that V8 reports while `run` goes on (entries arrive asynchronously). */
async function youngCollections(run: () => Promise<void>): Promise<number> {
  let count = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry.detail as { kind?: number } | undefined)?.kind === constants.NODE_PERFORMANCE_GC_MINOR) count++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  await run();
  // A collection's entry reaches the observer through immediates (Node's, then perf_hooks'), not
  // by a time: a 50 ms timer alone could fire first on a loaded machine and lose the last one.
  for (let turn = 0; turn < 4; turn++) await nextTurn();
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  return count;
}

t.test('a young collection follows every YOUNG_GC_BYTES passed on, and only then', async (t) => {
  const quiet = await youngCollections(async () => {
    for (let i = 0; i < 10; i++) {
      notePassed(YOUNG_GC_BYTES / 20);
      await nextTurn();
    }
  });
  const busy = await youngCollections(async () => {
    for (let i = 0; i < 10; i++) {
      notePassed(YOUNG_GC_BYTES);
      await nextTurn();
    }
  });
  t.comment(`young collections: ${quiet} for half of YOUNG_GC_BYTES, ${busy} for ten times it`);
  t.ok(busy >= 10, 'one per YOUNG_GC_BYTES, each in the turn after the bytes were noted');
  t.ok(busy - quiet >= 10, 'and not what the test itself would have caused');
});
