/**
 * Every endpoint and model runs to `succeeded` on the simulated upstream, through the engine, and its result items
 * describe the stored files exactly: format, duration, size and pixel size read back with mp4box.js and decoders.
 * Time is the `TestClock`'s, advanced in small steps while the files are really rendered and stored.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Examples, type Generation, Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Worker from "@mediagate/engine/Worker"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Estimates from "../src/Estimates.js"
import * as FileStore from "../src/FileStore.js"
import * as Media from "../src/Media.js"
import { PriceBook } from "../src/Prices.js"
import * as ResultLinks from "../src/ResultLinks.js"
import * as Simulated from "../src/Simulated.js"
import * as Upstreams from "../src/Upstreams.js"
import * as UrlSigner from "../src/UrlSigner.js"
import * as VendorPlanner from "../src/VendorPlanner.js"
import { decodeImage, probeVideoBytes } from "./probe.js"

const principal = Fixtures.principal({ accountId: "acct_sim", keyId: "key_sim" })

const setup = (
  options: {
    readonly timeout?: Duration.DurationInput
    readonly upstreamPollDelay?: boolean
    readonly progressJobs?: number
    /** The renderer instead of a real one of its own (`Media.layer`). */
    readonly media?: Layer.Layer<Media.Renderer>
  } = {}
) => {
  const directory = mkdtempSync(join(tmpdir(), "mg-sim-"))
  const files = Layer.mergeAll(
    FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer)),
    UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("test-secret") })
  )
  const layer = Worker.layer({
    concurrency: 8,
    idle: "100 millis",
    lease: "60 seconds",
    ...(options.upstreamPollDelay === true ? {} : { pollDelay: () => "25 millis" })
  })
    .pipe(
      Layer.provideMerge(TaskService.layer),
      Layer.provideMerge(ResultLinks.layer),
      Layer.provideMerge(TaskStorage.layerMemory()),
      Layer.provideMerge(Upstreams.layer()),
      Layer.provideMerge(
        Layer.scoped(
          Simulated.SimulatedUpstream,
          Simulated.make({
            videoSeconds: 0.05,
            imageSeconds: 0.05,
            ...(options.progressJobs === undefined ? {} : { progressJobs: options.progressJobs })
          })
        ).pipe(Layer.provide(options.media ?? Media.layer()))
      ),
      Layer.provideMerge(VendorPlanner.layer({ timeout: options.timeout ?? "120 seconds" })),
      Layer.provideMerge(PriceBook.layer()),
      Layer.provideMerge(Estimates.layer),
      Layer.provideMerge(files),
      Layer.provide(Billing.layerUnmetered)
    )
  return { directory, layer }
}

/**
 * Advances the test clock by 10 ms steps until the tasks are terminal, within `limit` of clock time. Rendering runs
 * alongside (real work, no clock): a video moves the clock by about one step per three frames it encodes.
 */
const awaitTerminal = (ids: ReadonlyArray<string>, limit: Duration.DurationInput = "90 seconds") =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage.TaskStorage
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(limit)
    while (true) {
      const tasks = (yield* Effect.forEach(ids, (id) => storage.getById(id))).map(Option.getOrThrow)
      if (tasks.every((t) => ["succeeded", "failed", "cancelled", "expired"].includes(t.status))) return tasks
      if ((yield* Clock.currentTimeMillis) > deadline) return yield* Effect.dieMessage("tasks did not finish in time")
      yield* TestClock.adjust("10 millis")
    }
  })

/** Creates a task of `endpoint` and `model` with a prompt (and nothing else in its input). */
const createPrompted = (endpoint: Generation.GenerationCommand["endpoint"], model: string) => (prompt: string) =>
  Effect.flatMap(Services.TaskService, (tasks) =>
    tasks.create(principal, {
      endpoint,
      request: { model, input: { prompt } },
      idempotencyKey: undefined
    }))

/** The simulated upstream and the ids of its notices (`changes`) from now on, in order. */
const recordNotices = Effect.gen(function*() {
  const simulated = yield* Simulated.SimulatedUpstream
  const noticed = yield* Ref.make<ReadonlyArray<string>>([])
  yield* Effect.forkScoped(Stream.runForEach(simulated.changes, (id) => Ref.update(noticed, (ids) => [...ids, id])))
  return { noticed, simulated }
})

