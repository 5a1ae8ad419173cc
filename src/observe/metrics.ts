import { AggregatorRegistry, Counter, Gauge, Histogram, Registry } from 'prom-client';
import cluster from 'node:cluster';
import { NANO_PER_USD } from '../money.js';
import { OUTCOMES, type Clock, type Credential } from '../forward/rotation.js';

/**
 * The gateway's Prometheus metrics (names and labels fixed by interface.md). No key, key id or
 * prefix is ever a label.
 *
 * Hot-path discipline: a finished request only adds to plain numbers in slots indexed by small
 * integers (surface × endpoint × …, a status/code pair numbered on first sight); prom-client's
 * metrics read those slots when scraped (`collect`), once per series. Measured with
 * bench/observe-cost.ts: observing a request through prom-client children (`labels(...)`
 * bound once) cost 6.6–8.1 µs, most of it prom-client hashing the label values on every
 *  `inc`/`observe`; the slots cost ≈ 0.1–0.3 µs (README, Metrics). The billed total stays
 * an exact nano-dollar sum, divided once per scrape.
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

/** A lever label as the gateway writes them (`service_tier:flex`, `service_tier:flex+speed:fast`, `inference_geo:us`), each value at most 32 characters. */
const LEVER_LABEL = /^[a-z_]{1,20}:[a-z0-9_.-]{1,32}(\+[a-z_]{1,20}(:[a-z0-9_.-]{1,32})?){0,2}$/;
/** Distinct lever labels per provider and process before further ones are counted as `other`. */
const MAX_LEVER_LABELS = 32;

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
  /** Why the call's tokens were estimated (its record's `estimateReason`); null when they were read. */
  estimateReason: string | null;
}

/** A histogram's numbers for one label set: per-bucket (not cumulative) counts, sum, count. */
class HistogramSlot {
  readonly buckets = new Float64Array(DURATION_BUCKETS.length);
  sum = 0;
  count = 0;
  constructor(readonly labels: Record<string, string>) {}

  observe(value: number): void {
    this.sum += value;
    this.count += 1;
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (value <= DURATION_BUCKETS[i]!) {
        this.buckets[i]! += 1;
        return;
      }
    }
  }
}

/**
 * Writes slots into a prom-client Histogram at scrape time. prom-client has no public setter
 * for a histogram's numbers: `zero(labels)` creates the entry through its API, then the entry's
 * `bucketValues` (keyed by upper bound), `sum` and `count` are set (prom-client 15's layout,
 * pinned by package.json; test/metrics-exact.test.ts reads them back through the text format).
 */
function writeHistogram(h: Histogram<string>, slots: Iterable<HistogramSlot>): void {
  h.reset();
  for (const slot of slots) {
    h.zero(slot.labels);
    const entries = Object.values((h as unknown as { hashMap: Record<string, { labels: Record<string, string>; bucketValues: Record<number, number>; sum: number; count: number }> }).hashMap);
    const entry = entries.find((e) => Object.keys(slot.labels).every((k) => e.labels[k] === slot.labels[k]))!;
    DURATION_BUCKETS.forEach((bound, i) => (entry.bucketValues[bound] = slot.buckets[i]!));
    entry.sum = slot.sum;
    entry.count = slot.count;
  }
}

export class Metrics {
  readonly registry = new Registry();
  /** [surface][endpoint] → status × 256 + code index → slot in requestCounts */
  private readonly requestSlots: Map<number, number>[] = [];
  private readonly requestCounts: number[] = [];
  private readonly requestLabels: Array<Record<string, string>> = [];
  private readonly tokenCounts = new Float64Array(SURFACES.length * ENDPOINT_LABELS.length * TOKEN_KINDS.length);
  private readonly billedNano = [0, 0, 0, 0, 0, 0];
  /** [endpoint][stream] */
  private readonly durations: (HistogramSlot | undefined)[] = [];
  private readonly firstBytes = new Map<string, HistogramSlot>();
  private readonly codeIndex = new Map<string, number>();
  private readonly inflight = [0, 0, 0];
  /** endpoint index → reason label → calls billed from an estimate */
  private readonly estimates: Map<string, number>[] = ENDPOINT_LABELS.map(() => new Map());
  /** provider → lever → answers that reported a lever their model's price has no rate for */
  private readonly unpricedLevers = new Map<string, Map<string, number>>();

