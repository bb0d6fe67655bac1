/**
 * A transport and a family that exist only in the tests, each added the way docs/extending.md describes, served end
 * to end through the channel router: the HTTP API of `[...Families.registry, vendor10]`, the real engine and worker,
 * and `Channels.layer({ families, transportRegistry: [...Transports.registry, echo] })` over a memory channel store.
 * A live vendor10 request runs on a stored echo channel (submit, polls, its file copied into our store, succeeded);
 * the admin checks read the same registry; and when the channel fails, its breaker's transitions are logged through
 * the program's logger.
 */
import { NodeContext, NodeHttpServer } from "@effect/platform-node"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { describe, expect, it } from "@effect/vitest"
import { type Catalog, Families, Pricing, RateLimit } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Worker from "@mediagate/engine/Worker"
import { Health, Http, ServerConfig } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { checkShape } from "../../../src/ChannelAdmin.js"
import * as Channels from "../../../src/Channels.js"
import * as ChannelSecrets from "../../../src/ChannelSecrets.js"
import { ChannelRuntime, ChannelStore, type ChannelTransport } from "../../../src/ChannelStore.js"
import * as Estimates from "../../../src/Estimates.js"
import * as FileService from "../../../src/FileService.js"
import * as FileStore from "../../../src/FileStore.js"
import * as MemoryChannels from "../../../src/MemoryChannels.js"
import { PriceBook } from "../../../src/Prices.js"
import * as ResultCopy from "../../../src/ResultCopy.js"
import * as ResultLinks from "../../../src/ResultLinks.js"
import * as Simulated from "../../../src/Simulated.js"
import * as Transports from "../../../src/transports/index.js"
import * as UrlSigner from "../../../src/UrlSigner.js"
import * as VendorPlanner from "../../../src/VendorPlanner.js"
import { vendor10 } from "../../families/vendor10/index.js"
import * as TestPorts from "../../ports.js"
import { echo, state } from "./index.js"

/** The family registry with one more line. */
const families = [...Families.registry, vendor10] as const
/** The transport registry with one more line. */
const transportRegistry = [...Transports.registry, echo] as const

const key = `mg_live_${"E".repeat(32)}`
const directory = mkdtempSync(join(tmpdir(), "mg-echo-"))

/** The log lines of the program, as its logger received them. */
const lines: Array<string> = []
const RecordingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ message }) => void lines.push([message].flat().map(String).join(" ")))
)

/** The HTTP layer and the real engine, router and vendor layers of both registries, on a test server. */
const Stack = Http.layerFor(families).pipe(
  Layer.provideMerge(NodeHttpServer.layerTest),
  Layer.provideMerge(FileService.layer),
  Layer.provideMerge(Worker.layer({ concurrency: 4, idle: "50 millis", pollDelay: () => "25 millis" })),
  Layer.provideMerge(TaskService.layer),
  Layer.provideMerge(ResultLinks.layer),
  Layer.provideMerge(Channels.layer({ families, transportRegistry, breaker: { failures: 1 } })),
  Layer.provideMerge(TaskStorage.layerMemory()),
  Layer.provideMerge(MemoryChannels.layer().pipe(Layer.provide(ChannelSecrets.layer()))),
  Layer.provideMerge(ResultCopy.layer({ retryDelay: () => "20 millis" })),
  Layer.provideMerge(Simulated.layer({ videoSeconds: 0.05, families })),
  Layer.provideMerge(VendorPlanner.layer({ families })),
  Layer.provideMerge(PriceBook.layer(Pricing.defaults(families))),
  Layer.provideMerge(Estimates.layer),
  Layer.provideMerge(Layer.mergeAll(
    FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer)),
    UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("echo") })
  )),
  Layer.provide(Billing.layerUnmetered),
  Layer.provide(TestPorts.withKey(key, "acct_echo")),
  Layer.provide(Health.layerAlwaysReady),
  Layer.provide(Layer.sync(RateLimit.RateWindows, () => RateLimit.makeMemory())),
  Layer.provide(ServerConfig.layer({ allowPrivateAddresses: true }))
)