describe("simulated upstream", () => {
  it.effect("every endpoint and model succeeds with result items that describe the stored files", () => {
    const { directory, layer } = setup()
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const acks = yield* Effect.forEach(
        Examples.minimalRequests,
        ({ body, endpoint }) => tasks.create(principal, { endpoint, request: body as never, idempotencyKey: undefined })
      )
      yield* awaitTerminal(acks.map((a) => a.id))
      let videosProbed = 0
      for (const [i, ack] of acks.entries()) {
        const task = yield* tasks.get(principal, ack.id)
        const label = `${Examples.minimalRequests[i]!.endpoint} ${ack.model}`
        expect(task.status, label).toBe("succeeded")
        expect(task.progress).toBe(100)
        expect(task.result!.length).toBeGreaterThan(0)
        for (const item of task.result!) {
          const url = new URL(item.url)
          expect(url.searchParams.get("signature"), label).toMatch(/^[0-9a-f]{64}$/)
          const key = decodeURIComponent(url.pathname.replace(/^\/files\//, ""))
          const bytes = readFileSync(join(directory, key))
          expect(bytes.length, label).toBe(item.size_bytes)
          if (item.format === "mp4") {
            expect(task.type).toBe("video")
            const probed = probeVideoBytes(bytes)
            expect(probed.codec, label).toBe("h264")
            expect([probed.width, probed.height], label).toEqual([item.width, item.height])
            expect(Math.abs(probed.durationSeconds - item.duration!), label).toBeLessThanOrEqual(0.15)
            // the simulated upstream renders at the default rate
            expect(probed.frames, label).toBe(Math.max(1, Math.round(item.duration! * Media.defaultFps)))
            videosProbed++
          } else {
            const format = item.format as "png" | "jpeg"
            expect(decodeImage(bytes, format), label).toEqual({ width: item.width, height: item.height })
          }
        }
      }
      // the video checks ran
      expect(videosProbed).toBeGreaterThan(0)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 180_000 })

  it.effect("renders what the request asks: sizes, durations, formats and the last frame", () => {
    const { layer } = setup()
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const cases = [
        {
          endpoint: "vendor1/text-to-video" as const,
          request: {
            model: "vendor1-1-5-pro",
            input: { prompt: "p", duration: 4, resolution: "480p", ratio: "9:16", return_last_frame: true }
          }
        },
        {
          endpoint: "vendor7/text-to-video" as const,
          request: {
            model: "vendor7-imagine/text-to-video",
            input: { prompt: "p", duration: "10", resolution: "480p", aspect_ratio: "1:1" }
          }
        },
        {
          endpoint: "vendor4/text-to-image" as const,
          request: { model: "vendor4-5-0-lite", input: { prompt: "p", size: "1280x768", output_format: "jpeg" } }
        },
        {
          endpoint: "vendor6/image-to-image" as const,
          request: {
            model: "vendor6-2",
            input: { prompt: "p", resolution: "2K", aspect_ratio: "16:9", output_format: "png" }
          }
        }
      ]
      const acks = yield* Effect.forEach(cases, (c) => tasks.create(principal, { ...c, idempotencyKey: undefined }))
      yield* awaitTerminal(acks.map((a) => a.id))
      const results = yield* Effect.forEach(acks, (a) => Effect.map(tasks.get(principal, a.id), (t) => t.result!))
      expect(results[0]!.map((r) => [r.kind, r.format, r.width, r.height, r.duration])).toEqual([
        ["output", "mp4", 480, 854, 4],
        ["last_frame", "png", 480, 854, undefined]
      ])
      expect(results[1]!.map((r) => [r.format, r.width, r.height, r.duration])).toEqual([["mp4", 480, 480, 10]])
      expect(results[2]!.map((r) => [r.format, r.width, r.height])).toEqual([["jpeg", 1280, 768]])
      expect(results[3]!.map((r) => [r.format, r.width, r.height])).toEqual([["png", 2048, 1152]])
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 120_000 })

  it.effect("one stored rendering per distinct output, named by every task's result; stored again when removed", () => {
    const { directory, layer } = setup()
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const files = yield* FileStore.FileStore
      const create = (size: string, format: string) =>
        tasks.create(principal, {
          endpoint: "vendor4/text-to-image",
          request: { model: "vendor4-5-0-lite", input: { prompt: "p", size, output_format: format } } as never,
          idempotencyKey: undefined
        })
      const keysOf = (id: string) =>
        Effect.map(
          tasks.get(principal, id),
          (task) =>
            task.result!.map((item) => ({
              key: decodeURIComponent(new URL(item.url).pathname.replace(/^\/files\//, "")),
              size: item.size_bytes
            }))
        )
      const first = yield* Effect.forEach([
        create("1280x768", "png"),
        create("1280x768", "png"),
        create("1024x1024", "jpeg")
      ], (e) => e)
      yield* awaitTerminal(first.map((a) => a.id))
      const [a, b, c] = yield* Effect.forEach(first, (ack) => Effect.map(keysOf(ack.id), (items) => items[0]!))
      const renderings = join(directory, Simulated.renderingsPrefix)
      expect(readdirSync(renderings).sort()).toEqual(["image-1024x1024.jpg", "image-1280x768.png"])
      // the tasks' results name the rendering itself, with its size; nothing else was written
      for (
        const [item, name] of [[a!, "image-1280x768.png"], [b!, "image-1280x768.png"], [
          c!,
          "image-1024x1024.jpg"
        ]] as const
      ) {
        expect(item.key).toBe(`${Simulated.renderingsPrefix}${name}`)
        expect(FileStore.isSharedKey(item.key)).toBe(true)
        expect(statSync(join(directory, item.key)).size).toBe(item.size)
      }
      expect(readdirSync(directory)).toEqual(["simulated"])
      expect(decodeImage(readFileSync(join(directory, a!.key)), "png")).toEqual({ width: 1280, height: 768 })

      // the rendering removed (an operator cleaning up): looked for again a minute after it was last, then stored
      // again, whole, under the same key
      yield* files.remove(`${Simulated.renderingsPrefix}image-1280x768.png`)
      yield* TestClock.adjust("61 seconds")
      const again = yield* create("1280x768", "png")
      yield* awaitTerminal([again.id])
      const d = (yield* keysOf(again.id))[0]!
      expect(d.key).toBe(a!.key)
      expect(decodeImage(readFileSync(join(directory, d.key)), "png")).toEqual({ width: 1280, height: 768 })
      expect(statSync(join(directory, d.key)).size).toBe(d.size)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 60_000 })

  it.effect("jobs that end together before their output is stored render it once", () => {
    let renders = 0
    // a real renderer whose images take 50 ms of the clock: every job of the burst ends within that time
    const media = Layer.effect(
      Media.Renderer,
      Effect.map(Media.Renderer, (real) => ({
        ...real,
        renderImage: (spec: Media.ImageSpec) =>
          Effect.zipRight(
            Effect.sync(() => renders++),
            Effect.zipRight(Effect.sleep("50 millis"), real.renderImage(spec))
          )
      }))
    ).pipe(Layer.provide(Media.layer()))
    const { directory, layer } = setup({ media })
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const created = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), () =>
        tasks.create(principal, {
          endpoint: "vendor4/text-to-image",
          request: {
            model: "vendor4-5-0-lite",
            input: { prompt: "p", size: "1280x768", output_format: "png" }
          } as never,
          idempotencyKey: undefined
        }))
      const ended = yield* awaitTerminal(created.map((a) => a.id))
      expect(ended.map((t) => t.status)).toEqual(created.map(() => "succeeded"))
      expect(renders).toBe(1)
      const urls = new Set(ended.map((t) => new URL(t.result![0]!.url).pathname))
      expect([...urls]).toEqual([`/files/${Simulated.renderingsPrefix}image-1280x768.png`])
      expect(readdirSync(join(directory, Simulated.renderingsPrefix))).toEqual(["image-1280x768.png"])
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 60_000 })

  it.effect("result links are signed anew on every read", () => {
    const { layer } = setup()
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const storage = yield* TaskStorage.TaskStorage
      const ack = yield* tasks.create(principal, {
        endpoint: "vendor4/text-to-image",
        request: { model: "vendor4-4-0", input: { prompt: "p", size: "1K" } },
        idempotencyKey: undefined
      })
      yield* awaitTerminal([ack.id])
      const stored = Option.getOrThrow(yield* storage.getById(ack.id)).result![0]!.url
      yield* TestClock.adjust("1100 millis")
      const read = (yield* tasks.get(principal, ack.id)).result![0]!.url
      const expires = (url: string) => Number(new URL(url).searchParams.get("expires"))
      expect(new URL(read).pathname).toBe(new URL(stored).pathname)
      expect(expires(read)).toBeGreaterThan(expires(stored))
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 30_000 })

  it.effect("directives: fail, content policy, delay and hang", () => {
    const { layer } = setup({ timeout: "1500 millis" })
    return Effect.gen(function*() {
      const create = createPrompted("vendor3/text-to-video", "vendor3-3_fast")
      const fail = yield* create("a cat [sim:fail]")
      const policy = yield* create("a cat [sim:content-policy]")
      const delayed = yield* create("a cat [sim:delay=0.5]")
      const hang = yield* create("a cat [sim:hang]")
      const started = yield* Clock.currentTimeMillis
      const [f, p, d, h] = yield* awaitTerminal([fail.id, policy.id, delayed.id, hang.id])
      expect(f).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" } })
      expect(p).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" } })
      expect(p!.error!.message).toContain("content policy")
      expect(d!.status).toBe("succeeded")
      expect(d!.completedAt! - d!.createdAt).toBeGreaterThanOrEqual(500)
      expect(h).toMatchObject({ status: "expired", error: { code: "TASK_EXPIRED" } })
      expect((yield* Clock.currentTimeMillis) - started).toBeGreaterThanOrEqual(1000)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 60_000 })

  it.effect("a job of no length ends under its submit's claim: polled at once, no notice, no second claim", () => {
    const { layer } = setup({ upstreamPollDelay: true })
    return Effect.gen(function*() {
      const { noticed, simulated } = yield* recordNotices
      const create = createPrompted("vendor4/text-to-image", "vendor4-3-0-t2i")
      const instant = yield* create("a lighthouse [sim:delay=0]")
      const timed = yield* create("a lighthouse [sim:delay=0.2]")
      const [i, t] = yield* awaitTerminal([instant.id, timed.id])
      expect(i!.status).toBe("succeeded")
      expect(t!.status).toBe("succeeded")
      // one claim (fence 1), no poll recorded apart from the submit's own
      expect(i!.fence).toBe(1)
      expect(i!.polls).toBe(0)
      // a job with a length: submitted, then claimed again when the upstream tells it ended
      expect(t!.fence).toBeGreaterThanOrEqual(2)
      expect(yield* Ref.get(noticed)).toEqual([timed.id])
      expect(simulated.pollDelay?.(0, i!)).toBe(0)
      expect(simulated.pollDelay?.(0, t!)).toBeUndefined()
      expect(simulated.pollDelay?.(1, i!)).toBeUndefined()
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 60_000 })

  it.effect(
    "a job of 2 s notifies its quarters while fewer than progressJobs others run; otherwise only its end",
    () => {
      const { layer } = setup({ upstreamPollDelay: true, progressJobs: 1 })
      return Effect.gen(function*() {
        const { noticed } = yield* recordNotices
        const create = createPrompted("vendor4/text-to-image", "vendor4-3-0-t2i")
        const ids = (yield* Effect.forEach(["a", "b", "c"], (name) => create(`a lighthouse ${name} [sim:delay=2]`)))
          .map((task) => task.id)
        const tasks = yield* awaitTerminal(ids)
        expect(tasks.map((task) => task.status)).toEqual(["succeeded", "succeeded", "succeeded"])
        const all = yield* Ref.get(noticed)
        // the first submitted ran alone: its quarters and its end; the two after it only their ends
        expect(ids.map((id) => all.filter((n) => n === id).length).sort()).toEqual([1, 1, 4])
        // the quarters were polled: the one job's progress was recorded while it ran (more polls than the others')
        expect(Math.max(...tasks.map((task) => task.polls))).toBeGreaterThan(
          Math.min(...tasks.map((task) => task.polls))
        )
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    { timeout: 60_000 }
  )

  it.effect("estimates move from the family default to the median of actual durations", () => {
    const { layer } = setup()
    return Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const request = { model: "vendor3-3_fast", input: { prompt: "p" } }
      const first = yield* tasks.create(principal, {
        endpoint: "vendor3/text-to-video",
        request,
        idempotencyKey: undefined
      })
      expect(first.estimated_seconds).toBe(45)
      const acks = yield* Effect.forEach(
        Array.from({ length: 6 }),
        () => tasks.create(principal, { endpoint: "vendor3/text-to-video", request, idempotencyKey: undefined })
      )
      const done = yield* awaitTerminal([first.id, ...acks.map((a) => a.id)])
      const later = yield* tasks.create(principal, {
        endpoint: "vendor3/text-to-video",
        request,
        idempotencyKey: undefined
      })
      // the median of what the jobs took, in whole seconds: fast jobs here, so far below the default (on a busy
      // machine a job can take a second or two of the test clock)
      const longest = Math.max(...done.map((task) => (task.completedAt! - task.startedAt!) / 1000))
      expect(later.estimated_seconds).toBeGreaterThanOrEqual(1)
      expect(later.estimated_seconds).toBeLessThanOrEqual(Math.max(1, Math.round(longest)))
      expect(longest).toBeLessThan(10)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, { timeout: 60_000 })
})
