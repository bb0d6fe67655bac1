/**
 * `Metrics.render`, the Prometheus text of Effect metrics, for every kind of metric Effect has: counters (`_total`
 * added where missing; a non-incremental counter is a gauge), gauges, histograms (cumulative buckets), summaries,
 * frequencies; names and label names reduced to Prometheus characters, label values and help escaped.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as Metrics from "../src/Metrics.js"

/** The exposition of the metrics whose names start with `prefix` (this test's own). */
const renderOwn = (prefix: string) =>
  Metrics.render(Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name.startsWith(prefix)))

describe("Metrics.render", () => {
  it.effect("counters, gauges, histograms, summaries and frequencies", () =>
    Effect.gen(function*() {
      const requests = Metric.counter("render_a_requests", { description: "Requests", incremental: true })
      yield* Metric.increment(Metric.tagged(requests, "route", "/a"))
      yield* Metric.incrementBy(Metric.tagged(requests, "route", "/b \"q\"\\"), 2)
      yield* Metric.incrementBy(Metric.counter("render_a_level", { description: "Up and down" }), -3)
      yield* Metric.set(Metric.gauge("render_a.temp-c", { description: "A line\nand a \\ backslash" }), 21.5)
      const latency = Metric.histogram("render_a_seconds", MetricBoundaries.fromIterable([0.1, 1]), "Latency")
      yield* Metric.update(latency, 0.05)
      yield* Metric.update(latency, 0.5)
      yield* Metric.update(latency, 5)
      const sizes = Metric.summary({
        name: "render_a_bytes",
        maxAge: "1 minute",
        maxSize: 10,
        error: 0,
        quantiles: [0.5]
      })
      yield* Metric.update(sizes, 10)
      yield* Metric.update(sizes, 30)
      const kinds = Metric.frequency("render_a_kinds", { description: "Kinds" })
      yield* Metric.update(kinds, "png")
      yield* Metric.update(kinds, "png")

      const lines = renderOwn("render_a").split("\n")
      const family = (name: string) => lines.filter((line) => line.includes(` ${name} `) || line.startsWith(name))
      // one family for both series
      const series = family("render_a_requests_total")
      expect(series.slice(0, 2)).toEqual([
        "# HELP render_a_requests_total Requests",
        "# TYPE render_a_requests_total counter"
      ])
      expect(series.slice(2).sort()).toEqual([
        "render_a_requests_total{route=\"/a\"} 1",
        "render_a_requests_total{route=\"/b \\\"q\\\"\\\\\"} 2"
      ])
      expect(family("render_a_level")).toEqual([
        "# HELP render_a_level Up and down",
        "# TYPE render_a_level gauge",
        "render_a_level -3"
      ])
      expect(family("render_a_temp_c")).toEqual([
        "# HELP render_a_temp_c A line\\nand a \\\\ backslash",
        "# TYPE render_a_temp_c gauge",
        "render_a_temp_c 21.5"
      ])
      expect(family("render_a_seconds")).toEqual([
        "# HELP render_a_seconds Latency",
        "# TYPE render_a_seconds histogram",
        "render_a_seconds_count 3",
        "render_a_seconds_sum 5.55",
        "render_a_seconds_bucket{le=\"0.1\"} 1",
        "render_a_seconds_bucket{le=\"1\"} 2",
        "render_a_seconds_bucket{le=\"+Inf\"} 3"
      ])
      expect(family("render_a_bytes")).toEqual([
        "# HELP render_a_bytes render_a_bytes",
        "# TYPE render_a_bytes summary",
        "render_a_bytes{quantile=\"0.5\"} 10",
        "render_a_bytes_sum 40",
        "render_a_bytes_count 2"
      ])
      expect(family("render_a_kinds_total")).toEqual([
        "# HELP render_a_kinds_total Kinds",
        "# TYPE render_a_kinds_total counter",
        "render_a_kinds_total{key=\"png\"} 2"
      ])
    }))
})
