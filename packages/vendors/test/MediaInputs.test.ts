/**
 * Remote input media are fetched and checked when a task runs: a good file lets the task run, a file that breaks
 * its field's rule fails the task with INVALID_INPUT_MEDIA (refunded), and private targets are refused unless
 * allowed.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { type Catalog, Errors, Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as Planner from "@mediagate/engine/Planner"
import * as EngineResultLinks from "@mediagate/engine/ResultLinks"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Worker from "@mediagate/engine/Worker"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PNG } from "pngjs"
import * as Estimates from "../src/Estimates.js"
import * as FileStore from "../src/FileStore.js"
import * as Media from "../src/Media.js"
import { mediaChecks } from "../src/MediaInputs.js"
import { PriceBook } from "../src/Prices.js"
import * as Simulated from "../src/Simulated.js"
import * as Upstreams from "../src/Upstreams.js"
import * as UrlSigner from "../src/UrlSigner.js"

const png = (width: number, height: number) => PNG.sync.write(new PNG({ width, height }))

/** Served files; the clip is rendered by the test that needs it. */
const files: Record<string, Buffer> = {
  "/good.png": png(800, 600),
  "/tiny.png": png(100, 100),
  "/text.txt": Buffer.from("not media")
}

const serve = Effect.acquireRelease(
  Effect.async<Server>((resume) => {
    const server = createServer((req, res) => {
      const body = files[req.url ?? ""]
      if (body === undefined) {
        res.writeHead(404).end()
        return
      }
      res.writeHead(200, { "content-length": body.length }).end(body)
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

const principal = Fixtures.principal({ accountId: "acct_m", keyId: "key_m" })

/** Billing that records charges and refunds, and refuses charges of `refuse` micro-dollars. */
const recordingBilling = (refuse?: number) => {
  const ledger = { charges: [] as Array<{ amountMicros: number; description: string }>, refunds: [] as Array<number> }
  const layer = Layer.succeed(Billing.Billing, {
    charge: (charge) =>
      charge.amountMicros === refuse
        ? Effect.fail(new Errors.SpendLimitExceeded({ message: "the key's spend limit would be exceeded" }))
        : Effect.sync(() =>
          void ledger.charges.push({ amountMicros: charge.amountMicros, description: charge.description })
        ),
    refund: (refund) => Effect.sync(() => void ledger.refunds.push(refund.amountMicros))
  })
  return { ledger, layer }
}

const engine = (allowPrivate: boolean, billing: Layer.Layer<Billing.Billing> = Billing.layerUnmetered) => {
  const directory = mkdtempSync(join(tmpdir(), "mg-inputs-"))
  return Worker.layer({ concurrency: 4, idle: "50 millis", pollDelay: () => "25 millis" }).pipe(
    Layer.provideMerge(TaskService.layer),
    Layer.provide(EngineResultLinks.layerAsStored),
    Layer.provideMerge(TaskStorage.layerMemory()),
    Layer.provideMerge(Upstreams.layer({}, { allowPrivate, timeout: "5 seconds" })),
    Layer.provide(PriceBook.layer()),
    Layer.provideMerge(Simulated.layer({ videoSeconds: 0.05, imageSeconds: 0.05 })),
    Layer.provideMerge(FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer))),
    Layer.provideMerge(UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("s") })),
    Layer.provide(Estimates.layer),
    Layer.provide(Planner.layerFixed({ priceMicros: 1_000_000, estimatedSeconds: 1 })),
    Layer.provide(billing)
  )
}

const runTask = (endpoint: Catalog.EndpointKey, model: string, input: Record<string, unknown>) =>
  Effect.gen(function*() {
    const tasks = yield* Services.TaskService
    const storage = yield* TaskStorage.TaskStorage
    const ack = yield* tasks.create(principal, { endpoint, request: { model, input }, idempotencyKey: undefined })
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline) {
      const task = Option.getOrThrow(yield* storage.getById(ack.id))
      if (["succeeded", "failed", "expired"].includes(task.status)) return task
      yield* Effect.sleep(25)
    }
    return yield* Effect.dieMessage("task did not finish")
  })

