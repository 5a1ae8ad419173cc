/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and prints where the time went:
 *   1. the functions with the most self time, with file:line (dist/ mapped back to src/ through
 *      the source maps);
 *   2. self time by area (node internals, undici, lmdb, each tollgate source file, GC, idle);
 *   3. tollgate's own functions by total (inclusive) time.
 *
 *   4. with function names after N: the caller chains of those functions' self time.
 *
 *   SKIP_MS=2000 node --import tsx bench/top-functions.ts FILE.cpuprofile [N] [FUNCTION …]
 *
 * SKIP_MS leaves out the first milliseconds of the profile (start-up).
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT } from './lib.js';

export interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

interface Fn { name: string; where: string; area: string; ours: boolean; self: number; total: number }

const maps = new Map<string, SourceMap | null>();
function sourceMapOf(file: string): SourceMap | null {
  let map = maps.get(file);
  if (map === undefined) {
    map = null;
    const mapFile = `${file}.map`;
    if (existsSync(mapFile)) {
      try {
        map = new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')));
      } catch { /* unreadable map: keep dist locations */ }
    }
    maps.set(file, map);
  }
  return map;
}

/** "src/server.ts:97" for tollgate's code (through its source map), "node:internal/…:12" etc. otherwise. */
export function locate(frame: CallFrame): { where: string; area: string; ours: boolean } {
  const { url, lineNumber, columnNumber } = frame;
  if (url === '') return { where: '(native)', area: special(frame.functionName) ?? 'V8 builtins / native', ours: false };
  if (url.startsWith('node:')) return { where: `${url}:${lineNumber + 1}`, area: 'node internals', ours: false };
  let file = url;
  if (url.startsWith('file://')) file = fileURLToPath(url);
  const rel = relative(ROOT, file);
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(rel);
  if (pkg) return { where: `${rel.slice(rel.lastIndexOf('node_modules/'))}:${lineNumber + 1}`, area: pkg[1]!, ours: false };
  if (rel.startsWith('dist/')) {
    const map = sourceMapOf(file);
    const entry = map?.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
    if (entry?.originalSource !== undefined && entry.originalLine !== undefined) {
      const original = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : resolve(dirname(file), entry.originalSource);
      const src = relative(ROOT, original);
      return { where: `${src}:${entry.originalLine + 1}`, area: src, ours: true };
    }
    return { where: `${rel}:${lineNumber + 1}`, area: rel, ours: true };
  }
  return { where: `${rel}:${lineNumber + 1}`, area: rel, ours: false };
}

function special(name: string): string | undefined {
  if (name === '(idle)') return 'idle';
  if (name === '(garbage collector)') return 'GC';
  if (name === '(program)') return 'program (native, unattributed)';
  if (name === '(root)') return 'root';
  return undefined;
}

export interface Analysis {
  fns: Fn[];
  areas: Map<string, number>;
  totalMs: number;
  busyMs: number;
  /** The call chain of a sample, leaf first (for `callers`). */
  chainOf(sampleIndex: number): Fn[];
  samples: { index: number; dt: number }[];
}

/**
 * `fromUs`, `toUs`: ignore samples taken outside this window (µs on the profile's clock, which on
 * Linux is CLOCK_MONOTONIC like process.hrtime, so another process can name the moment its
 * load started and ended); start-up, warm-up and shut-down stay out of the numbers.
 */
