/**
 * Layers point down. Read from every file's `import … from`, `export … from` and `import(…)`:
 * - the domain (src/domain/: the records, the rules, the store's interfaces) is the ground floor;
 * - the store implements the domain and imports nothing of the pipeline above it (no rules from
 *   the admission stage, no types from the server);
 * - outside src/store/, only the wiring (src/server.ts) and the command line (src/cli/) import
 *   the store, and only its door, src/store/store.ts: everything else uses the interfaces;
 * - nothing under src/ outside src/cli/ imports from src/cli/ (the admin API takes its key view
 *   from src/issuer/, as the command line does);
 * - the store is in a folder per backend.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The project files a source file imports (paths relative to the repository, `.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*'([^']+)'/gms),
    ...text.matchAll(/^\s*import\s*'([^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((m) => m[1]!);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => relative(ROOT, resolve(dirname(file), s)).replace(/\.js$/, '.ts'));
}

const graph = new Map(filesUnder(SRC).map((file) => [relative(ROOT, file), importsOf(file)]));
const edges = [...graph].flatMap(([from, tos]) => tos.map((to) => [from, to] as const));
const under = (path: string, dir: string): boolean => path.startsWith(`src/${dir}/`);

t.test('the graph is read: every source file is found and its imports resolve to files', async (t) => {
  t.ok(graph.size > 50, `${graph.size} source files`);
  t.ok(edges.length > 200, `${edges.length} imports`);
  const dangling = edges.filter(([, to]) => !graph.has(to));
  t.same(dangling, [], 'every import names a source file');
  t.ok(edges.some(([from, to]) => from === 'src/cli/common.ts' && to === 'src/store/store.ts'), 'a known import is seen (the command line opens the store)');
});

t.test('nothing outside the command line imports from it', async (t) => {
  t.same(edges.filter(([from, to]) => !under(from, 'cli') && under(to, 'cli')), []);
});

t.test('only the wiring and the command line import the store, and only its door', async (t) => {
  const outside = edges.filter(([from, to]) => !under(from, 'store') && under(to, 'store'));
  t.same(outside.filter(([from]) => from !== 'src/server.ts' && !under(from, 'cli')), [], 'no other module imports src/store/');
  t.same(outside.filter(([, to]) => to !== 'src/store/store.ts'), [], 'those that do import src/store/store.ts only');
  t.same(edges.filter(([from, to]) => from === 'src/forward/exchange.ts' && under(to, 'store')), [], 'the exchange reaches the ledger through its interface');
});

t.test('the domain is the ground floor', async (t) => {
  const allowed = (to: string): boolean => under(to, 'domain') || to === 'src/config/types.ts';
  t.same(edges.filter(([from, to]) => under(from, 'domain') && !allowed(to)), [], 'it imports only itself and the endpoint names');
  for (const name of ['types.ts', 'rules.ts', 'interfaces.ts']) t.ok(graph.has(`src/domain/${name}`), `src/domain/${name}`);
});

t.test('the store imports nothing of the pipeline above it', async (t) => {
  const allowed = (to: string): boolean => under(to, 'store') || under(to, 'domain') || to === 'src/log.ts' || to === 'src/config/load.ts';
  t.same(edges.filter(([from, to]) => under(from, 'store') && !allowed(to)), []);
});

t.test('the store is in a folder per backend, a file per role, none of them long', async (t) => {
  for (const backend of ['lmdb', 'redis']) {
    for (const role of ['admission', 'ledger', 'issuer', 'usage', 'liveness', 'store']) t.ok(graph.has(`src/store/${backend}/${role}.ts`), `src/store/${backend}/${role}.ts`);
  }
  t.ok(graph.has('src/store/lmdb/open.ts') && graph.has('src/store/redis/connection.ts'), 'opening apart: lmdb/open.ts, redis/connection.ts');
  const across = edges.filter(([from, to]) => (under(from, 'store/lmdb') && under(to, 'store/redis')) || (under(from, 'store/redis') && under(to, 'store/lmdb')));
  t.same(across, [], 'neither backend imports from the other');
  const long = [...graph.keys()].filter((file) => under(file, 'store')).map((file) => [file, readFileSync(join(ROOT, file), 'utf8').split('\n').length] as const).filter(([, lines]) => lines > 400);
  t.same(long, [], 'no file of the store over 400 lines');
});
