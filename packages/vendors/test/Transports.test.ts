/**
 * The HTTP transports (fal, replicate, comfyui, openai) against their protocol fakes, each built from a channel's
 * context with a real result copier (local store, signer): the mapping applied on the way in and out, the job
 * followed to its end, the result copied into our store (the first poll after the end waits for the copy one short
 * step; a longer copy answers `Running` and its end is reported on the copier's changes), failures and cancels mapped, Replicate's callback
 * signatures checked. Also the mapping module's checks and defaults, and the copy's address and size rules.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import type { JobState } from "@mediagate/engine/Upstream"
import { startComfyFake, textToImageWorkflow } from "@mediagate/testing/fakes/comfyui"
import { pngBytes } from "@mediagate/testing/fakes/common"
import { startFalFake } from "@mediagate/testing/fakes/fal"
import { startOpenAiFake } from "@mediagate/testing/fakes/openai"
import { startReplicateFake } from "@mediagate/testing/fakes/replicate"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createHmac } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChannelConfig } from "../src/ChannelStore.js"
import * as Comfy from "../src/ComfyUpstream.js"
import * as Fal from "../src/FalUpstream.js"
import * as FileStore from "../src/FileStore.js"
import type { Transport, TransportContext } from "../src/internal/upstreamHttp.js"
import * as Mapping from "../src/Mapping.js"
import * as OpenAi from "../src/OpenAiUpstream.js"
import * as Replicate from "../src/ReplicateUpstream.js"
import * as ResultCopy from "../src/ResultCopy.js"
import * as UrlSigner from "../src/UrlSigner.js"

const publicBase = "http://gateway.test"

/** A store on a fresh directory, a signer, and the copier over them. */
const copierLayer = (options: ResultCopy.CopierOptions = {}) => {
  const directory = mkdtempSync(join(tmpdir(), "mg-transports-"))
  return {
    directory,
    layer: ResultCopy.layer({ retryDelay: () => "20 millis", ...options }).pipe(
      Layer.provideMerge(Layer.mergeAll(
        FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer)),
        UrlSigner.layer({ publicBaseUrl: publicBase, secret: Redacted.make("transports-secret") })
      ))
    )
  }
}

/** A live image task as the worker hands it to a transport. */
const task = (overrides: Partial<TaskRecord> = {}): TaskRecord => {
  const now = Date.now()
  return Fixtures.taskRecord({
    accountId: "acct_t",
    keyId: "key_t",
    endpoint: "vendor4/text-to-image",
    provider: "vendor4",
    operation: "text-to-image",
    mediaType: "image",
    model: "vendor4-3-0-t2i",
    status: "queued",
    input: { prompt: "a lighthouse", size: "512x512" },
    metadata: { ref: "r1" },
    chargedMicros: 30_000,
    estimatedSeconds: 10,
    fence: 1,
    leaseOwner: "w",
    leaseExpiresAt: now + 30_000,
    nextRunAt: null,
    deadlineAt: now + 120_000,
    createdAt: now,
    startedAt: now,
    ...overrides
  })
}

/** A channel of a transport. */
const channel = (
  transport: ChannelConfig["transport"],
  settings: ChannelConfig["settings"],
  apiKey?: string
): ChannelConfig => ({
  id: `ch_${transport}`,
  name: transport,
  transport,
  settings,
  credentials: apiKey === undefined ? {} : { apiKey: Redacted.make(apiKey) },
  families: ["vendor4"],
  models: [],
  priority: 0,
  weight: 1,
  concurrency: 0,
  enabled: true,
  disabledReason: null,
  createdAt: 0,
  updatedAt: 0
})

/** Builds a transport on the copier in context, its callbacks going to `callback` (none when undefined). */
const build = (
  make: (context: TransportContext) => Transport,
  config: ChannelConfig,
  baseUrl: string,
  callback?: string
) =>
  Effect.map(ResultCopy.ResultCopier, (copier) =>
    make({
      channel: config,
      baseUrl,
      mapping: Mapping.compile(config.settings.mapping),
      copier,
      policy: {
        trustedHosts: ["127.0.0.1", ...(config.settings.resultHosts ?? [])],
        allowPrivate: false,
        timeoutMs: 2000,
        maxBytes: config.settings.maxResultBytes ?? 10 * 1024 * 1024
      },
      callbackUrl: () => Effect.succeed(callback)
    }))

