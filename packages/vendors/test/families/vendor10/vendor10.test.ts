/**
 * A tenth family, defined only here (this folder) and added to the registry with one line, served end to end: the
 * HttpApi, its handlers, the planner, the price book, the simulated upstream and the engine are all composed from
 * `[...Families.registry, vendor10]`. Its endpoint validates with its own rules, accepts a valid request at its own
 * price, and its task runs to `succeeded` with the outputs the family declares.
 */
import { NodeContext, NodeHttpServer } from "@effect/platform-node"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { describe, expect, it } from "@effect/vitest"
import { Api, Families, Pricing, RateLimit } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Worker from "@mediagate/engine/Worker"
import { Health, Http, ServerConfig } from "@mediagate/server"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Estimates from "../../../src/Estimates.js"
import * as FileService from "../../../src/FileService.js"
import * as FileStore from "../../../src/FileStore.js"
import { PriceBook } from "../../../src/Prices.js"
import * as ResultLinks from "../../../src/ResultLinks.js"
import * as Simulated from "../../../src/Simulated.js"
import * as Upstreams from "../../../src/Upstreams.js"
import * as UrlSigner from "../../../src/UrlSigner.js"
import * as VendorPlanner from "../../../src/VendorPlanner.js"
import * as TestPorts from "../../ports.js"
import { probeVideoBytes } from "../../probe.js"
import { vendor10 } from "./index.js"

/** The registry with one more line. */
const registry = [...Families.registry, vendor10] as const

const key = `mg_live_${"T".repeat(32)}`
/** The ports the test does not exercise, and a key service knowing one live key. */
const Ports = TestPorts.withKey(key, "acct_ten")

/** The charges billing was asked for. */
const charges: Array<{ readonly amountMicros: number; readonly description: string }> = []
const RecordingBilling = Layer.succeed(Billing.Billing, {
  charge: (charge) => Effect.sync(() => void charges.push(charge)),
  refund: () => Effect.void
})

const directory = mkdtempSync(join(tmpdir(), "mg-vendor10-"))

/** The HTTP layer and the real engine and vendor layers of the registry, on a test server. */
const Stack = Http.layerFor(registry).pipe(
  Layer.provideMerge(NodeHttpServer.layerTest),
  Layer.provideMerge(FileService.layer),
  Layer.provideMerge(Worker.layer({ concurrency: 4, idle: "50 millis", pollDelay: () => "25 millis" })),
  Layer.provideMerge(TaskService.layer),
  Layer.provideMerge(ResultLinks.layer),
  Layer.provideMerge(TaskStorage.layerMemory()),
  Layer.provideMerge(Upstreams.layer({}, undefined, registry)),
  Layer.provideMerge(Simulated.layer({ videoSeconds: 0.05, families: registry })),
  Layer.provideMerge(VendorPlanner.layer({ families: registry })),
  Layer.provideMerge(PriceBook.layer(Pricing.defaults(registry))),
  Layer.provideMerge(Estimates.layer),
  Layer.provideMerge(Layer.mergeAll(
    FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer)),
    UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("vendor10") })
  )),
  Layer.provide(RecordingBilling),
  Layer.provide(Ports),
  Layer.provide(Health.layerAlwaysReady),
  Layer.provide(RateLimit.layerMemory),
  Layer.provide(ServerConfig.layer({ allowPrivateAddresses: true }))
)

/** POSTs a raw JSON body with the key; answers the status and the parsed body. */
const post = (path: string, body: unknown) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(path).pipe(HttpClientRequest.bearerToken(key), HttpClientRequest.bodyUnsafeJson(body))
    )
    return { status: response.status, body: yield* response.json }
  }).pipe(Effect.scoped)

describe("a tenth family, added by a folder and one registry line", () => {
  it.live(
    "validates with its rules, accepts a valid request at its price, and runs to succeeded with its outputs",
    () =>
      Effect.gen(function*() {
        const path = "/api/v1/vendor10/text-to-video"
        // its own per-model rules, answered as every other validation failure
        expect(yield* post(path, { model: "vendor10-b", input: { prompt: "a red kite", duration: 8 } })).toEqual({
          status: 400,
          body: {
            success: false,
            error: {
              code: "VALIDATION_ERROR",
              message: "input.duration: must be an integer from 2 to 6 for model vendor10-b",
              request_id: expect.any(String)
            }
          }
        })
        expect(yield* post(path, { model: "vendor10-b", input: { prompt: "p", loop: true } })).toMatchObject({
          status: 400,
          body: { error: { message: "input.loop: is not supported by model vendor10-b" } }
        })
        // the composed API documents its endpoint; the shipped one does not have it
        const spec = yield* HttpClient.get("/api/v1/openapi.json").pipe(Effect.flatMap((r) => r.json), Effect.scoped)
        expect(Object.keys(Object(spec).paths)).toContain(path)
        expect(Object.keys(Api.MediagateApi.groups.generation.endpoints)).not.toContain("vendor10TextToVideo")

        // the typed client of the composed API has a method for it
        const client = yield* HttpApiClient.make(Api.make(registry), {
          transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(key))
        })
        const ack = yield* client.generation.vendor10TextToVideo({
          payload: { model: "vendor10-b", input: { prompt: "a red kite", duration: 5, resolution: "720p" } },
          headers: {}
        })
        expect(ack).toMatchObject({
          status: "pending",
          type: "text-to-video",
          provider: "vendor10",
          model: "vendor10-b"
        })
        // 5 s at 0.05 USD per 720p second, charged at accept
        expect(charges).toMatchObject([{
          taskId: ack.id,
          amountMicros: 250_000,
          description: "vendor10-b text-to-video"
        }])

        let task = yield* client.tasks.get({ path: { id: ack.id } })
        for (let i = 0; i < 400 && task.status !== "succeeded" && task.status !== "failed"; i++) {
          yield* Effect.sleep(25)
          task = yield* client.tasks.get({ path: { id: ack.id } })
        }
        expect(task).toMatchObject({ status: "succeeded", provider: "vendor10", cost: 0.25 })
        expect(task.input).toEqual({ prompt: "a red kite", duration: 5, resolution: "720p" })
        expect(task.result?.map(({ size_bytes: _size, url: _url, ...item }) => item)).toEqual([
          { kind: "output", format: "mp4", width: 1280, height: 720, duration: 5 }
        ])
        const file = readFileSync(join(directory, decodeURIComponent(new URL(task.result![0]!.url).pathname.slice(7))))
        expect(file.length).toBe(task.result![0]!.size_bytes)
        expect(probeVideoBytes(file)).toMatchObject({ codec: "h264", width: 1280, height: 720 })
        expect(Math.abs(probeVideoBytes(file).durationSeconds - 5)).toBeLessThanOrEqual(0.15)
      }).pipe(Effect.provide(Stack)),
    { timeout: 60_000 }
  )
})
