/**
 * `GET /metrics`: every metric of `@mediagate/contract/Metrics` (and any other `effect/Metric` of the process) in
 * the Prometheus text format, on the API's port or a port of its own.
 *
 * Rendering ({@link render}): Effect's registry (`Metric.unsafeSnapshot`) written in the text format: `# HELP` and
 * `# TYPE` for every family, counters as `counter` (`_total` appended to a name without it), gauges and
 * non-incremental counters as `gauge`, histograms with cumulative `_bucket{le}` series, `_sum` and `_count`,
 * summaries as `summary` (`quantile` labels), frequencies as a counter per value (`key` label); names and label
 * names reduced to `[a-zA-Z0-9_]`. The units are in the names, as Prometheus wants them. The output passes
 * `promtool check metrics` (tested). It is written here rather than through the OpenTelemetry SDK's Prometheus
 * serializer: that SDK is 25 MB of install for ~80 lines of a stable text format (docs/performance-notes.md,
 * "Install size and import time").
 *
 * At each scrape, before rendering, the gauges that are not counted as things happen are set: the queue gauges from
 * the database (`TaskReads.overview`: tasks by state from the counters, tasks due and unclaimed; the same figures on
 * every node, and those of `GET /admin/v1/system`), this process's database connections (`Database.DatabasePool`:
 * the PostgreSQL pool's in use / idle / waiting, or SQLite's one connection; absent with a host app's `SqlClient`),
 * whether this node's local file store is shared with the other live nodes (`Placement`; 0 without one),
 * and this process's memory and event-loop delay (`perf_hooks.monitorEventLoopDelay`, reset at each scrape).
 *
 * Settings (docs/configuration.md): `MEDIAGATE_METRICS` (default off when embedded, on in the production server),
 * `MEDIAGATE_METRICS_PORT` (serve on that port only, not on the API's), `MEDIAGATE_METRICS_OPEN` (no token needed;
 * default: open on a port of its own, otherwise the admin token is required as a bearer token, and without an admin
 * token `/metrics` answers 404 like `/admin/v1`).
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Metrics, Task } from "@mediagate/contract"
import { ChannelSlots } from "@mediagate/engine/ChannelSlots"
import { Placement } from "@mediagate/engine/Placement"
import { TaskReads } from "@mediagate/engine/TaskReads"
import { Envelope, RequestContext } from "@mediagate/server"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricKeyType from "effect/MetricKeyType"
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { createHash, timingSafeEqual } from "node:crypto"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { DatabasePool } from "./Database.js"
import * as ThreadRole from "./internal/threadRole.js"

/**
 * Where the metrics are served.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/metrics"

/**
 * The content type of the Prometheus text format.
 *
 * @since 0.1.0
 * @category constants
 */
export const contentType = "text/plain; version=0.0.4; charset=utf-8"

/**
 * Metrics settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** Whether `/metrics` is served (and HTTP requests are measured). */
  readonly enabled: boolean
  /** A port of its own for `/metrics` (the API's port then does not serve it). */
  readonly port: number | undefined
  /** Whether `/metrics` answers without the admin token. */
  readonly open: boolean
}

/**
 * `MEDIAGATE_METRICS` (default off), `MEDIAGATE_METRICS_PORT`, `MEDIAGATE_METRICS_OPEN` (default: open on a port of its
 * own).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Settings> = Config.all({
  enabled: Config.boolean("MEDIAGATE_METRICS").pipe(Config.withDefault(false)),
  port: Config.option(Config.port("MEDIAGATE_METRICS_PORT")),
  open: Config.option(Config.boolean("MEDIAGATE_METRICS_OPEN"))
}).pipe(Config.map(({ enabled, open, port }) => ({
  enabled,
  port: Option.getOrUndefined(port),
  open: Option.getOrElse(open, () => Option.isSome(port))
})))

/**
 * A metrics exporter: renders the exposition of the moment.
 *
 * @since 0.1.0
 * @category models
 */
export interface Exporter {
  /** The Prometheus text exposition (the database's gauges read first). */
  readonly scrape: Effect.Effect<string>
}

/** The event-loop monitor's sampling period (ms); its samples are whole periods, so the period is taken off. */
const loopResolutionMs = 10

/** A sample of the event-loop monitor as lag in seconds: the delay beyond its sampling period. */
const lagSeconds = (nanos: number) => Math.max(0, nanos / 1e6 - loopResolutionMs) / 1000

