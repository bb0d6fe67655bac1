/**
 * Every metric Mediagate records, defined once (names, units, labels, buckets) and shared by the packages that
 * record them: the engine (tasks, upstream calls, accept → claim), the webhooks (deliveries), `@mediagate/node`
 * (HTTP requests, the queue gauges read from the database, the process). `@mediagate/node` exposes them at
 * `GET /metrics` in the Prometheus text format (docs/operations.md).
 *
 * They are `effect/Metric`s in Effect's global registry, so an embedding app sees them in `Metric.snapshot` too.
 * Names and units follow Prometheus conventions: a `mediagate_` prefix, base units (`_seconds`, `_bytes`; money in
 * micro-dollars, the unit of the ledger), counters end in `_total`.
 *
 * Cost: a labelled metric is made once per combination of label values and kept ({@link Labelled}), so recording is
 * a map lookup and an in-memory update (tens of nanoseconds, no allocation); `Metric.tagged` would allocate and hash
 * on every update. Updates are synchronous ({@link Labelled.record}), for use inside `Effect.sync`/`Effect.tap`.
 *
 * @since 0.1.0
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"

/** The label set of an update without extra labels (shared: Effect caches the hook of a metric by this array). */
const noLabels: ReadonlyArray<MetricLabel.MetricLabel> = []

/**
 * A label value: numbers (HTTP status, attempt) are labelled by their decimal form.
 *
 * @since 0.1.0
 * @category models
 */
export type LabelValue = string | number

/**
 * A metric with labels: one instance per combination of label values, made on first use (its key carries the
 * labels) and kept in nested maps keyed by the raw values, so a hot path neither builds strings nor allocates.
 * Label values must come from small, known sets (routes, states, families, models).
 *
 * @since 0.1.0
 * @category models
 */
export class Labelled<In> {
  private readonly root = new Map<LabelValue, unknown>()
  constructor(
    /** The label names, in the order {@link get} takes the values. */
    readonly names: ReadonlyArray<string>,
    private readonly make: (labels: ReadonlyArray<MetricLabel.MetricLabel>) => Metric.Metric<unknown, In, unknown>
  ) {}

  /**
   * The metric of these label values (as many as {@link names}).
   *
   * @since 0.1.0
   */
  get(a: LabelValue, b?: LabelValue, c?: LabelValue): Metric.Metric<unknown, In, unknown> {
    const size = this.names.length
    let node = this.root
    if (size > 1) node = this.child(node, a)
    if (size > 2) node = this.child(node, b as LabelValue)
    const last = (size === 1 ? a : size === 2 ? b : c) as LabelValue
    const found = node.get(last) as Metric.Metric<unknown, In, unknown> | undefined
    if (found !== undefined) return found
    const values = [a, b, c]
    const made = this.make(this.names.map((name, i) => MetricLabel.make(name, String(values[i]))))
    node.set(last, made)
    return made
  }

  /** @internal */
  private child(node: Map<LabelValue, unknown>, value: LabelValue): Map<LabelValue, unknown> {
    let next = node.get(value) as Map<LabelValue, unknown> | undefined
    if (next === undefined) node.set(value, next = new Map())
    return next
  }

  /**
   * Records `value` on the metric of these label values.
   *
   * @since 0.1.0
   */
  record(value: In, a: LabelValue, b?: LabelValue, c?: LabelValue): void {
    this.get(a, b, c).unsafeUpdate(value, noLabels)
  }
}

/**
 * What recording needs of a metric.
 *
 * @since 0.1.0
 * @category models
 */
export interface Recordable<In> {
  readonly unsafeUpdate: (input: In, extraTags: ReadonlyArray<MetricLabel.MetricLabel>) => void
}

/**
 * Records `value` on a metric without labels (synchronously).
 *
 * @since 0.1.0
 * @category utils
 */
export const record = <In>(metric: Recordable<In>, value: In): void => metric.unsafeUpdate(value, noLabels)

/** A monotonic counter with labels. */
const labelledCounter = (name: string, description: string, names: ReadonlyArray<string>): Labelled<number> =>
  new Labelled(
    names,
    (labels) =>
      Metric.fromMetricKey(
        MetricKey.taggedWithLabels(MetricKey.counter(name, { description, incremental: true }), labels)
      ) as Metric.Metric<unknown, number, unknown>
  )

