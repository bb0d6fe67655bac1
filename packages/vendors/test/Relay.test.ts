/**
 * The relay upstream against a second instance of our own server: tasks forwarded over `/api/v1`, remote states
 * mapped, result files copied into the local store under local signed URLs, remote failures mapped.
 */
import { NodeContext, NodeHttpServer } from "@effect/platform-node"
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import { ApiKey, RateLimit, Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as Planner from "@mediagate/engine/Planner"
import * as EngineResultLinks from "@mediagate/engine/ResultLinks"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Worker from "@mediagate/engine/Worker"
import { Health, Http, ServerConfig } from "@mediagate/server"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer } from "node:http"
import { connect, createServer as createTcpServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Estimates from "../src/Estimates.js"
import * as FileService from "../src/FileService.js"
import * as FileStore from "../src/FileStore.js"
import { PriceBook } from "../src/Prices.js"
import * as Relay from "../src/Relay.js"
import * as ResultCopy from "../src/ResultCopy.js"
import * as Simulated from "../src/Simulated.js"
import * as Upstreams from "../src/Upstreams.js"
import * as UrlSigner from "../src/UrlSigner.js"
import * as TestPorts from "./ports.js"

const remoteKey = `mg_live_${"R".repeat(32)}`
/** The remote service's ports that the relay does not touch, and a key service knowing one key. */
const RemotePorts = TestPorts.withKey(remoteKey, "acct_remote")

/** A store and signer on a fresh directory, signing URLs for `baseUrl`. */
const files = (baseUrl: string) => {
  const directory = mkdtempSync(join(tmpdir(), "mg-relay-"))
  return {
    directory,
    layer: Layer.mergeAll(
      FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer)),
      UrlSigner.layer({ publicBaseUrl: baseUrl, secret: Redacted.make(baseUrl) })
    )
  }
}

/** The result copier on a store and signer. */
const withCopier = <E>(layer: Layer.Layer<FileStore.FileStore | UrlSigner.UrlSigner, E>) =>
  ResultCopy.layer().pipe(Layer.provideMerge(layer))

/** A second Mediagate on a real port (HTTP layer, engine, simulated upstream, file service); answers its URL. */
const startRemote = Effect.gen(function*() {
  const server = yield* Layer.build(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
  const address = Context.get(server, HttpServer.HttpServer).address
  const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
  const App = Http.layer.pipe(
    Layer.provideMerge(FileService.layer),
    Layer.provideMerge(Worker.layer({ concurrency: 8, idle: "50 millis", pollDelay: () => "25 millis" })),
    Layer.provideMerge(TaskService.layer),
    Layer.provide(EngineResultLinks.layerAsStored),
    Layer.provideMerge(TaskStorage.layerMemory()),
    Layer.provideMerge(Upstreams.layer()),
    Layer.provide(PriceBook.layer()),
    Layer.provideMerge(Simulated.layer({ videoSeconds: 0.2, imageSeconds: 0.1 })),
    Layer.provideMerge(files(url).layer),
    Layer.provide(Estimates.layer),
    Layer.provide(Planner.layerFixed({ priceMicros: 0, estimatedSeconds: 1 })),
    Layer.provide(Billing.layerUnmetered),
    Layer.provide(RemotePorts),
    Layer.provide(Health.layerAlwaysReady),
    Layer.provide(RateLimit.layerMemory),
    Layer.provide(ServerConfig.layer({ allowPrivateAddresses: true }))
  )
  yield* Layer.build(App).pipe(Effect.provide(server))
  return url
})

const awaitTerminal = (id: string) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage.TaskStorage
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      const task = Option.getOrThrow(yield* storage.getById(id))
      if (["succeeded", "failed", "cancelled", "expired"].includes(task.status)) return task
      yield* Effect.sleep(25)
    }
    return yield* Effect.dieMessage(`task ${id} did not finish`)
  })