/**
 * The exporter of this process: reads the queue gauges from the task storage at each scrape, watches the event
 * loop while the scope is open.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Exporter, never, Scope.Scope | TaskReads | ChannelSlots> = Effect.gen(function*() {
  const reads = yield* TaskReads
  const slots = yield* ChannelSlots
  const pool = yield* Effect.serviceOption(DatabasePool)
  const placement = yield* Effect.serviceOption(Placement)
  const loop = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const histogram = monitorEventLoopDelay({ resolution: loopResolutionMs })
      histogram.enable()
      return histogram
    }),
    (histogram) => Effect.sync(() => histogram.disable())
  )
  Metrics.record(Metrics.processStartTime, Math.round(Date.now() / 1000 - process.uptime()))
  const channelsSeen = new Set<string>()

  const database = reads.overview.pipe(
    Effect.tap(({ byStatus, due }) =>
      Effect.sync(() => {
        for (const status of Task.taskStatuses) Metrics.tasksByState.record(byStatus[status], status)
        Metrics.record(Metrics.queueDepth, byStatus.pending)
        Metrics.record(Metrics.tasksDue, due)
        Metrics.record(Metrics.upstreamInFlight, byStatus.queued + byStatus.running)
      })
    ),
    // tasks in flight per channel; a channel seen before and now idle goes back to 0
    Effect.zipRight(Effect.flatMap(slots.channelLoad, (load) =>
      Effect.sync(() => {
        for (const id of channelsSeen) if (!load.has(id)) Metrics.channelInFlight.record(0, id)
        for (const [id, n] of load) {
          channelsSeen.add(id)
          Metrics.channelInFlight.record(n, id)
        }
      }))),
    // a scrape while the database does not answer still shows the process (and the last figures read)
    Effect.catchAllCause((cause) => Effect.logWarning("metrics: the task overview failed", cause))
  )
  const connections = Option.match(pool, {
    onNone: () => Effect.void,
    onSome: (connections) =>
      Effect.map(connections.stats, (stats) => {
        Metrics.dbPoolConnections.record(stats.inUse, "in_use")
        Metrics.dbPoolConnections.record(stats.idle, "idle")
        if (stats.waiting !== undefined) Metrics.record(Metrics.dbPoolWaiting, stats.waiting)
        Metrics.record(Metrics.dbPoolMax, stats.max)
      })
  })
  const process_ = Effect.sync(() => {
    Metrics.record(
      Metrics.fileStoreUnsharedNodes,
      Option.match(placement, { onNone: () => 0, onSome: (p) => p.apart().length })
    )
    const memory = process.memoryUsage()
    Metrics.record(Metrics.residentMemory, memory.rss)
    Metrics.record(Metrics.heapUsed, memory.heapUsed)
    Metrics.record(Metrics.heapTotal, memory.heapTotal)
    if (loop.count > 0) {
      Metrics.record(Metrics.eventLoopLagP50, lagSeconds(loop.percentile(50)))
      Metrics.record(Metrics.eventLoopLagP99, lagSeconds(loop.percentile(99)))
      Metrics.record(Metrics.eventLoopLagMax, lagSeconds(loop.max))
    }
    loop.reset()
  })
  // on the API thread of a server on two threads, the worker thread's metrics join this thread's
  const role = yield* ThreadRole.ThreadRole
  const exposition = role._tag === "Api"
    ? Effect.map(
      Effect.suspend(() => role.bridge.metrics),
      (remote) => renderSeries(merge(seriesOf(Metric.unsafeSnapshot()), remote))
    )
    : Effect.sync(() => render(Metric.unsafeSnapshot()))
  return { scrape: Effect.zipRight(Effect.zipRight(Effect.zipRight(database, connections), process_), exposition) }
})

/** A metric or label name reduced to the characters Prometheus allows (`[a-zA-Z0-9_]`, no leading digit). */
const sanitize = (name: string) => {
  const clean = name.replace(/[^a-zA-Z0-9_]/g, "_").replace(/_{2,}/g, "_")
  return /^[0-9]/.test(clean) ? `_${clean}` : clean
}
const escapeHelp = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
const escapeLabel = (text: string) => escapeHelp(text).replace(/"/g, "\\\"")
const valueText = (value: number) => value === Infinity ? "+Inf" : value === -Infinity ? "-Inf" : String(value)