/** GETs or POSTs with the key; answers the status and the parsed body. */
const send = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(request.pipe(HttpClientRequest.bearerToken(key)))
    return { status: response.status, body: (yield* response.json) as { data: Record<string, unknown> } }
  }).pipe(Effect.scoped)

const create = (prompt: string) =>
  send(
    HttpClientRequest.post("/api/v1/vendor10/text-to-video").pipe(
      HttpClientRequest.bodyUnsafeJson({ model: "vendor10-b", input: { prompt, duration: 5, resolution: "720p" } })
    )
  )

describe("a transport and a family added by a folder and one registry line each, through the channel router", () => {
  it("the admin checks read the registry they are given", () => {
    const shape = {
      settings: { baseUrl: "https://echo.example.com" },
      credentials: false,
      families: ["vendor3"] as const,
      models: []
    }
    const transport = "echo" as ChannelTransport
    expect(checkShape({ ...shape, transport }, transportRegistry)).toBe(
      "settings.base_url: an echo channel takes no base_url"
    )
    expect(checkShape({ ...shape, transport, settings: {} }, transportRegistry)).toBeUndefined()
    expect(checkShape({ ...shape, transport })).toBe("transport: echo is not a transport")
  })

  it.live(
    "runs a live request of the family on a channel of the transport; a failing channel's breaker logs",
    () =>
      Effect.gen(function*() {
        const store = yield* ChannelStore
        // the environment's default channel serves every family of the registry the router was given
        const defaults = (yield* ChannelRuntime).defaults
        expect(defaults.map((channel) => ({ id: channel.id, families: channel.families }))).toEqual([
          { id: Channels.defaultIds.simulated, families: families.map((family) => family.name) }
        ])
        // a larger registry's names pass through the shipped types unchanged (docs/extending.md)
        const channel = yield* store.create({
          name: "echo",
          transport: "echo" as ChannelTransport,
          families: ["vendor10" as Catalog.TaskFamily],
          settings: { mapping: { "vendor10-b": { target: "echo-large" } } }
        })

        const created = yield* create("a red kite")
        expect(created).toMatchObject({ status: 201, body: { data: { status: "pending", provider: "vendor10" } } })
        const id = String(created.body.data["id"])
        let task = (yield* send(HttpClientRequest.get(`/api/v1/tasks/${id}`))).body.data
        for (let i = 0; i < 400 && task["status"] !== "succeeded" && task["status"] !== "failed"; i++) {
          yield* Effect.sleep(25)
          task = (yield* send(HttpClientRequest.get(`/api/v1/tasks/${id}`))).body.data
        }
        expect(task).toMatchObject({ status: "succeeded", provider: "vendor10", model: "vendor10-b" })
        // the channel's transport ran the job: one submit, then polls until its file was copied
        const calls = state.calls.filter((call) => call.task === id)
        expect(calls[0]).toEqual({ call: "submit", channel: channel.id, task: id })
        expect(calls.slice(1).every((call) => call.call === "poll" && call.channel === channel.id)).toBe(true)
        expect(calls.length).toBeGreaterThanOrEqual(3)
        // the file is the echo upstream's, through the channel's mapping, served from our store
        const result = task["result"] as ReadonlyArray<{ url: string; format: string; size_bytes: number }>
        expect(result.map(({ format }) => format)).toEqual(["mp4"])
        const file = readFileSync(join(directory, decodeURIComponent(new URL(result[0]!.url).pathname.slice(7))))
        expect(file.toString()).toBe("echo-large: a red kite")
        expect(file.length).toBe(result[0]!.size_bytes)

        // the channel fails: its breaker opens (one failure, in this test) and the worker that caused it logs it
        state.fail = true
        const failing = yield* create("a blue kite")
        expect(failing.status).toBe(201)
        const opened = `channel ${channel.id}: circuit closed -> open (1 consecutive failures: echo: 503)`
        for (let i = 0; i < 200 && !lines.includes(opened); i++) yield* Effect.sleep(25)
        expect(lines).toContain(opened)
        const failed = String(failing.body.data["id"])
        expect(lines).toContain(
          `task ${failed}: submit on channel ${channel.id} failed (echo: 503); trying the next channel`
        )
      }).pipe(Effect.provide(Stack), Effect.provide(RecordingLogger)),
    { timeout: 60_000 }
  )
})
