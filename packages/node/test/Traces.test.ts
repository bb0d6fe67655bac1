/**
 * Traces (docs/operations.md "Traces"): the production server's tracer switch, with `OTEL_*` settings pointing at an
 * OTLP/HTTP JSON receiver started here, exports the span tree of one task from its POST to its webhook: the request
 * span (route template, status, account id, never the key), SQL spans under it, the engine's claim, submit, poll
 * and finish spans and the webhook attempt in the same trace, whose request carries that trace in `traceparent`. An
 * incoming `traceparent` is honoured. The settings reach the server through a `ConfigProvider`, as the environment
 * does in production.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { mkdtempSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Tracing from "../src/internal/tracing.js"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

/** A span as the OTLP/HTTP JSON body carries it (the fields the test reads). */
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** A local HTTP server answering 200 and keeping what it received. */
const listen = (onRequest: (url: string, headers: http.IncomingHttpHeaders, body: string) => void) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; server: http.Server }>((resume) => {
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          onRequest(req.url ?? "", req.headers, Buffer.concat(chunks).toString("utf8"))
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(
        0,
        "127.0.0.1",
        () => resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }))
      )
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

const attribute = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

const settings = (otlp: string, dataDir: string) =>
  ConfigProvider.fromMap(
    new Map([
      ["OTEL_EXPORTER_OTLP_ENDPOINT", otlp],
      ["OTEL_BSP_SCHEDULE_DELAY", "100"],
      ["OTEL_SERVICE_NAME", "mediagate-test"],
      ["OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test"],
      ["OTEL_EXPORTER_OTLP_HEADERS", "x-collector-token=abc%20def"],
      ["MEDIAGATE_DATA_DIR", dataDir],
      ["MEDIAGATE_FILE_SECRET", "trace-test-secret"],
      ["MEDIAGATE_SIM_TIME_SCALE", "0.01"],
      ["MEDIAGATE_WEBHOOK_ALLOW_PRIVATE", "true"]
    ])
  )