describe("remote input media checks", () => {
  it("list every URL input of an endpoint with its rule, skipping data URIs", () => {
    const checks = mediaChecks("vendor1/multimodal-video", "vendor1-2", {
      prompt: "p",
      first_frame_url: "https://a.example/f.png",
      reference_video_urls: ["https://a.example/v.mp4"],
      reference_audio_urls: ["https://a.example/a.mp3"]
    })
    expect(checks.map((c) => [c.path, c.kind])).toEqual([
      ["first_frame_url", "image"],
      ["reference_video_urls[0]", "video"],
      ["reference_audio_urls[0]", "audio"]
    ])
    expect(mediaChecks("vendor5/image-to-video", "vendor5q3-pro", { images: ["data:image/png;base64,AAAA"] })).toEqual(
      []
    )
    expect(mediaChecks("vendor3/text-to-video", "vendor3-3", { prompt: "p" })).toEqual([])
  })

  it.live(
    "vendor1-2 reference-video seconds are measured and charged as a separate entry; a refusal fails the task",
    () =>
      Effect.gen(function*() {
        const media = yield* Media.make()
        files["/clip.mp4"] = Buffer.from(yield* media.renderVideo({ width: 640, height: 360, durationSeconds: 3 }))
        const server = yield* serve
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        const input = { prompt: "p", reference_video_urls: [`${base}/clip.mp4`] }
        const paid = recordingBilling()
        yield* Effect.gen(function*() {
          const task = yield* runTask("vendor1/multimodal-video", "vendor1-2", input)
          expect(task.status).toBe("succeeded")
          // 720p video-reference tier: 3 s x 0.125 USD
          expect(paid.ledger.charges).toEqual([
            { amountMicros: 1_000_000, description: "vendor1-2 multimodal-video" },
            { amountMicros: 375_000, description: "vendor1-2 reference video seconds (3.000 s)" }
          ])
          expect(task.chargedMicros).toBe(1_375_000)
        }).pipe(Effect.provide(engine(true, paid.layer)), Effect.scoped)
        const refused = recordingBilling(375_000)
        yield* Effect.gen(function*() {
          const task = yield* runTask("vendor1/multimodal-video", "vendor1-2", input)
          expect(task).toMatchObject({
            status: "failed",
            error: { code: "SPEND_LIMIT_EXCEEDED" },
            chargedMicros: 1_000_000
          })
          expect(refused.ledger.refunds).toEqual([1_000_000])
        }).pipe(Effect.provide(engine(true, refused.layer)), Effect.scoped)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )

  it.live(
    "a good file runs; a file breaking its rule fails the task with INVALID_INPUT_MEDIA, refunded",
    () =>
      Effect.gen(function*() {
        const server = yield* serve
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        yield* Effect.gen(function*() {
          const good = yield* runTask("vendor1/image-to-video", "vendor1-1-0-pro", {
            image: `${base}/good.png`,
            duration: 5
          })
          expect(good.status).toBe("succeeded")
          const tiny = yield* runTask("vendor1/image-to-video", "vendor1-1-0-pro", {
            image: `${base}/tiny.png`,
            duration: 5
          })
          expect(tiny).toMatchObject({
            status: "failed",
            error: { code: "INVALID_INPUT_MEDIA" },
            refundedMicros: 1_000_000
          })
          expect(tiny.error!.message).toContain("input.image: ")
          expect(tiny.error!.message).toContain("at least 300 px")
          const text = yield* runTask("vendor8/video-to-video", "vendor8/2-6-video-to-video", {
            prompt: "p",
            video_urls: [`${base}/text.txt`]
          })
          expect(text).toMatchObject({ status: "failed", error: { code: "INVALID_INPUT_MEDIA" } })
          expect(text.error!.message).toContain("input.video_urls[0]: is not an MP4/MOV video")
          const missing = yield* runTask("vendor6/image-to-image", "vendor6-2", {
            prompt: "p",
            image_input: [`${base}/none.png`]
          })
          expect(missing).toMatchObject({ status: "failed", error: { code: "INVALID_INPUT_MEDIA" } })
        }).pipe(Effect.provide(engine(true)), Effect.scoped)
        // without the development switch, the same local file is refused as a private target
        yield* Effect.gen(function*() {
          const local = yield* runTask("vendor1/image-to-video", "vendor1-1-0-pro", {
            image: `${base}/good.png`,
            duration: 5
          })
          expect(local).toMatchObject({ status: "failed", error: { code: "INVALID_INPUT_MEDIA" } })
        }).pipe(Effect.provide(engine(false)), Effect.scoped)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )
})