export function analyse(profile: Profile, fromUs = 0, toUs = Infinity): Analysis {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const fnOfNode = new Map<number, Fn>();
  const fns = new Map<string, Fn>();
  for (const node of profile.nodes) {
    const f = node.callFrame;
    const key = `${f.functionName}|${f.url}|${f.lineNumber}|${f.columnNumber}`;
    let fn = fns.get(key);
    if (fn === undefined) {
      const loc = locate(f);
      fn = { name: f.functionName || '(anonymous)', ...loc, self: 0, total: 0 };
      fns.set(key, fn);
    }
    fnOfNode.set(node.id, fn);
  }
  // timeDeltas[i] is the time between sample i-1 and sample i: charge it to sample i-1.
  const n = profile.samples.length;
  let totalUs = 0;
  const seen = new Set<Fn>();
  const at = new Float64Array(n);
  let clock = profile.startTime;
  for (let i = 0; i < n; i++) at[i] = clock += profile.timeDeltas[i]!;
  const delta = (i: number): number => (i + 1 < n && at[i]! >= fromUs && at[i]! < toUs ? profile.timeDeltas[i + 1]! : 0);
  for (let i = 0; i < n; i++) {
    const dt = delta(i);
    if (dt <= 0) continue;
    totalUs += dt;
    let id: number | undefined = profile.samples[i]!;
    fnOfNode.get(id)!.self += dt;
    seen.clear();
    while (id !== undefined) {
      const fn = fnOfNode.get(id)!;
      if (!seen.has(fn)) {
        seen.add(fn);
        fn.total += dt;
      }
      id = parent.get(id);
    }
  }
  const areas = new Map<string, number>();
  for (const fn of fns.values()) areas.set(fn.area, (areas.get(fn.area) ?? 0) + fn.self);
  const idle = [...fns.values()].filter((f) => f.name === '(idle)').reduce((s, f) => s + f.self, 0);
  const chainOf = (i: number): Fn[] => {
    const chain: Fn[] = [];
    for (let id: number | undefined = profile.samples[i]!; id !== undefined; id = parent.get(id)) chain.push(fnOfNode.get(id)!);
    return chain;
  };
  const samples = profile.samples.map((_, i) => ({ index: i, dt: delta(i) }));
  return { fns: [...fns.values()], areas, totalMs: totalUs / 1000, busyMs: (totalUs - idle) / 1000, chainOf, samples };
}

/** The most frequent caller chains (depth `depth`) of the self time of functions named `name`. */
export function callers(a: Analysis, name: string, depth = 8, top = 6): string {
  const chains = new Map<string, number>();
  let all = 0;
  for (const { index, dt } of a.samples) {
    const chain = a.chainOf(index);
    if (chain[0]?.name !== name) continue;
    all += dt;
    const key = chain.slice(1, depth + 1).map((f) => `${f.name} (${f.where})`).join('\n      ← ');
    chains.set(key, (chains.get(key) ?? 0) + dt);
  }
  const out = [`callers of ${name}: ${(all / 1000).toFixed(0)} ms self`];
  for (const [key, us] of [...chains].sort((x, y) => y[1] - x[1]).slice(0, top)) {
    out.push(`  ${((us / all) * 100).toFixed(0).padStart(3)}%  ← ${key}`);
  }
  return out.join('\n');
}

export function printReport(profile: Profile, top = 25, callersOf: string[] = [], fromUs = 0, toUs = Infinity): string {
  const analysis = analyse(profile, fromUs, toUs);
  const { fns, areas, totalMs, busyMs } = analysis;
  const pct = (us: number) => `${((us / 1000 / busyMs) * 100).toFixed(1)}%`.padStart(6);
  const ms = (us: number) => (us / 1000).toFixed(0).padStart(7);
  const out: string[] = [];
  out.push(`profile: ${totalMs.toFixed(0)} ms analysed, ${busyMs.toFixed(0)} ms not idle (percentages are of the non-idle time)`);
  out.push('', `top ${top} functions by self time`, '  self ms   self  total  function  (location)');
  for (const f of fns.filter((x) => x.name !== '(idle)').sort((a, b) => b.self - a.self).slice(0, top)) {
    out.push(`  ${ms(f.self)} ${pct(f.self)} ${pct(f.total)}  ${f.name}  (${f.where})`);
  }
  out.push('', 'self time by area', '  self ms   self  area');
  for (const [area, us] of [...areas].filter(([a]) => a !== 'idle').sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    out.push(`  ${ms(us)} ${pct(us)}  ${area}`);
  }
  out.push('', "tollgate's own functions by total (inclusive) time", ' total ms  total   self  function  (location)');
  for (const f of fns.filter((x) => x.ours).sort((a, b) => b.total - a.total).slice(0, top)) {
    out.push(`  ${ms(f.total)} ${pct(f.total)} ${pct(f.self)}  ${f.name}  (${f.where})`);
  }
  for (const name of callersOf) out.push('', callers(analysis, name));
  return out.join('\n');
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write('usage: node --import tsx bench/top-functions.ts FILE.cpuprofile [N] [FUNCTION …]\n');
    process.exit(2);
  }
  const top = Number(process.argv[3] ?? 25);
  const callersOf = process.argv.slice(4);
  const skipMs = Number(process.env.SKIP_MS || 0);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  process.stdout.write(`${printReport(profile, top, callersOf, profile.startTime + skipMs * 1000)}\n`);
}
