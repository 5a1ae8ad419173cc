import { AggregatorRegistry, Counter, Gauge, Histogram, Registry } from 'prom-client';
import cluster from 'node:cluster';
import { NANO_PER_USD } from '../money.js';

/**
 * The gateway's Prometheus metrics (names and labels fixed by interface.md). No key, key id or
 * prefix is ever a label.
 *
 * Hot-path discipline: a finished request touches only children bound once (prom-client's
 * `labels(...)`), kept in tables indexed by small integers, so no label object is built per
 * request. The in-flight gauge and the billed total are plain integers read at scrape time
 * (`collect`): the billed total stays an exact nano-dollar sum and is divided once per scrape.
 * Cost per observed request: bench/observe-cost.ts (README, Operating it).
 */

export const SURFACES = ['credit', 'token', 'none'] as const;
export type SurfaceLabel = (typeof SURFACES)[number];
export const SURFACE_NONE = 2;

export const ENDPOINT_LABELS = ['chat', 'responses', 'messages', 'models', 'usage', 'other'] as const;
export type EndpointLabel = (typeof ENDPOINT_LABELS)[number];
export const ENDPOINT_OTHER = 5;

const TOKEN_KINDS = ['input', 'output', 'cached_input', 'cache_write', 'reasoning'] as const;

/** Seconds; model calls run from milliseconds to minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

type CounterChild = ReturnType<Counter<string>['labels']>;
type HistogramChild = ReturnType<Histogram<string>['labels']>;

export interface Measured {
  surface: number;
  endpoint: number;
  status: number;
  code: string;
  stream: boolean;
  durationSeconds: number;
  /** input, output, cached input, cache write, reasoning */
  tokens: readonly [number, number, number, number, number] | null;
  costNano: number;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<string>;
  private readonly tokens: Counter<string>;
  private readonly duration: Histogram<string>;
  private readonly firstByte: Histogram<string>;
  /** [surface][endpoint] → (status × 256 + code index) → child, filled on first use. */
  private readonly requestChildren: Map<number, CounterChild>[] = [];
  /** [surface][endpoint][kind] */
  private readonly tokenChildren: (CounterChild | undefined)[] = [];
  /** [endpoint][stream] */
  private readonly durationChildren: (HistogramChild | undefined)[] = [];
  private readonly firstByteChildren = new Map<string, HistogramChild>();
  private readonly codeIndex = new Map<string, number>();
  private readonly inflight = [0, 0, 0];
  private readonly billedNano = [0, 0, 0, 0, 0, 0];

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'tollgate_requests_total', help: 'Requests answered, by surface, endpoint, HTTP status sent and gateway error code (upstream: the provider\'s own status; ok).', labelNames: ['surface', 'endpoint', 'status', 'code'], registers });
    this.tokens = new Counter({ name: 'tollgate_tokens_total', help: 'Tokens metered, by surface, endpoint and kind.', labelNames: ['surface', 'endpoint', 'kind'], registers });
    const billed = this.billedNano;
    new Counter({
      name: 'tollgate_billed_usd_total', help: 'USD charged to credit keys, by endpoint.', labelNames: ['endpoint'], registers,
      collect(this: Counter<string>) {
        this.reset();
        billed.forEach((nano, i) => { if (nano !== 0) this.inc({ endpoint: ENDPOINT_LABELS[i]! }, nano / NANO_PER_USD); });
      },
    });
    this.duration = new Histogram({ name: 'tollgate_request_duration_seconds', help: 'Time from request to the end of its answer, by endpoint and whether it streamed.', labelNames: ['endpoint', 'stream'], buckets: DURATION_BUCKETS, registers });
    this.firstByte = new Histogram({ name: 'tollgate_upstream_first_byte_seconds', help: 'Time from forwarding a call to the provider\'s response headers, by provider.', labelNames: ['provider'], buckets: DURATION_BUCKETS, registers });
    const inflight = this.inflight;
    new Gauge({
      name: 'tollgate_inflight_requests', help: 'Requests being answered now, by surface.', labelNames: ['surface'], registers,
      collect(this: Gauge<string>) {
        for (let i = 0; i < SURFACES.length; i++) this.set({ surface: SURFACES[i]! }, inflight[i]!);
      },
    });
    for (let i = 0; i < SURFACES.length * ENDPOINT_LABELS.length; i++) this.requestChildren.push(new Map());
  }

  /** A request started (or moved from surface `none` to its route's surface). */
  enter(surface: number): void {
    this.inflight[surface]! += 1;
  }

  leave(surface: number): void {
    this.inflight[surface]! -= 1;
  }

  upstreamFirstByte(provider: string, seconds: number): void {
    let child = this.firstByteChildren.get(provider);
    if (child === undefined) this.firstByteChildren.set(provider, (child = this.firstByte.labels(provider)));
    child.observe(seconds);
  }

  /** One finished request. */
  finished(m: Measured): void {
    const slot = m.surface * ENDPOINT_LABELS.length + m.endpoint;
    const byStatus = this.requestChildren[slot]!;
    const code = this.codeOf(m.code);
    const id = m.status * 256 + code;
    let child = byStatus.get(id);
    if (child === undefined) byStatus.set(id, (child = this.requests.labels(SURFACES[m.surface]!, ENDPOINT_LABELS[m.endpoint]!, String(m.status), m.code)));
    child.inc();
    if (m.tokens !== null) {
      for (let k = 0; k < TOKEN_KINDS.length; k++) {
        const n = m.tokens[k]!;
        if (n === 0) continue;
        const tslot = slot * TOKEN_KINDS.length + k;
        let tc = this.tokenChildren[tslot];
        if (tc === undefined) this.tokenChildren[tslot] = tc = this.tokens.labels(SURFACES[m.surface]!, ENDPOINT_LABELS[m.endpoint]!, TOKEN_KINDS[k]!);
        tc.inc(n);
      }
    }
    if (m.costNano > 0) this.billedNano[m.endpoint]! += m.costNano;
    const dslot = m.endpoint * 2 + (m.stream ? 1 : 0);
    let dc = this.durationChildren[dslot];
    if (dc === undefined) this.durationChildren[dslot] = dc = this.duration.labels(ENDPOINT_LABELS[m.endpoint]!, m.stream ? 'true' : 'false');
    dc.observe(m.durationSeconds);
  }

  private codeOf(code: string): number {
    let i = this.codeIndex.get(code);
    if (i === undefined) this.codeIndex.set(code, (i = this.codeIndex.size));
    return i;
  }

  /** Prometheus text format 0.0.4. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * In `serve --workers N` each worker answers the primary's metric requests (prom-client's
 * cluster protocol over the IPC channel) with its own registry; the primary sums them.
 */
export function answerClusterMetricRequests(metrics: Metrics): void {
  if (!cluster.isWorker) return;
  AggregatorRegistry.setRegistries([metrics.registry]);
  new AggregatorRegistry(); // installs the worker's listener
}

/** The primary's view: every worker's metrics, summed. */
export function clusterMetrics(): { text(): Promise<string>; contentType: string } {
  const aggregator = new AggregatorRegistry();
  return { text: () => aggregator.clusterMetrics(), contentType: aggregator.contentType };
}
