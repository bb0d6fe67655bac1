/**
 * The fal and Replicate transports against their protocol fakes, each built from a channel's context with a real
 * result copier (local store, signer): the mapping applied on the way in and out, the job followed to its end, the
 * result copied into our store, failures and cancels mapped, Replicate's callback signatures checked.
 */
import { describe, expect, it } from "@effect/vitest"
import { pngBytes } from "@mediagate/testing/fakes/common"
import { startFalFake } from "@mediagate/testing/fakes/fal"
import { startReplicateFake } from "@mediagate/testing/fakes/replicate"
import * as Effect from "effect/Effect"
import { createHmac } from "node:crypto"
import * as Fal from "../src/FalUpstream.js"
import * as Replicate from "../src/ReplicateUpstream.js"
import { build, channel, copierLayer, pollToEnd, storedBytes, succeeded, task } from "./supportTransports.js"

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
        const { seen, state, states } = yield* pollToEnd(fal, record, jobId)
        expect(seen).toContain("Queued")
        expect(seen.filter((tag) => tag === "Running").length).toBeGreaterThan(0)
        // the queue's place (fal's queue_position: the jobs ahead, none here) and the runner's log lines
        const queued = states.find((s) => s._tag === "Queued")
        expect(queued).toMatchObject({ _tag: "Queued", position: 1 })
        const running = states.filter((s) => s._tag === "Running")
        expect(running.at(-1)).toMatchObject({ logs: expect.arrayContaining(["Loading fal-ai/flux/dev"]) })
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
      // long enough to be seen running by polls 15 ms apart on a busy machine (the fake's default is 50 ms)
      const record = task({ input: { prompt: "a paper boat [fake:delay=1000]", size: "512x512" } })
      const { jobId } = yield* replicate.upstream.submit(record)
      const prediction = fake.predictions.get(jobId)!
      expect(prediction.model).toBe("black-forest-labs/flux-schnell")
      expect(prediction.input).toEqual(record.input)
      const ended = yield* pollToEnd(replicate, record, jobId)
      // the prediction's log lines while it runs (the progress bar's too)
      const running = ended.states.filter((s) => s._tag === "Running")
      expect(running.length).toBeGreaterThan(0)
      expect(running.at(-1)).toMatchObject({ logs: expect.arrayContaining(["Running black-forest-labs/flux-schnell"]) })
      const done = succeeded(ended.state)
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
})