/** A sample line: `name{k="v",...} value`. */
const sampleLine = (name: string, labels: ReadonlyArray<readonly [string, string]>, value: number) =>
  `${name}${labels.length === 0 ? "" : `{${labels.map(([key, text]) => `${key}="${escapeLabel(text)}"`).join(",")}}`} ${
    valueText(value)
  }\n`

/**
 * One series of a metric as plain data (structured-cloneable: what a worker thread sends of its own metrics), with
 * the name and labels already reduced to Prometheus' characters.
 *
 * @since 0.1.0
 * @category models
 */
export type Series =
  | SeriesBase & { readonly kind: "counter" | "gauge"; readonly value: number }
  | SeriesBase & {
    readonly kind: "histogram" | "summary"
    /** Histogram: cumulative `[bound, count]`, the last bound +Inf; summary: `[quantile, value]`. */
    readonly points: ReadonlyArray<readonly [number, number]>
    readonly count: number
    readonly sum: number
  }
  | SeriesBase & { readonly kind: "frequency"; readonly occurrences: ReadonlyArray<readonly [string, number]> }

interface SeriesBase {
  /** The family's name (a monotonic counter's with `_total`). */
  readonly name: string
  readonly help: string
  readonly labels: ReadonlyArray<readonly [string, string]>
}

/**
 * Effect metrics (`Metric.unsafeSnapshot()`) as {@link Series}: counters as `counter` (`_total` appended to a name
 * without it), non-incremental counters and gauges as `gauge`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const seriesOf = (snapshot: ReadonlyArray<MetricPair.MetricPair.Untyped>): Array<Series> => {
  const series: Array<Series> = []
  for (const { metricKey: key, metricState: state } of snapshot) {
    const base = sanitize(key.name)
    const help = Option.getOrElse(key.description, () => key.name)
    const labels = key.tags.map((tag) => [sanitize(tag.key), tag.value] as const)
    const counterName = base.endsWith("_total") ? base : `${base}_total`
    if (MetricState.isCounterState(state)) {
      const monotonic = MetricKeyType.isCounterKey(key.keyType) && key.keyType.incremental
      series.push({
        kind: monotonic ? "counter" : "gauge",
        name: monotonic ? counterName : base,
        help,
        labels,
        value: Number(state.count)
      })
    } else if (MetricState.isGaugeState(state)) {
      series.push({ kind: "gauge", name: base, help, labels, value: Number(state.value) })
    } else if (MetricState.isHistogramState(state)) {
      // Effect's buckets are cumulative already, the last one's bound +Inf
      series.push({ kind: "histogram", name: base, help, labels, points: [...state.buckets], ...totals(state) })
    } else if (MetricState.isSummaryState(state)) {
      const points = state.quantiles.map(([quantile, value]) => [quantile, Option.getOrElse(value, () => NaN)] as const)
      series.push({ kind: "summary", name: base, help, labels, points, ...totals(state) })
    } else if (MetricState.isFrequencyState(state)) {
      series.push({ kind: "frequency", name: counterName, help, labels, occurrences: [...state.occurrences] })
    }
  }
  return series
}

const totals = (state: { readonly count: number; readonly sum: number }) => ({ count: state.count, sum: state.sum })

/** Two series of one name and labels as one: counts added, a gauge's highest value, a summary's first. */
const combine = (a: Series, b: Series): Series => {
  if (a.kind !== b.kind) return a
  if (a.kind === "counter" && b.kind === "counter") return { ...a, value: a.value + b.value }
  if (a.kind === "gauge" && b.kind === "gauge") return { ...a, value: Math.max(a.value, b.value) }
  if (a.kind === "histogram" && b.kind === "histogram" && a.points.length === b.points.length) {
    const points = a.points.map(([bound, count], i) => [bound, count + b.points[i]![1]] as const)
    return { ...a, points, count: a.count + b.count, sum: a.sum + b.sum }
  }
  if (a.kind === "frequency" && b.kind === "frequency") {
    const occurrences = new Map(a.occurrences)
    for (const [value, count] of b.occurrences) occurrences.set(value, (occurrences.get(value) ?? 0) + count)
    return { ...a, occurrences: [...occurrences] }
  }
  return a
}

/**
 * Series of several sources (the threads of one process) as one list: series of the same name and labels combined
 * (counters and histograms added, the highest of gauges), in the order first seen.
 *
 * @since 0.1.0
 * @category encoding
 */
export const merge = (...sources: ReadonlyArray<ReadonlyArray<Series>>): Array<Series> => {
  const byKey = new Map<string, Series>()
  for (const source of sources) {
    for (const series of source) {
      const key = JSON.stringify([series.name, series.labels])
      const seen = byKey.get(key)
      byKey.set(key, seen === undefined ? series : combine(seen, series))
    }
  }
  return [...byKey.values()]
}