/** Polls a job until it ends (a copy in progress answers Running); the states seen on the way. */
const pollToEnd = (transport: Transport, record: TaskRecord, jobId: string) =>
  Effect.gen(function*() {
    const seen: Array<JobState["_tag"]> = []
    for (let i = 0; i < 400; i++) {
      const state = yield* transport.upstream.poll(record, jobId)
      seen.push(state._tag)
      if (state._tag === "Succeeded" || state._tag === "Failed" || state._tag === "Lost") return { state, seen }
      yield* Effect.sleep("15 millis")
    }
    return yield* Effect.dieMessage(`job ${jobId} did not end`)
  })

/** The bytes of a result URL of ours, read from the store's directory. */
const storedBytes = (directory: string, url: string) => {
  const parsed = new URL(url)
  expect(parsed.origin).toBe(publicBase)
  expect(parsed.searchParams.get("signature")).toMatch(/^[0-9a-f]{64}$/)
  return readFileSync(join(directory, decodeURIComponent(parsed.pathname.replace(/^\/files\//, ""))))
}

const succeeded = (state: JobState) => {
  assert(state._tag === "Succeeded", `expected Succeeded, got ${JSON.stringify(state)}`)
  return state
}

/** A server on `host` answering with `handler`; its URL and hit count. */
const serve = (host: string, handler: (request: IncomingMessage, response: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ server: Server; url: string; hits: () => number }>((resume) => {
      let hits = 0
      const server = createServer((request, response) => {
        hits++
        handler(request, response)
      })
      server.listen(0, host, () =>
        resume(Effect.succeed({
          server,
          url: `http://${host}:${(server.address() as AddressInfo).port}`,
          hits: () => hits
        })))
    }),
    ({ server }) =>
      Effect.sync(() => {
        server.close()
        server.closeAllConnections()
      })
  )

describe("transports against their protocol fakes", () => {
  it.live(
    "fal: mapped input to the mapped app, queued → running → copied result with the run's seconds; failures and cancels",
    () => {
      const { directory, layer } = copierLayer()
      return Effect.gen(function*() {
        const fake = yield* Effect.acquireRelease(
          Effect.promise(() => startFalFake({ key: "fal-key" })),
          (f) => Effect.promise(f.close)
        )
        const config = channel("fal", {
          mapping: {
            "vendor4-3-0-t2i": {
              target: "fal-ai/flux/dev",
              input: `{ "prompt": input.prompt & " [fake:delay=1000]", "image_size": "square", "seed": $metadata.ref }`
            }
          }
        }, "fal-key")
        const fal = yield* build(
          Fal.make,
          config,
          fake.url,
          "http://gateway.test/callbacks/v1/ch_fal/t?expires=1&signature=s"
        )
        const record = task()
        const { jobId } = yield* fal.upstream.submit(record)
        const job = [...fake.jobs.values()][0]!
        expect(jobId).toBe(`fal-ai/flux|${job.id}`)
        expect(job.model).toBe("fal-ai/flux/dev")
        expect(job.input).toEqual({ prompt: "a lighthouse [fake:delay=1000]", image_size: "square", seed: "r1" })
        expect(job.webhook).toBe("http://gateway.test/callbacks/v1/ch_fal/t?expires=1&signature=s")
        const { seen, state } = yield* pollToEnd(fal, record, jobId)
        expect(seen).toContain("Queued")
        expect(seen.filter((tag) => tag === "Running").length).toBeGreaterThan(0)
        const done = succeeded(state)
        expect(done.seconds).toBeGreaterThan(0)
        expect(done.result).toHaveLength(1)
        expect(done.result[0]).toMatchObject({ format: "png", size_bytes: pngBytes.byteLength })
        expect(new Uint8Array(storedBytes(directory, done.result[0]!.url))).toEqual(new Uint8Array(pngBytes))

        // a model error: the task fails with fal's detail
        const failing = task({ input: { prompt: "x [fake:fail=the model exploded]" } })
        const plain = yield* build(
          Fal.make,
          channel("fal", { mapping: { "vendor4-3-0-t2i": { target: "fal-ai/flux" } } }, "fal-key"),
          fake.url
        )
        const failed = yield* pollToEnd(plain, failing, (yield* plain.upstream.submit(failing)).jobId)
        expect(failed.state).toMatchObject({ _tag: "Failed", code: "PROVIDER_ERROR" })
        expect(failed.state._tag === "Failed" && failed.state.message).toContain("the model exploded")

        // cancel reaches fal
        const slow = task({ input: { prompt: "y [fake:delay=5000]" } })
        const slowJob = (yield* plain.upstream.submit(slow)).jobId
        yield* plain.upstream.cancel(slow, slowJob)
        expect(fake.jobs.get(slowJob.split("|")[1]!)!.cancelled).toBe(true)

        // a wrong key is the channel's failure (auth), not the task's
        const wrong = yield* build(Fal.make, channel("fal", {}, "nope"), fake.url)
        const refused = yield* Effect.flip(wrong.upstream.submit(task({ model: "fal-ai/x" })))
        expect(refused).toMatchObject({ kind: "auth", retryable: false })
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    30_000
  )

  it.live("replicate: owner/name and version targets, an output mapping, and Standard Webhooks signatures", () => {
    const { directory, layer } = copierLayer()
    return Effect.gen(function*() {
      const fake = yield* Effect.acquireRelease(
        Effect.promise(() => startReplicateFake()),
        (f) => Effect.promise(f.close)
      )
      const version = "5".repeat(64)
      const config = channel("replicate", {
        mapping: {
          "vendor4-3-0-t2i": { target: "black-forest-labs/flux-schnell", output: `{ "url": $, "format": "png" }` },
          "vendor4-3-0": { target: `acme/model:${version}`, input: `{ "prompt": input.prompt, "steps": 4 }` }
        }
      }, fake.token)
      const replicate = yield* build(Replicate.make, config, fake.url)
      const record = task()
      const { jobId } = yield* replicate.upstream.submit(record)
      const prediction = fake.predictions.get(jobId)!
      expect(prediction.model).toBe("black-forest-labs/flux-schnell")
      expect(prediction.input).toEqual(record.input)
      const done = succeeded((yield* pollToEnd(replicate, record, jobId)).state)
      expect(done.result[0]).toMatchObject({ format: "png", size_bytes: pngBytes.byteLength })
      expect(new Uint8Array(storedBytes(directory, done.result[0]!.url))).toEqual(new Uint8Array(pngBytes))
      expect(done.seconds).toBeGreaterThan(0)

      const versioned = task({ model: "vendor4-3-0" })
      const second = yield* replicate.upstream.submit(versioned)
      expect(fake.predictions.get(second.jobId)!).toMatchObject({
        version,
        input: { prompt: "a lighthouse", steps: 4 }
      })

      // a failed prediction, and a cancel
      const failing = task({ input: { prompt: "[fake:fail=out of memory]" } })
      const failed = yield* pollToEnd(replicate, failing, (yield* replicate.upstream.submit(failing)).jobId)
      expect(failed.state._tag === "Failed" && failed.state.message).toBe("replicate: out of memory")
      const slow = task({ input: { prompt: "[fake:delay=5000]" } })
      const slowJob = (yield* replicate.upstream.submit(slow)).jobId
      yield* replicate.upstream.cancel(slow, slowJob)
      expect(fake.predictions.get(slowJob)!.canceledAt).toBeDefined()
      expect(yield* replicate.upstream.poll(slow, slowJob)).toMatchObject({
        _tag: "Failed",
        message: "replicate: the prediction was canceled"
      })

      // callbacks: signed with the account's secret (fetched from /v1/webhooks/default/secret), within 5 minutes
      const verify = replicate.verifyCallback!
      const body = JSON.stringify({ id: jobId, status: "succeeded" })
      const timestamp = String(Math.floor(Date.now() / 1000))
      const sign = (text: string, at = timestamp) =>
        `v1,${
          createHmac("sha256", Buffer.from(fake.webhookSecret.slice(6), "base64")).update(`msg_1.${at}.${text}`).digest(
            "base64"
          )
        }`
      const headers = (signature: string, at = timestamp) => ({
        "webhook-id": "msg_1",
        "webhook-timestamp": at,
        "webhook-signature": signature
      })
      expect(yield* verify(body, headers(`v1,bm9wZQ== ${sign(body)}`))).toBe(true)
      expect(yield* verify(`${body} `, headers(sign(body)))).toBe(false)
      const old = String(Math.floor(Date.now() / 1000) - 3600)
      expect(yield* verify(body, headers(sign(body, old), old))).toBe(false)
      expect(yield* verify(body, {})).toBe(false)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 30_000)

  it.live(
    "comfyui: the stored workflow with the request's fields in its nodes, outputs fetched from /view; failures; cancel",
    () => {
      const { directory, layer } = copierLayer()
      return Effect.gen(function*() {
        const fake = yield* Effect.acquireRelease(
          Effect.promise(() => startComfyFake({ apiKey: "proxy-key" })),
          (f) => Effect.promise(f.close)
        )
        const config = channel("comfyui", {
          workflows: { flux: { graph: textToImageWorkflow, inputs: { prompt: "6.text" } } },
          mapping: {
            "vendor4-3-0-t2i": { target: "flux", input: `{ "prompt": input.prompt & " [fake:delay=60]", "3.seed": 7 }` }
          }
        }, "proxy-key")
        expect(Comfy.workflowProblem(config.settings.workflows!["flux"]!)).toBeUndefined()
        const comfy = yield* build(Comfy.make, config, fake.url)
        const record = task()
        const { jobId } = yield* comfy.upstream.submit(record)
        const graph = fake.jobs.get(jobId)!.graph as Record<string, { inputs: Record<string, unknown> }>
        expect(graph["6"]!.inputs["text"]).toBe("a lighthouse [fake:delay=60]")
        expect(graph["3"]!.inputs["seed"]).toBe(7)
        // the stored workflow itself is not changed
        expect((textToImageWorkflow["3"] as { inputs: Record<string, unknown> }).inputs["seed"]).not.toBe(7)
        const done = succeeded((yield* pollToEnd(comfy, record, jobId)).state)
        expect(done.result[0]).toMatchObject({ format: "png" })
        expect(new Uint8Array(storedBytes(directory, done.result[0]!.url))).toEqual(new Uint8Array(pngBytes))

        // a running prompt's progress comes from ComfyUI's /ws (the sampler's steps), beyond what its run time says
        const stepped = task({ input: { prompt: "steps [fake:delay=3000]" }, estimatedSeconds: 60 })
        const progress: Array<number> = []
        const steppedJob = (yield* comfy.upstream.submit(stepped)).jobId
        for (let i = 0; i < 300; i++) {
          const state = yield* comfy.upstream.poll(stepped, steppedJob)
          // while ComfyUI still runs it (not while its files are copied, which answers 99)
          if (state._tag === "Running" && fake.jobs.get(steppedJob)!.state === "running") progress.push(state.progress)
          if (state._tag === "Succeeded" || state._tag === "Failed") break
          yield* Effect.sleep("20 millis")
        }
        // 3 s into a 60 s estimate the run time alone says at most 5%; the sampler's steps say 25% and more
        expect(Math.max(...progress)).toBeGreaterThanOrEqual(25)

        const failing = task({ input: { prompt: "[fake:fail=CUDA out of memory]" } })
        const failed = yield* pollToEnd(comfy, failing, (yield* comfy.upstream.submit(failing)).jobId)
        expect(failed.state._tag === "Failed" && failed.state.message).toContain("CUDA out of memory")

        // a model with no workflow is refused; a cancel interrupts the running prompt
        const unknown = yield* Effect.flip(comfy.upstream.submit(task({ model: "vendor4-3-0" })))
        expect(unknown.message).toContain("no workflow named vendor4-3-0")
        const slow = task({ input: { prompt: "[fake:delay=5000]" } })
        const slowJob = (yield* comfy.upstream.submit(slow)).jobId
        yield* Effect.sleep("100 millis")
        yield* comfy.upstream.cancel(slow, slowJob)
        expect(["interrupted", "deleted"]).toContain(fake.jobs.get(slowJob)!.state)
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    30_000
  )

  it.live(
    "openai: images as URLs or base64 stored directly, videos followed and downloaded with the key; delete cancels",
    () => {
      const { directory, layer } = copierLayer()
      return Effect.gen(function*() {
        const fake = yield* Effect.acquireRelease(
          Effect.promise(() => startOpenAiFake()),
          (f) => Effect.promise(f.close)
        )
        const config = channel("openai", {
          mapping: {
            "vendor4-3-0-t2i": {
              target: "gpt-image-1",
              input: `{ "prompt": input.prompt, "response_format": "b64_json" }`
            },
            "vendor4-3-0": { target: "dall-e-2", input: `{ "prompt": input.prompt, "n": 2 }` },
            "vendor3-3": {
              target: "sora-2",
              input: `{ "prompt": input.prompt & " [fake:delay=1000]", "seconds": "4" }`
            }
          }
        }, fake.key)
        const openai = yield* build(OpenAi.make, config, fake.url)
        const b64 = task()
        const first = yield* openai.upstream.submit(b64)
        expect(fake.images.at(-1)!.input).toMatchObject({ model: "gpt-image-1", response_format: "b64_json" })
        const stored = succeeded((yield* pollToEnd(openai, b64, first.jobId)).state)
        expect(new Uint8Array(storedBytes(directory, stored.result[0]!.url))).toEqual(new Uint8Array(pngBytes))

        const two = task({ model: "vendor4-3-0" })
        const urls = succeeded((yield* pollToEnd(openai, two, (yield* openai.upstream.submit(two)).jobId)).state)
        expect(urls.result.map((item) => item.format)).toEqual(["png", "png"])

        const video = task({
          model: "vendor3-3",
          mediaType: "video",
          endpoint: "vendor3/text-to-video",
          provider: "vendor3"
        })
        const { jobId } = yield* openai.upstream.submit(video)
        expect(jobId).toMatch(/^video_/)
        const { seen, state } = yield* pollToEnd(openai, video, jobId)
        expect(seen).toContain("Queued")
        const clip = succeeded(state)
        expect(clip.result[0]).toMatchObject({ format: "mp4", duration: 4 })
        expect(fake.counts().videoContent).toBeGreaterThan(0)

        const slow = task({ model: "vendor3-3", mediaType: "video", input: { prompt: "long" } })
        const slowJob = (yield* openai.upstream.submit(slow)).jobId
        yield* openai.upstream.cancel(slow, slowJob)
        expect(fake.videos.get(slowJob)!.deleted).toBe(true)
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    30_000
  )
})

describe("the result copy", () => {
  const policy: ResultCopy.CopyPolicy = {
    trustedHosts: ["127.0.0.1"],
    allowPrivate: false,
    timeoutMs: 1000,
    maxBytes: 1024
  }

  const collectToEnd = (record: TaskRecord, sources: ReadonlyArray<Mapping.ResultSource>, rules = policy) =>
    Effect.gen(function*() {
      const copier = yield* ResultCopy.ResultCopier
      for (let i = 0; i < 300; i++) {
        const state = yield* copier.collect(record, "job-1", sources, rules)
        if (state._tag !== "Copying") return state
        yield* Effect.sleep("10 millis")
      }
      return yield* Effect.dieMessage("the copy did not end")
    })

  it.live("a copy done within the inline wait answers the poll that started it; a longer one goes on alone", () => {
    const { layer } = copierLayer({ inlineWait: "300 millis" })
    return Effect.gen(function*() {
      const copier = yield* ResultCopy.ResultCopier
      const files = yield* serve("127.0.0.1", (request, response) => {
        const send = () => {
          response.writeHead(200, { "content-type": "image/png" })
          response.end(pngBytes)
        }
        if (request.url === "/slow.png") setTimeout(send, 900)
        else send()
      })
      const reported: Array<string> = []
      yield* Effect.forkScoped(Stream.runForEach(copier.changes, (id) => Effect.sync(() => reported.push(id))))
      yield* Effect.sleep("20 millis")
      // quick: the poll that starts the copy answers its end, and nothing is reported (no second poll needed)
      const quick = task()
      const answered = yield* copier.collect(quick, "job-1", [{ url: `${files.url}/quick.png` }], policy)
      expect(answered).toMatchObject({ _tag: "Copied", items: [{ format: "png", size_bytes: pngBytes.byteLength }] })
      // slow: answered as copying after the inline wait; its end is reported and kept for the poll that follows
      const slow = task()
      const started = Date.now()
      const first = yield* copier.collect(slow, "job-1", [{ url: `${files.url}/slow.png` }], policy)
      expect(first).toEqual({ _tag: "Copying" })
      expect(Date.now() - started).toBeGreaterThanOrEqual(250)
      expect(Date.now() - started).toBeLessThan(900)
      while (!reported.includes(slow.id)) yield* Effect.sleep("20 millis")
      expect(copier.ended(slow, "job-1")).toMatchObject({ _tag: "Copied" })
      expect(reported).toEqual([slow.id])
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 20_000)

  it.live("refuses private addresses off the trusted hosts, directly or by a redirect, without connecting", () => {
    const { layer } = copierLayer()
    return Effect.gen(function*() {
      const secret = yield* serve("127.0.0.2", (_request, response) => response.end("internal"))
      const redirector = yield* serve("127.0.0.1", (_request, response) => {
        response.writeHead(302, { location: `${secret.url}/secret` })
        response.end()
      })
      for (const url of [`${secret.url}/secret`, "http://169.254.169.254/latest/meta-data", `${redirector.url}/go`]) {
        const state = yield* collectToEnd(task(), [{ url }])
        expect(state._tag, url).toBe("Failed")
      }
      expect(secret.hits()).toBe(0)
      expect(redirector.hits()).toBe(1)
      // the operator's own storage host is allowed
      const allowed = yield* collectToEnd(task(), [{ url: `${secret.url}/ok.txt`, format: "png" }], {
        ...policy,
        trustedHosts: ["127.0.0.1", "127.0.0.2"]
      })
      expect(allowed._tag).toBe("Copied")
      expect(secret.hits()).toBe(1)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 20_000)

  it.live("a trickle gives its download slot up and is tried again; no copy outlives its task's deadline", () => {
    const { layer } = copierLayer()
    return Effect.gen(function*() {
      let connections = 0
      let open = 0
      const trickle = yield* serve("127.0.0.1", (_request, response) => {
        connections++
        open++
        response.on("close", () => open--)
        response.writeHead(200, { "content-type": "image/png" })
        // a byte every 50 ms, never ending
        const timer = setInterval(() => response.write(Buffer.from([1])), 50)
        response.on("close", () => clearInterval(timer))
      })
      const started = Date.now()
      const slow = yield* collectToEnd(task({ deadlineAt: started + 2500 }), [{ url: `${trickle.url}/slow.png` }], {
        ...policy,
        timeoutMs: 300,
        minBytesPerSecond: 1024
      })
      expect(slow._tag).toBe("Failed")
      expect(Date.now() - started).toBeLessThan(2500)
      // dropped for its rate after 300 ms, tried again while the deadline allowed
      expect(connections).toBeGreaterThanOrEqual(2)
      // without a minimum rate, the attempt is cut at the task's deadline
      const before = connections
      const cut = yield* collectToEnd(task({ deadlineAt: Date.now() + 700 }), [{ url: `${trickle.url}/slow.png` }], {
        ...policy,
        timeoutMs: 300,
        minBytesPerSecond: 0
      })
      expect(cut).toMatchObject({ _tag: "Failed", message: expect.stringContaining("deadline") })
      expect(connections).toBe(before + 1)
      yield* Effect.sleep("100 millis")
      expect(open).toBe(0)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 20_000)

  it.live(
    "caps a file without Content-Length, retries a failing download, and finds a finished copy by its manifest",
    () => {
      // answered at once: every copy outlives the poll that started it, and stores its manifest
      const { layer } = copierLayer({ inlineWait: 0 })
      return Effect.gen(function*() {
        let calls = 0
        const files = yield* serve("127.0.0.1", (request, response) => {
          if (request.url === "/big") {
            // chunked, no length: 4 KiB against a 1 KiB cap
            for (let i = 0; i < 4; i++) response.write(Buffer.alloc(1024, 1))
            return response.end()
          }
          calls++
          if (calls < 3) {
            response.writeHead(503)
            return response.end()
          }
          response.writeHead(200, { "content-type": "image/png" })
          response.end(pngBytes)
        })
        const big = yield* collectToEnd(task(), [{ url: `${files.url}/big` }])
        expect(big).toMatchObject({ _tag: "Failed" })
        expect(big._tag === "Failed" && big.message).toContain("larger than 1024 bytes")
        const record = task()
        const flaky = yield* collectToEnd(record, [{ url: `${files.url}/flaky` }])
        expect(flaky._tag).toBe("Copied")
        expect(calls).toBe(3)
        // another copier (another node) polling the task at 99% finds the manifest and copies nothing
        const again = yield* ResultCopy.make().pipe(
          Effect.flatMap((other) =>
            other.collect({ ...record, progress: 99 }, "job-1", [{ url: `${files.url}/flaky` }], policy)
          )
        )
        expect(again._tag).toBe("Copied")
        expect(calls).toBe(3)
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    20_000
  )
})

describe("model mapping", () => {
  it("names the model and the expression that does not compile, and models the channel does not serve", () => {
    expect(Mapping.problem({ "m-1": { target: "x", input: "{ \"a\": " } }, () => true)).toMatch(
      /^settings\.mapping\.m-1\.input: the input mapping of model m-1 does not compile: /
    )
    expect(Mapping.problem({ "m-1": { target: "x", output: "images[0].url" } }, () => true)).toBeUndefined()
    expect(Mapping.problem({ "m-2": { target: "x" } }, (model) => model === "m-1")).toBe(
      "settings.mapping.m-2: the channel does not serve model m-2"
    )
  })

  it("finds every file URL of an output by default, with what it says of the files", () => {
    expect(Mapping.findFiles({
      images: [{ url: "https://cdn.fal.media/a.png", content_type: "image/png", width: 8, height: 8, file_size: 99 }],
      video: { url: "https://cdn.fal.media/b.mp4" },
      prompt: "https://not-an-output.example/x.png",
      output: ["https://replicate.delivery/c.webp", "data:image/png;base64,AAAA", "plain text"]
    })).toEqual([
      { url: "https://cdn.fal.media/a.png", contentType: "image/png", sizeBytes: 99, width: 8, height: 8 },
      { url: "https://cdn.fal.media/b.mp4" },
      { url: "https://replicate.delivery/c.webp" },
      { url: "data:image/png;base64,AAAA" }
    ])
  })

  it.effect("applies input and output expressions, and refuses an output that names no file", () =>
    Effect.gen(function*() {
      const compiled = Mapping.compile({
        m: { target: "t", input: `{ "text": input.prompt, "model": $target, "id": $task_id }`, output: "data.url" },
        bad: { target: "t", output: `"not a url"` }
      })
      expect(
        yield* Mapping.mapInput(compiled("m"), { model: "m", input: { prompt: "p" }, taskId: "task_1", metadata: {} })
      )
        .toEqual({ text: "p", model: "t", id: "task_1" })
      expect(
        yield* Mapping.mapOutput(compiled("m"), "m", {
          data: [{ url: "https://x.example/1.png" }, { url: "https://x.example/2.png" }]
        })
      )
        .toEqual([{ url: "https://x.example/1.png" }, { url: "https://x.example/2.png" }])
      const refused = yield* Effect.flip(Mapping.mapOutput(compiled("bad"), "bad", {}))
      expect(refused).toMatchObject({ retryable: false, kind: "refused" })
      // without an entry: our model id is the target, the input goes unchanged
      expect(compiled("other").target).toBe("other")
      expect(yield* Mapping.mapInput(compiled("other"), { model: "other", input: { a: 1 }, taskId: "t", metadata: {} }))
        .toEqual({ a: 1 })
      expect(Option.isNone(Option.fromNullable(compiled("other").input))).toBe(true)
    }))
})
