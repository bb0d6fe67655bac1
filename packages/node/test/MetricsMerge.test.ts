/**
 * The metrics of several threads as one exposition (`Metrics.merge`): series of one name and labels combined —
 * counters and histograms added, the highest of gauges —, other series kept, one family per name, and the result
 * the same text `render` writes for one registry.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as Metrics from "../src/Metrics.js"

const counter = (
  name: string,
  value: number,
  labels: ReadonlyArray<readonly [string, string]> = []
): Metrics.Series => ({
  kind: "counter",
  name,
  help: name,
  labels,
  value
})

describe("Metrics.merge", () => {
  it("adds counters and histograms of the same series, keeps the highest gauge and the other series", () => {
    const histogram = (count: number, sum: number, buckets: ReadonlyArray<number>): Metrics.Series => ({
      kind: "histogram",
      name: "d_seconds",
      help: "d",
      labels: [["route", "/x"]],
      points: [[0.1, buckets[0]!], [Infinity, buckets[1]!]],
      count,
      sum
    })
    const gauge = (value: number): Metrics.Series => ({ kind: "gauge", name: "g", help: "g", labels: [], value })
    const merged = Metrics.merge(
      [counter("a_total", 2, [["state", "ok"]]), histogram(3, 0.5, [2, 3]), gauge(1)],
      [
        counter("a_total", 5, [["state", "ok"]]),
        counter("a_total", 1, [["state", "failed"]]),
        histogram(1, 2, [0, 1]),
        gauge(0)
      ]
    )
    expect(merged).toEqual([
      counter("a_total", 7, [["state", "ok"]]),
      histogram(4, 2.5, [2, 4]),
      gauge(1),
      counter("a_total", 1, [["state", "failed"]])
    ])
    const text = Metrics.renderSeries(merged)
    // one HELP/TYPE per family, the family's series together
    expect(text.match(/# TYPE a_total counter/g)).toHaveLength(1)
    expect(text).toContain("a_total{state=\"ok\"} 7\na_total{state=\"failed\"} 1\n")
    expect(text).toContain("d_seconds_count{route=\"/x\"} 4\nd_seconds_sum{route=\"/x\"} 2.5\n")
    expect(text).toContain("d_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4\n")
  })

  it("renders a registry's snapshot as render does, series by series", () => {
    const requests = Metric.counter("merge_test_requests", { description: "requests", incremental: true })
    const latency = Metric.histogram("merge_test_seconds", MetricBoundaries.fromIterable([0.5, 1]), "latency")
    requests.unsafeUpdate(3, [])
    latency.unsafeUpdate(0.7, [])
    const snapshot = Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name.startsWith("merge_test_"))
    const series = Metrics.seriesOf(snapshot)
    expect(new Set(series.map((s) => `${s.kind} ${s.name}`))).toEqual(
      new Set(["counter merge_test_requests_total", "histogram merge_test_seconds"])
    )
    expect(Metrics.renderSeries(series)).toBe(Metrics.render(snapshot))
    // a second thread's identical series double every count
    const doubled = Metrics.renderSeries(Metrics.merge(series, series))
    expect(doubled).toContain("merge_test_requests_total 6\n")
    expect(doubled).toContain("merge_test_seconds_count 2\n")
  })
})
