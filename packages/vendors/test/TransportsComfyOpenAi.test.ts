/**
 * The ComfyUI and OpenAI transports against their protocol fakes, each built from a channel's context with a real
 * result copier (local store, signer): the request put into the workflow or call, the job followed to its end, the
 * result fetched or decoded into our store, failures and cancels mapped.
 */
import { describe, expect, it } from "@effect/vitest"
import { startComfyFake, textToImageWorkflow } from "@mediagate/testing/fakes/comfyui"
import { pngBytes } from "@mediagate/testing/fakes/common"
import { startOpenAiFake } from "@mediagate/testing/fakes/openai"
import * as Effect from "effect/Effect"
import * as Comfy from "../src/ComfyUpstream.js"
import * as OpenAi from "../src/OpenAiUpstream.js"
import { build, channel, copierLayer, pollToEnd, storedBytes, succeeded, task } from "./supportTransports.js"

describe("transports against their protocol fakes", () => {
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