/** A histogram with explicit bucket bounds and labels. */
const labelledHistogram = (
  name: string,
  description: string,
  bounds: ReadonlyArray<number>,
  names: ReadonlyArray<string>
): Labelled<number> => {
  const boundaries = MetricBoundaries.fromIterable(bounds)
  return new Labelled(
    names,
    (labels) =>
      Metric.fromMetricKey(
        MetricKey.taggedWithLabels(MetricKey.histogram(name, boundaries, description), labels)
      ) as Metric.Metric<unknown, number, unknown>
  )
}

/** A gauge with labels. */
const labelledGauge = (name: string, description: string, names: ReadonlyArray<string>): Labelled<number> =>
  new Labelled(
    names,
    (labels) =>
      Metric.fromMetricKey(MetricKey.taggedWithLabels(MetricKey.gauge(name, { description }), labels)) as Metric.Metric<
        unknown,
        number,
        unknown
      >
  )

/** A gauge without labels. */
const gauge = (name: string, description: string) => Metric.gauge(name, { description })

/**
 * Bucket bounds (seconds) of request latencies: 1 ms to 10 s.
 *
 * @since 0.1.0
 * @category constants
 */
export const httpBuckets: ReadonlyArray<number> = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10
]
/**
 * Bucket bounds (seconds) of upstream calls and webhook deliveries: 5 ms to 60 s.
 *
 * @since 0.1.0
 * @category constants
 */
export const callBuckets: ReadonlyArray<number> = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
/**
 * Bucket bounds (seconds) of waits in the queue (accept → first claim): 5 ms to 10 min.
 *
 * @since 0.1.0
 * @category constants
 */
export const queueBuckets: ReadonlyArray<number> = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  300,
  600
]

// -----------------------------------------------------------------------------------------------------------------
// HTTP (recorded by @mediagate/node's request middleware)
// -----------------------------------------------------------------------------------------------------------------

/**
 * The label of a request no route matches (a 404/405 answered before routing).
 *
 * @since 0.1.0
 * @category constants
 */
export const unmatchedRoute = "unmatched"

/**
 * `mediagate_http_request_duration_seconds{method,route,status}`: answered requests (its `_count` counts them).
 *
 * @since 0.1.0
 * @category metrics
 */
export const httpRequestDuration = labelledHistogram(
  "mediagate_http_request_duration_seconds",
  "Time to answer an HTTP request, by method, route template and status",
  httpBuckets,
  ["method", "route", "status"]
)

// -----------------------------------------------------------------------------------------------------------------
// tasks (engine)
// -----------------------------------------------------------------------------------------------------------------

/**
 * `mediagate_tasks_created_total{family,model}`: tasks accepted (idempotent replays excluded).
 *
 * @since 0.1.0
 * @category metrics
 */
export const tasksCreated = labelledCounter(
  "mediagate_tasks_created_total",
  "Tasks accepted, by family and model",
  ["family", "model"]
)

/**
 * `mediagate_tasks_finished_total{family,model,state}`: tasks that reached a final state (by this process).
 *
 * @since 0.1.0
 * @category metrics
 */
export const tasksFinished = labelledCounter(
  "mediagate_tasks_finished_total",
  "Tasks that reached a final state, by family, model and state",
  ["family", "model", "state"]
)

/**
 * `mediagate_task_claim_delay_seconds{family}`: time from a task's acceptance to its first claim by a worker.
 *
 * @since 0.1.0
 * @category metrics
 */
export const taskClaimDelay = labelledHistogram(
  "mediagate_task_claim_delay_seconds",
  "Time from a task's acceptance to its first claim by a worker, by family",
  queueBuckets,
  ["family"]
)

/**
 * `mediagate_upstream_request_duration_seconds{family,call}`: upstream calls (`submit`, `poll`), any outcome.
 *
 * @since 0.1.0
 * @category metrics
 */
export const upstreamDuration = labelledHistogram(
  "mediagate_upstream_request_duration_seconds",
  "Duration of upstream calls, by family and call (submit, poll)",
  callBuckets,
  ["family", "call"]
)

/**
 * `mediagate_upstream_errors_total{family,call,retryable}`: upstream calls that failed.
 *
 * @since 0.1.0
 * @category metrics
 */
export const upstreamErrors = labelledCounter(
  "mediagate_upstream_errors_total",
  "Upstream calls that failed, by family, call (submit, poll) and whether the failure is retried",
  ["family", "call", "retryable"]
)

/**
 * `mediagate_ledger_charged_microdollars_total{family}`: money charged for tasks (committed charges).
 *
 * @since 0.1.0
 * @category metrics
 */
export const ledgerCharged = labelledCounter(
  "mediagate_ledger_charged_microdollars_total",
  "Money charged for tasks, in micro-dollars (1e-6 USD), by family",
  ["family"]
)