/**
 * {@link Series} in the Prometheus text format, one family per name (the label combinations of a name are its
 * series), in the order first seen.
 *
 * @since 0.1.0
 * @category encoding
 */
export const renderSeries = (all: ReadonlyArray<Series>): string => {
  const families = new Map<string, { readonly head: string; text: string }>()
  for (const series of all) {
    const { help, labels, name } = series
    let text = ""
    if (series.kind === "counter" || series.kind === "gauge") text = sampleLine(name, labels, series.value)
    else if (series.kind === "histogram") {
      text = sampleLine(`${name}_count`, labels, series.count) + sampleLine(`${name}_sum`, labels, series.sum)
      for (const [bound, count] of series.points) {
        text += sampleLine(`${name}_bucket`, [...labels, ["le", valueText(bound)]], count)
      }
    } else if (series.kind === "summary") {
      for (const [quantile, value] of series.points) {
        text += sampleLine(name, [...labels, ["quantile", String(quantile)]], value)
      }
      text += sampleLine(`${name}_sum`, labels, series.sum) + sampleLine(`${name}_count`, labels, series.count)
    } else if (series.kind === "frequency") {
      for (const [value, count] of series.occurrences) text += sampleLine(name, [...labels, ["key", value]], count)
    }
    const family = families.get(name)
    const type = series.kind === "frequency" ? "counter" : series.kind
    if (family !== undefined) family.text += text
    else families.set(name, { head: `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`, text })
  }
  let out = ""
  for (const { head, text } of families.values()) out += head + text
  return out
}

/**
 * Effect metrics (`Metric.unsafeSnapshot()`) in the Prometheus text format ({@link seriesOf}, {@link renderSeries}).
 *
 * @since 0.1.0
 * @category encoding
 */
export const render = (snapshot: ReadonlyArray<MetricPair.MetricPair.Untyped>): string =>
  renderSeries(seriesOf(snapshot))

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * The answer to `GET /metrics`: the exposition, or (unless `open`) 401 without the admin token, 404 when no admin
 * token is configured (as `/admin/v1`).
 *
 * @since 0.1.0
 * @category utils
 */
export const respond = (
  exporter: Exporter,
  options: { readonly open: boolean; readonly adminToken: Option.Option<Redacted.Redacted<string>> }
) => {
  const expected = Option.map(options.adminToken, (token) => digest(Redacted.value(token)))
  const answer = Effect.map(
    exporter.scrape,
    (text) => HttpServerResponse.text(text, { contentType, headers: { "cache-control": "no-store" } })
  )
  return (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    // the route label and id of its access-log line and metric (the envelope does this for the API's requests)
    const { id } = RequestContext.attach(request, path)
    const withId = (response: HttpServerResponse.HttpServerResponse) =>
      HttpServerResponse.setHeader(response, RequestContext.header, id)
    if (request.method !== "GET" && request.method !== "HEAD") {
      return Effect.succeed(withId(Envelope.errorResponse(
        405,
        "METHOD_NOT_ALLOWED",
        `${request.method} is not allowed on ${path}; allowed: GET`,
        { allow: "GET" },
        id
      )))
    }
    if (!options.open) {
      if (Option.isNone(expected)) {
        return Effect.succeed(
          withId(Envelope.errorResponse(404, "NOT_FOUND", `no route for GET ${path}`, undefined, id))
        )
      }
      const match = /^Bearer\s+(\S+)$/i.exec(request.headers["authorization"]?.trim() ?? "")
      if (match === null || !timingSafeEqual(digest(match[1]!), expected.value)) {
        return Effect.succeed(withId(Envelope.errorResponse(
          401,
          match === null ? "AUTH_REQUIRED" : "AUTH_INVALID_TOKEN",
          match === null ? "admin token required" : "invalid admin token",
          undefined,
          id
        )))
      }
    }
    return Effect.map(answer, withId)
  }
}

/**
 * `app` with `/metrics` answered by `metrics` in front of it (the API's port).
 *
 * @since 0.1.0
 * @category utils
 */
export const route = <E, R>(
  app: HttpApp.Default<E, R>,
  metrics: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>
): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const query = request.url.indexOf("?")
    return (query === -1 ? request.url : request.url.slice(0, query)) === path ? metrics(request) : app
  })
