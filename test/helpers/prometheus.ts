/** Prometheus text format → series: `name{a="x",b="y"}` (labels as written) → value. */
export function parseMetrics(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a metric line: ${line}`);
    series.set(m[1]! + (m[2] ?? ''), Number(m[3]));
  }
  return series;
}

/** The labels of a series as an object. */
export function labelsOf(series: string): Record<string, string> {
  const out: Record<string, string> = {};
  const body = /\{(.*)\}$/.exec(series)?.[1] ?? '';
  for (const m of body.matchAll(/([a-z_]+)="([^"]*)"/g)) out[m[1]!] = m[2]!;
  return out;
}

/** Every series of one metric, with labels. */
export function seriesOf(all: Map<string, number>, name: string): Array<{ labels: Record<string, string>; value: number }> {
  return [...all].filter(([k]) => k === name || k.startsWith(`${name}{`)).map(([k, value]) => ({ labels: labelsOf(k), value }));
}