/**
 * `mediagate_ledger_refunded_microdollars_total{family}`: money refunded for failed, expired and cancelled tasks.
 *
 * @since 0.1.0
 * @category metrics
 */
export const ledgerRefunded = labelledCounter(
  "mediagate_ledger_refunded_microdollars_total",
  "Money refunded for failed, expired and cancelled tasks, in micro-dollars (1e-6 USD), by family",
  ["family"]
)

// -----------------------------------------------------------------------------------------------------------------
// upstream channels (docs/channels.md)
// -----------------------------------------------------------------------------------------------------------------

/**
 * `mediagate_channel_requests_total{channel,call,outcome}`: calls to a channel's upstream (`submit`, `poll`) by
 * outcome: `ok` (answered, a refusal of the request included), `unavailable` (timeout, connection, 5xx, 429),
 * `auth` (credentials or account rejected).
 *
 * @since 0.1.0
 * @category metrics
 */
export const channelRequests = labelledCounter(
  "mediagate_channel_requests_total",
  "Calls to an upstream channel, by channel id, call (submit, poll) and outcome (ok, unavailable, auth)",
  ["channel", "call", "outcome"]
)

/**
 * `mediagate_channel_request_duration_seconds{channel,call}`: duration of calls to a channel's upstream.
 *
 * @since 0.1.0
 * @category metrics
 */
export const channelDuration = labelledHistogram(
  "mediagate_channel_request_duration_seconds",
  "Duration of calls to an upstream channel, by channel id and call (submit, poll)",
  callBuckets,
  ["channel", "call"]
)

/**
 * `mediagate_channel_failovers_total{channel,call}`: tasks moved away from a channel that failed them.
 *
 * @since 0.1.0
 * @category metrics
 */
export const channelFailovers = labelledCounter(
  "mediagate_channel_failovers_total",
  "Tasks moved to another channel because this one failed, by channel id and call (submit: tried the next channel; poll: job given up and submitted again)",
  ["channel", "call"]
)

/**
 * `mediagate_channel_breaker_state{channel}`: this process's circuit breaker of a channel (0 closed, 1 half open, 2
 * open).
 *
 * @since 0.1.0
 * @category metrics
 */
export const channelBreakerState = labelledGauge(
  "mediagate_channel_breaker_state",
  "Circuit breaker of an upstream channel in this process: 0 closed, 1 half open, 2 open",
  ["channel"]
)

/**
 * `mediagate_channel_in_flight{channel}`: tasks submitted to or reserved on a channel and not ended (database).
 *
 * @since 0.1.0
 * @category metrics
 */
export const channelInFlight = labelledGauge(
  "mediagate_channel_in_flight",
  "Tasks submitted to or reserved on an upstream channel and not ended, every node (from the database)",
  ["channel"]
)

// -----------------------------------------------------------------------------------------------------------------
// webhooks
// -----------------------------------------------------------------------------------------------------------------

/**
 * `mediagate_webhook_deliveries_total{outcome,attempt}`: delivery attempts (`delivered`, `retrying`, `failed`;
 * `attempt` 1, 2, ...).
 *
 * @since 0.1.0
 * @category metrics
 */
export const webhookDeliveries = labelledCounter(
  "mediagate_webhook_deliveries_total",
  "Webhook delivery attempts, by outcome (delivered; retrying: failed, retried later; failed: failed for good) and attempt number",
  ["outcome", "attempt"]
)

/**
 * `mediagate_webhook_delivery_duration_seconds{outcome}`: duration of a delivery attempt (the POST).
 *
 * @since 0.1.0
 * @category metrics
 */
export const webhookDeliveryDuration = labelledHistogram(
  "mediagate_webhook_delivery_duration_seconds",
  "Duration of webhook delivery attempts, by outcome",
  callBuckets,
  ["outcome"]
)

// -----------------------------------------------------------------------------------------------------------------
// gauges set at scrape time (@mediagate/node): from the database (the same on every node) and the process
// -----------------------------------------------------------------------------------------------------------------

/**
 * `mediagate_tasks{state}`: tasks by current state (database).
 *
 * @since 0.1.0
 * @category metrics
 */
export const tasksByState = labelledGauge("mediagate_tasks", "Tasks by current state (from the database)", ["state"])

/**
 * `mediagate_queue_depth`: tasks accepted and not yet claimed by any worker (`pending`; database).
 *
 * @since 0.1.0
 * @category metrics
 */
export const queueDepth = gauge(
  "mediagate_queue_depth",
  "Tasks accepted and not yet claimed by a worker (state pending, from the database)"
)