describe("traces over OTLP/HTTP", () => {
  it.live(
    "one task's span tree from its POST to its webhook; an incoming traceparent is honoured",
    () =>
      Effect.gen(function*() {
        const spans: Array<OtlpSpan> = []
        const exports: Array<{ headers: http.IncomingHttpHeaders; resource: unknown }> = []
        const collector = yield* listen((url, headers, body) => {
          if (url !== "/v1/traces") return
          const data = JSON.parse(body) as {
            resourceSpans: ReadonlyArray<
              { resource: unknown; scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<OtlpSpan> }> }
            >
          }
          for (const resourceSpans of data.resourceSpans) {
            exports.push({ headers, resource: resourceSpans.resource })
            for (const scope of resourceSpans.scopeSpans) for (const span of scope.spans) spans.push(span)
          }
        })
        const webhooks: Array<{ headers: http.IncomingHttpHeaders; body: string }> = []
        const receiver = yield* listen((_url, headers, body) => void webhooks.push({ headers, body }))
        const dataDir = mkdtempSync(join(tmpdir(), "mg-traces-"))
        const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

        // the server runs inside the switch; its scope (and the exporter's, flushed last) closes when this ends
        const { accountId, key, taskId } = yield* Tracing.apply(Effect.gen(function*() {
          const { server, service } = yield* Server.serve(Mediagate.layerConfig, {
            port: 0,
            host: "127.0.0.1",
            bootstrap: false
          })
          const keys = Option.getOrThrow(yield* service.bootstrap())
          const base = Server.urlOf(server)
          const post = (headers: Record<string, string>) =>
            Effect.promise(() =>
              fetch(`${base}/api/v1/vendor4/text-to-image`, {
                method: "POST",
                headers: { authorization: `Bearer ${keys.test.key}`, "content-type": "application/json", ...headers },
                body: JSON.stringify({
                  model: "vendor4-4-0",
                  input: { prompt: "a traced kite", size: "1K" },
                  webhookUrl: `${receiver.url}/hook`
                })
              }).then(async (response) => ({
                status: response.status,
                body: await response.json() as { data: { id: string } }
              }))
            )
          const created = yield* post({})
          expect(created.status).toBeLessThan(300)
          for (let i = 0; i < 400 && webhooks.length === 0; i++) yield* Effect.sleep("25 millis")
          expect(webhooks, "the webhook arrived").toHaveLength(1)
          // a request continuing a caller's trace
          const continued = yield* post({ traceparent: incoming })
          expect(continued.status).toBeLessThan(300)
          return { accountId: keys.account.id, key: keys.test.key, taskId: created.body.data.id }
        })).pipe(Effect.scoped, Effect.withConfigProvider(settings(collector.url, dataDir)))

        // the request span: route template, status, account id; the key appears nowhere
        const requests = spans.filter((s) => s.name.startsWith("http.server POST"))
        const request = requests.find((s) => s.traceId !== incoming.slice(3, 35))!
        expect(request, "the POST's span").toBeDefined()
        expect(attribute(request, "http.route")).toBe("/api/v1/vendor4/text-to-image")
        expect([200, 201, 202]).toContain(Number(attribute(request, "http.response.status_code")))
        expect(attribute(request, "mediagate.account_id")).toBe(accountId)
        expect(JSON.stringify(spans)).not.toContain(key)
        expect(JSON.stringify(spans)).not.toContain(key.slice(8))
        const trace = spans.filter((s) => s.traceId === request.traceId)
        const byId = new Map(trace.map((s) => [s.spanId, s]))
        const under = (span: OtlpSpan, ancestor: OtlpSpan): boolean => {
          for (
            let at: OtlpSpan | undefined = span;
            at !== undefined;
            at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined
          ) {
            if (at.parentSpanId === ancestor.spanId) return true
          }
          return false
        }
        // SQL statements of the request, under its span
        expect(trace.filter((s) => s.name.startsWith("sql.") && under(s, request)).length).toBeGreaterThan(0)
        // the engine's steps of the task, in the same trace
        for (const name of ["Worker.claim", "Worker.step", "Worker.submit", "Worker.poll", "Worker.finish"]) {
          const found = trace.filter((s) => s.name === name)
          expect(found.length, name).toBeGreaterThan(0)
          expect(attribute(found[0]!, "mediagate.task_id"), name).toBe(taskId)
        }
        const submit = trace.find((s) => s.name === "Worker.submit")!
        expect(attribute(submit, "mediagate.family")).toBe("vendor4")
        expect(attribute(submit, "mediagate.model")).toBe("vendor4-4-0")
        expect(trace.some((s) => s.name === "Upstream.submit" && attribute(s, "mediagate.family") === "vendor4")).toBe(
          true
        )
        // the webhook attempt, in the same trace; its request carries it
        const attempt = trace.find((s) => s.name === "Webhooks.attemptDelivery")
        expect(attempt, "the webhook attempt's span").toBeDefined()
        expect(attribute(attempt!, "mediagate.attempt")).toBe(1)
        expect(Number(attribute(attempt!, "http.response.status_code"))).toBe(200)
        expect(typeof attribute(attempt!, "mediagate.event_id")).toBe("string")
        expect(typeof attribute(attempt!, "mediagate.delivery_id")).toBe("string")
        const traceparent = String(webhooks[0]!.headers["traceparent"])
        expect(traceparent).toMatch(new RegExp(`^00-${request.traceId}-${attempt!.spanId}-01$`))
        // the incoming traceparent: the request's span continues the caller's trace
        const continuing = requests.find((s) => s.traceId === incoming.slice(3, 35))
        expect(continuing, "the span of the request with a traceparent").toBeDefined()
        expect(continuing!.parentSpanId).toBe(incoming.slice(36, 52))
        // the exporter's own settings: resource and headers
        expect(exports[0]!.headers["x-collector-token"]).toBe("abc def")
        expect(JSON.stringify(exports[0]!.resource)).toContain("mediagate-test")
        expect(JSON.stringify(exports[0]!.resource)).toContain("deployment.environment")
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})

describe("the OTEL settings", () => {
  const read = (entries: Record<string, string>) =>
    Effect.runSync(
      Effect.either(Effect.withConfigProvider(Tracing.config, ConfigProvider.fromMap(new Map(Object.entries(entries)))))
    )

  it("off without an endpoint, when disabled and with the exporter none", () => {
    const none = read({})
    expect(none._tag === "Right" && Option.isNone(none.right)).toBe(true)
    for (const off of [{ OTEL_SDK_DISABLED: "true" }, { OTEL_TRACES_EXPORTER: "none" }]) {
      const settings = read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", ...off })
      expect(settings._tag === "Right" && Option.isNone(settings.right)).toBe(true)
    }
  })

  it("the traces endpoint as given, else the base endpoint + /v1/traces; signal headers win", () => {
    const base = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "a=1,b=2",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "b=3"
    })
    expect(base._tag === "Right" && Option.getOrThrow(base.right)).toMatchObject({
      url: "http://collector:4318/v1/traces",
      headers: { a: "1", b: "3" },
      serviceName: "mediagate",
      protocol: "http/json"
    })
    const traces = read({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://x.example/otlp/traces",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://y:4318"
    })
    expect(traces._tag === "Right" && Option.getOrThrow(traces.right).url).toBe("https://x.example/otlp/traces")
  })

  it("invalid settings are configuration errors", () => {
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "zipkin" })._tag).toBe("Left")
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "novalue" })._tag).toBe(
      "Left"
    )
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })._tag).toBe(
      "Left"
    )
  })
})