  constructor() {
    const registers = [this.registry];
    const m = this;
    new Counter({
      name: 'tollgate_requests_total', help: 'Requests answered, by surface, endpoint, HTTP status sent and gateway error code (upstream: the provider\'s own status; ok).',
      labelNames: ['surface', 'endpoint', 'status', 'code'], registers,
      collect(this: Counter<string>) {
        this.reset();
        m.requestCounts.forEach((n, i) => this.inc(m.requestLabels[i]!, n));
      },
    });
    new Counter({
      name: 'tollgate_tokens_total', help: 'Tokens metered, by surface, endpoint and kind.', labelNames: ['surface', 'endpoint', 'kind'], registers,
      collect(this: Counter<string>) {
        this.reset();
        m.tokenCounts.forEach((n, i) => {
          if (n === 0) return;
          const kind = i % TOKEN_KINDS.length;
          const slot = (i - kind) / TOKEN_KINDS.length;
          const endpoint = slot % ENDPOINT_LABELS.length;
          const surface = (slot - endpoint) / ENDPOINT_LABELS.length;
          this.inc({ surface: SURFACES[surface]!, endpoint: ENDPOINT_LABELS[endpoint]!, kind: TOKEN_KINDS[kind]! }, n);
        });
      },
    });
    new Counter({
      name: 'tollgate_billed_usd_total', help: 'USD charged to credit keys, by endpoint.', labelNames: ['endpoint'], registers,
      collect(this: Counter<string>) {
        this.reset();
        m.billedNano.forEach((nano, i) => { if (nano !== 0) this.inc({ endpoint: ENDPOINT_LABELS[i]! }, nano / NANO_PER_USD); });
      },
    });
    new Histogram({
      name: 'tollgate_request_duration_seconds', help: 'Time from request to the end of its answer, by endpoint and whether it streamed.',
      labelNames: ['endpoint', 'stream'], buckets: DURATION_BUCKETS, registers,
      collect(this: Histogram<string>) {
        writeHistogram(this, m.durations.filter((s): s is HistogramSlot => s !== undefined));
      },
    });
    new Histogram({
      name: 'tollgate_upstream_first_byte_seconds', help: 'Time from forwarding a call to the provider\'s response headers, by provider.',
      labelNames: ['provider'], buckets: DURATION_BUCKETS, registers,
      collect(this: Histogram<string>) {
        writeHistogram(this, m.firstBytes.values());
      },
    });
    new Gauge({
      name: 'tollgate_inflight_requests', help: 'Requests being answered now, by surface.', labelNames: ['surface'], registers,
      collect(this: Gauge<string>) {
        for (let i = 0; i < SURFACES.length; i++) this.set({ surface: SURFACES[i]! }, m.inflight[i]!);
      },
    });
    new Counter({
      name: 'tollgate_estimated_total',
      help: 'Calls billed from an estimate because the provider\'s usage could not be read completely, by endpoint and reason (README, Usage checker).',
      labelNames: ['endpoint', 'reason'], registers,
      collect(this: Counter<string>) {
        this.reset();
        m.estimates.forEach((byReason, endpoint) => byReason.forEach((n, reason) => this.inc({ endpoint: ENDPOINT_LABELS[endpoint]!, reason }, n)));
      },
    });
    new Counter({
      name: 'tollgate_unpriced_levers_total',
      help: 'Answers that reported a price lever their model\'s price has no rate for (billed at the price\'s highest rate, the record estimated), by provider and lever (README, Prices).',
      labelNames: ['provider', 'lever'], registers,
      collect(this: Counter<string>) {
        this.reset();
        m.unpricedLevers.forEach((byLever, provider) => byLever.forEach((n, lever) => this.inc({ provider, lever }, n)));
      },
    });
    for (let i = 0; i < SURFACES.length * ENDPOINT_LABELS.length; i++) this.requestSlots.push(new Map());
  }

  /**
   * An answer from `provider` reported `lever` (`service_tier:flex`, `speed:fast`, `tool:web_search`)
   * that its price cannot price. The value is the provider's own text, so the label is bounded: one
   * that is not a short lower-case name, or any past the first MAX_LEVER_LABELS of a provider, is
   * counted under its kind as `KIND:other` (`service_tier:other`).
   */
  unpricedLever(provider: string, lever: string): void {
    let byLever = this.unpricedLevers.get(provider);
    if (byLever === undefined) this.unpricedLevers.set(provider, (byLever = new Map()));
    const label = LEVER_LABEL.test(lever) && (byLever.has(lever) || byLever.size < MAX_LEVER_LABELS) ? lever : `${lever.slice(0, lever.indexOf(':'))}:other`;
    byLever.set(label, (byLever.get(label) ?? 0) + 1);
  }