/**
 * `mediagate_tasks_due`: active tasks due now that no worker holds (work waiting for a worker; database).
 *
 * @since 0.1.0
 * @category metrics
 */
export const tasksDue = gauge(
  "mediagate_tasks_due",
  "Active tasks due now that no worker holds: work waiting for a worker (from the database)"
)

/**
 * `mediagate_upstream_jobs_in_flight`: tasks claimed and not ended (`queued` + `running`: at their upstream; database).
 *
 * @since 0.1.0
 * @category metrics
 */
export const upstreamInFlight = gauge(
  "mediagate_upstream_jobs_in_flight",
  "Tasks claimed and not ended, states queued and running: in flight at their upstream (from the database)"
)

/**
 * `mediagate_file_store_unshared_nodes`: live nodes whose result files this node cannot see (its local file store is
 * not their directory; docs/operations.md). 0 when shared, on the S3 store, or alone.
 *
 * @since 0.1.0
 * @category metrics
 */
export const fileStoreUnsharedNodes = gauge(
  "mediagate_file_store_unshared_nodes",
  "Live nodes whose result files this node cannot see: its local file store is not their directory (0: shared or S3)"
)

/**
 * `mediagate_db_pool_connections{state}`: this process's database connections, `in_use` (a statement or a
 * transaction holds it) or `idle` (open, free). PostgreSQL: the pool (the `LISTEN` connection is not in it);
 * SQLite: its one connection (in use while a statement or transaction holds it at the scrape).
 *
 * @since 0.1.0
 * @category metrics
 */
export const dbPoolConnections = labelledGauge(
  "mediagate_db_pool_connections",
  "Database connections of this process by state (in_use, idle): the PostgreSQL pool, or SQLite's one connection",
  ["state"]
)

/**
 * `mediagate_db_pool_waiting`: queries of this process waiting for a free PostgreSQL pool connection.
 *
 * @since 0.1.0
 * @category metrics
 */
export const dbPoolWaiting = gauge(
  "mediagate_db_pool_waiting",
  "Queries of this process waiting for a free PostgreSQL pool connection"
)

/**
 * `mediagate_db_pool_max_connections`: the most connections the pool opens (SQLite: 1).
 *
 * @since 0.1.0
 * @category metrics
 */
export const dbPoolMax = gauge(
  "mediagate_db_pool_max_connections",
  "The most database connections this process opens (PostgreSQL pool size; SQLite: 1)"
)

/**
 * `nodejs_eventloop_lag_p50_seconds`: median event-loop delay of this process since the previous scrape.
 *
 * @since 0.1.0
 * @category metrics
 */
export const eventLoopLagP50 = gauge(
  "nodejs_eventloop_lag_p50_seconds",
  "Median event-loop delay of this process since the previous scrape, in seconds"
)

/**
 * `nodejs_eventloop_lag_p99_seconds`: 99th percentile of the event-loop delay since the previous scrape.
 *
 * @since 0.1.0
 * @category metrics
 */
export const eventLoopLagP99 = gauge(
  "nodejs_eventloop_lag_p99_seconds",
  "99th percentile of the event-loop delay of this process since the previous scrape, in seconds"
)

/**
 * `nodejs_eventloop_lag_max_seconds`: largest event-loop delay since the previous scrape.
 *
 * @since 0.1.0
 * @category metrics
 */
export const eventLoopLagMax = gauge(
  "nodejs_eventloop_lag_max_seconds",
  "Largest event-loop delay of this process since the previous scrape, in seconds"
)

/**
 * `process_resident_memory_bytes`: resident set size of this process.
 *
 * @since 0.1.0
 * @category metrics
 */
export const residentMemory = gauge("process_resident_memory_bytes", "Resident memory size of this process in bytes")

/**
 * `nodejs_heap_used_bytes`: V8 heap in use.
 *
 * @since 0.1.0
 * @category metrics
 */
export const heapUsed = gauge("nodejs_heap_used_bytes", "V8 heap in use, in bytes")

/**
 * `nodejs_heap_total_bytes`: V8 heap reserved.
 *
 * @since 0.1.0
 * @category metrics
 */
export const heapTotal = gauge("nodejs_heap_total_bytes", "V8 heap reserved, in bytes")

/**
 * `process_start_time_seconds`: start of this process (Unix time).
 *
 * @since 0.1.0
 * @category metrics
 */
export const processStartTime = gauge(
  "process_start_time_seconds",
  "Start time of this process since the Unix epoch in seconds"
)