describe("relay upstream", () => {
  it.live("forwards a task to another instance, copies its files, and maps its failures", () =>
    Effect.gen(function*() {
      const remoteUrl = yield* startRemote
      const local = files("http://local.example")
      const Local = Worker.layer({ concurrency: 4, idle: "50 millis", pollDelay: () => "50 millis" }).pipe(
        Layer.provideMerge(TaskService.layer),
        Layer.provide(EngineResultLinks.layerAsStored),
        Layer.provide(EngineResultLinks.layerAsStored),
        Layer.provideMerge(TaskStorage.layerMemory()),
        Layer.provideMerge(Upstreams.layerRelayed({ vendor3: "relay" })),
        Layer.provide(PriceBook.layer()),
        Layer.provideMerge(Relay.layer({ baseUrl: remoteUrl, apiKey: Redacted.make(remoteKey) })),
        Layer.provideMerge(Simulated.layer({ videoSeconds: 60 })),
        Layer.provideMerge(withCopier(local.layer)),
        Layer.provide(Estimates.layer),
        Layer.provide(Planner.layerFixed({ priceMicros: 0, estimatedSeconds: 1 })),
        Layer.provide(Billing.layerUnmetered)
      )
      yield* Effect.gen(function*() {
        const tasks = yield* Services.TaskService
        const me = TestPorts.principal("acct_local")
        const ok = yield* tasks.create(me, {
          endpoint: "vendor3/text-to-video",
          request: {
            model: "vendor3-3_fast",
            input: { prompt: "a relayed lighthouse", aspect_ratio: "9:16" },
            metadata: { ref: 7 }
          },
          idempotencyKey: undefined
        })
        const bad = yield* tasks.create(me, {
          endpoint: "vendor3/text-to-video",
          request: { model: "vendor3-3", input: { prompt: "x [sim:fail]", aspect_ratio: "16:9" } },
          idempotencyKey: undefined
        })
        const done = yield* awaitTerminal(ok.id)
        expect(done.status).toBe("succeeded")
        // the job id is the other service's task id
        expect(done.upstreamJobId).toMatch(/^task_/)
        expect(done.upstreamJobId).not.toBe(ok.id)
        const [item] = done.result!
        expect(item).toMatchObject({ format: "mp4", duration: 8, width: 720, height: 1280, kind: "output" })
        // the file now lives in the local store, under a local signed URL
        const url = new URL(item!.url)
        expect(url.origin).toBe("http://local.example")
        expect(readFileSync(join(local.directory, url.pathname.replace(/^\/files\//, ""))).length).toBe(
          item!.size_bytes
        )
        const failed = yield* awaitTerminal(bad.id)
        expect(failed).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" } })
        // live tasks of other families still run on the simulated upstream
        expect(ApiKey.keyPattern.test(remoteKey)).toBe(true)
      }).pipe(Effect.provide(Local), Effect.scoped)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("submitting the same task twice finds the same remote task (idempotent relay)", () =>
    Effect.gen(function*() {
      const remoteUrl = yield* startRemote
      const local = files("http://local.example")
      const relay = yield* Layer.build(
        Relay.layer({ baseUrl: remoteUrl, apiKey: Redacted.make(remoteKey) }).pipe(
          Layer.provide(withCopier(local.layer))
        )
      )
      const upstream = yield* Effect.provide(Relay.RelayUpstream, relay)
      const task = Fixtures.taskRecord({
        id: "task_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        input: { prompt: "p", aspect_ratio: "16:9" }
      })
      const first = yield* upstream.submit(task)
      const again = yield* upstream.submit(task)
      expect(again.jobId).toBe(first.jobId)
      const refused = yield* Effect.flip(
        Effect.flatMap(
          Layer.build(
            Relay.layer({ baseUrl: remoteUrl, apiKey: Redacted.make(`mg_live_${"W".repeat(32)}`) }).pipe(
              Layer.provide(withCopier(local.layer))
            )
          ),
          (ctx) => Effect.flatMap(Effect.provide(Relay.RelayUpstream, ctx), (wrong) => wrong.submit(task))
        )
      )
      expect(refused).toMatchObject({ _tag: "UpstreamError", retryable: false })
      expect(refused.message).toContain("AUTH_INVALID_TOKEN")
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live(
    "a connection closed before any answer is tried once more on a new one, then the call fails saying so",
    () =>
      Effect.gen(function*() {
        const remoteUrl = yield* startRemote
        const remote = new URL(remoteUrl)
        // in front of the remote: the first `closing` connections are closed once their request arrives (what a
        // kept-alive connection meets when the other side's idle timeout closed it), the others pass through
        let closing = 1
        let connections = 0
        const open = new Set<Socket>()
        const proxy = createTcpServer((socket) => {
          connections++
          if (closing > 0) {
            closing--
            socket.once("data", () => socket.destroy())
            return
          }
          const upstream = connect(Number(remote.port), remote.hostname)
          open.add(socket)
          socket.once("close", () => open.delete(socket))
          socket.pipe(upstream).pipe(socket)
          socket.on("error", () => upstream.destroy())
          upstream.on("error", () => socket.destroy())
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))),
          () => Effect.promise(() => new Promise<void>((resolve) => proxy.close(() => resolve())))
        )
        const { port } = proxy.address() as { port: number }
        const relay = yield* Layer.build(
          Relay.layer({ baseUrl: `http://127.0.0.1:${port}`, apiKey: Redacted.make(remoteKey) }).pipe(
            Layer.provide(withCopier(files("http://local.example").layer))
          )
        )
        const upstream = yield* Effect.provide(Relay.RelayUpstream, relay)
        const submitted = yield* upstream.submit(Fixtures.taskRecord({ id: "task_01JZZZZZZZZZZZZZZZZZZZZZZX" }))
        expect(submitted.jobId).toMatch(/^task_/)
        expect(connections).toBe(2)

        // closed twice in a row: a failure that says why, after two connections (the kept-alive one closed first)
        for (const socket of open) socket.destroy()
        yield* Effect.sleep("100 millis")
        closing = 2
        connections = 0
        const failed = yield* Effect.flip(upstream.poll(Fixtures.taskRecord({}), submitted.jobId))
        expect(failed).toMatchObject({ _tag: "UpstreamError", retryable: true })
        expect(failed.message).toMatch(/other side closed|ECONNRESET|socket hang up/)
        expect(connections).toBe(2)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )

  it.live("a call that gets no answer says why: the cause below HTTP is in the message", () =>
    Effect.gen(function*() {
      // a port that nothing listens on any more
      const closed = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const server = createServer().listen(0, "127.0.0.1", () => {
            const { port } = server.address() as { port: number }
            server.close(() => resolve(port))
          })
        })
      )
      const relay = yield* Layer.build(
        Relay.layer({ baseUrl: `http://127.0.0.1:${closed}`, apiKey: Redacted.make(remoteKey) }).pipe(
          Layer.provide(withCopier(files("http://local.example").layer))
        )
      )
      const upstream = yield* Effect.provide(Relay.RelayUpstream, relay)
      const failed = yield* Effect.flip(upstream.submit(Fixtures.taskRecord({ id: "task_01JZZZZZZZZZZZZZZZZZZZZZZY" })))
      expect(failed).toMatchObject({ _tag: "UpstreamError", retryable: true })
      expect(failed.message).toMatch(/^relay: Transport error \(POST http:\/\/127\.0\.0\.1:\d+\/.*\): .*ECONNREFUSED/)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