  /**
   * `tollgate_upstream_queued_requests{provider}`: calls waiting for a connection because their
   * provider's pool is full (`limits.upstreamConnections` in use). Read from undici's pool
   * statistics when scraped, so the request path does nothing for it.
   */
  watchUpstreamQueues(queued: () => Iterable<readonly [provider: string, queued: number]>): void {
    new Gauge({
      name: 'tollgate_upstream_queued_requests', help: 'Calls waiting for a free connection to their provider (its pool is full), by provider.',
      labelNames: ['provider'], registers: [this.registry],
      collect(this: Gauge<string>) {
        for (const [provider, n] of queued()) this.set({ provider }, n);
      },
    });
  }

  /**
   * The providers' credentials: `tollgate_upstream_attempts_total{provider, credential, outcome}`,
   * every send by what it came to, read from the credentials' own counts (forward/rotation.ts);
   * and `tollgate_upstream_credential_up{provider, credential}`, 1 in rotation, 0 resting or out,
   * read from their state against `clock` — both when scraped, so the request path does nothing
   * for them. Every series exists from the start (at 0). Across a cluster's workers the counts
   * are summed and the gauge is the minimum: a credential one worker sees resting is shown down.
   * A configured credential whose variable is unset (`unset`) is never sent, and shown at 0: an
   * alert on the gauge sees it, where a missing series would say nothing.
   */
  watchCredentials(credentials: readonly Credential[], clock: Clock, unset: ReadonlyArray<{ provider: string; name: string }> = []): void {
    const registers = [this.registry];
    new Counter({
      name: 'tollgate_upstream_attempts_total', help: 'Sends to a provider, by provider, credential and outcome (ok: answered other than 401, 429 and 5xx; connect_error: no answer).',
      labelNames: ['provider', 'credential', 'outcome'], registers,
      collect(this: Counter<string>) {
        this.reset();
        for (const c of credentials) OUTCOMES.forEach((outcome, i) => this.inc({ provider: c.provider, credential: c.name, outcome }, c.attempts[i]!));
      },
    });
    new Gauge({
      name: 'tollgate_upstream_credential_up', help: 'Whether a provider credential is in rotation (1), or resting or out of rotation (0); across workers, the minimum.',
      labelNames: ['provider', 'credential'], registers, aggregator: 'min',
      collect(this: Gauge<string>) {
        const now = clock();
        for (const c of credentials) this.set({ provider: c.provider, credential: c.name }, c.up(now) ? 1 : 0);
        for (const c of unset) this.set({ provider: c.provider, credential: c.name }, 0);
      },
    });
  }

  /** A request started (or moved from surface `none` to its route's surface). */
  enter(surface: number): void {
    this.inflight[surface]! += 1;
  }

  leave(surface: number): void {
    this.inflight[surface]! -= 1;
  }

  upstreamFirstByte(provider: string, seconds: number): void {
    let slot = this.firstBytes.get(provider);
    if (slot === undefined) this.firstBytes.set(provider, (slot = new HistogramSlot({ provider })));
    slot.observe(seconds);
  }

  /** One finished request. */
  finished(m: Measured): void {
    const pair = m.surface * ENDPOINT_LABELS.length + m.endpoint;
    const byStatus = this.requestSlots[pair]!;
    const id = m.status * 256 + this.codeOf(m.code);
    let slot = byStatus.get(id);
    if (slot === undefined) {
      slot = this.requestCounts.length;
      byStatus.set(id, slot);
      this.requestCounts.push(0);
      this.requestLabels.push({ surface: SURFACES[m.surface]!, endpoint: ENDPOINT_LABELS[m.endpoint]!, status: String(m.status), code: m.code });
    }
    this.requestCounts[slot]! += 1;
    if (m.tokens !== null) {
      const base = pair * TOKEN_KINDS.length;
      for (let k = 0; k < TOKEN_KINDS.length; k++) this.tokenCounts[base + k]! += m.tokens[k]!;
    }
    if (m.costNano > 0) this.billedNano[m.endpoint]! += m.costNano;
    if (m.estimateReason !== null) {
      const reason = estimateReasonLabel(m.estimateReason);
      const byReason = this.estimates[m.endpoint]!;
      byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
    }
    const d = m.endpoint * 2 + (m.stream ? 1 : 0);
    let duration = this.durations[d];
    if (duration === undefined) this.durations[d] = duration = new HistogramSlot({ endpoint: ENDPOINT_LABELS[m.endpoint]!, stream: m.stream ? 'true' : 'false' });
    duration.observe(m.durationSeconds);
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
 * A record's estimate reason as a label: its kind without the usage field's path
 * (`usage_field_missing:usage.output_tokens` → `usage_field_missing`), so the label takes a
 * handful of values whatever the providers send. The access log keeps the whole reason.
 */
export function estimateReasonLabel(reason: string): string {
  const colon = reason.indexOf(':');
  return colon === -1 ? reason : reason.slice(0, colon);
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
