/**
 * The OpenAI-compatible fake (`@mediagate/testing/fakes/openai`) against the protocol as clients drive it with
 * `fetch` and `FormData`: image generations (`url` and `b64_json`), validation and plan failures, video jobs
 * created from multipart and JSON bodies, their status progression, content downloads, deletion as a cancel,
 * listing, auth and outages.
 */
import { describe, expect, it } from "@effect/vitest"
import { type OpenAiFake, type OpenAiFakeOptions, startOpenAiFake } from "@mediagate/testing/fakes/openai"
import { Agent, request } from "node:http"

const pngSignature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

/** Runs `body` against a fresh fake, closed afterwards. */
const withFake = async (options: OpenAiFakeOptions, body: (fake: OpenAiFake) => Promise<void>) => {
  const fake = await startOpenAiFake(options)
  try {
    await body(fake)
  } finally {
    await fake.close()
  }
}

const auth = (fake: OpenAiFake) => ({ authorization: `Bearer ${fake.key}` })

const postJson = (fake: OpenAiFake, path: string, body: unknown, headers: Record<string, string> = auth(fake)) =>
  fetch(`${fake.url}${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const get = (fake: OpenAiFake, path: string, headers: Record<string, string> = auth(fake)) =>
  fetch(`${fake.url}${path}`, { headers })

interface VideoJson {
  readonly id: string
  readonly object: string
  readonly model: string
  readonly status: string
  readonly progress: number
  readonly created_at: number
  readonly completed_at: number | null
  readonly expires_at: number | null
  readonly seconds: string
  readonly size: string
  readonly remixed_from_video_id: string | null
  readonly error: { readonly code: string; readonly message: string } | null
}

interface ErrorJson {
  readonly error: {
    readonly message: string
    readonly type: string
    readonly param: string | null
    readonly code: string | null
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls a video until `done` holds of it (or two seconds pass). */
const pollUntil = async (fake: OpenAiFake, id: string, done: (video: VideoJson) => boolean) => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const video = (await (await get(fake, `/v1/videos/${id}`)).json()) as VideoJson
    if (done(video) || Date.now() > deadline) return video
    await sleep(5)
  }
}

const createJsonVideo = async (fake: OpenAiFake, body: Record<string, unknown>) => {
  const response = await postJson(fake, "/v1/videos", body)
  expect(response.status).toBe(200)
  return (await response.json()) as VideoJson
}

describe("OpenAI fake: images", () => {
  it("answers URLs served by the fake, n items", () =>
    withFake({}, async (fake) => {
      const started = Date.now()
      const response = await postJson(fake, "/v1/images/generations", { prompt: "a fox [fake:delay=30]", n: 2 })
      expect(response.status).toBe(200)
      expect(Date.now() - started).toBeGreaterThanOrEqual(25)
      const body = (await response.json()) as { created: number; data: ReadonlyArray<{ url: string }> }
      expect(body.created).toBeCloseTo(Date.now() / 1000, -1)
      expect(body.data).toHaveLength(2)
      expect(new Set(body.data.map((item) => item.url)).size).toBe(2)
      for (const item of body.data) {
        expect(item.url.startsWith(`${fake.url}/fake-files/`)).toBe(true)
        const file = await fetch(item.url)
        expect(file.status).toBe(200)
        expect(file.headers.get("content-type")).toBe("image/png")
        expect([...new Uint8Array(await file.arrayBuffer()).slice(0, 8)]).toEqual(pngSignature)
      }
      expect(fake.images).toHaveLength(1)
      expect(fake.images[0]!.input["n"]).toBe(2)
      expect(fake.counts().images).toBe(1)
      expect(fake.counts().files).toBe(2)
    }))

  it("answers base64 PNGs with b64_json, and usage for gpt-image models", () =>
    withFake({}, async (fake) => {
      const response = await postJson(fake, "/v1/images/generations", {
        prompt: "a fox",
        model: "gpt-image-1",
        response_format: "b64_json",
        output_format: "png"
      })
      expect(response.status).toBe(200)
      const body = (await response.json()) as {
        data: ReadonlyArray<{ b64_json: string; url?: string }>
        usage: { total_tokens: number; input_tokens: number; output_tokens: number }
      }
      expect(body.data).toHaveLength(1)
      expect(body.data[0]!.url).toBeUndefined()
      expect([...Buffer.from(body.data[0]!.b64_json, "base64").subarray(0, 8)]).toEqual(pngSignature)
      expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens)
    }))

  it("answers a plan output's own URL as is", () => {
    const hostile = { url: "http://hostile.invalid/x.png", contentType: "image/png" }
    return withFake({ plan: () => ({ durationMs: 1, outputs: [hostile] }) }, async (fake) => {
      const response = await postJson(fake, "/v1/images/generations", { prompt: "a fox" })
      const body = (await response.json()) as { data: ReadonlyArray<{ url: string }> }
      expect(body.data).toEqual([{ url: hostile.url }])
    })
  })

  it("rejects a missing prompt and a bad n with the error envelope", () =>
    withFake({}, async (fake) => {
      const noPrompt = await postJson(fake, "/v1/images/generations", { model: "dall-e-3" })
      expect(noPrompt.status).toBe(400)
      const noPromptBody = (await noPrompt.json()) as ErrorJson
      expect(noPromptBody.error.type).toBe("invalid_request_error")
      expect(noPromptBody.error.param).toBe("prompt")
      expect(typeof noPromptBody.error.message).toBe("string")
      for (const n of [0, 11, 1.5, "2"]) {
        const badN = await postJson(fake, "/v1/images/generations", { prompt: "a fox", n })
        expect(badN.status).toBe(400)
        expect(((await badN.json()) as ErrorJson).error.param).toBe("n")
      }
      const badFormat = await postJson(fake, "/v1/images/generations", { prompt: "a fox", response_format: "gif" })
      expect(((await badFormat.json()) as ErrorJson).error.param).toBe("response_format")
      const notJson = await fetch(`${fake.url}/v1/images/generations`, {
        method: "POST",
        headers: { ...auth(fake), "content-type": "application/json" },
        body: "{"
      })
      expect(notJson.status).toBe(400)
      expect(fake.images).toHaveLength(0)
    }))

  it("fails per the plan: policy messages as 400 content_policy_violation, others as 500", () =>
    withFake({}, async (fake) => {
      const policy = await postJson(fake, "/v1/images/generations", { prompt: "x [fake:fail=blocked by policy]" })
      expect(policy.status).toBe(400)
      const policyBody = (await policy.json()) as ErrorJson
      expect(policyBody.error.code).toBe("content_policy_violation")
      expect(policyBody.error.message).toBe("blocked by policy")
      const broken = await postJson(fake, "/v1/images/generations", { prompt: "x [fake:fail=gpu on fire]" })
      expect(broken.status).toBe(500)
      const brokenBody = (await broken.json()) as ErrorJson
      expect(brokenBody.error.type).toBe("server_error")
      expect(brokenBody.error.message).toBe("gpu on fire")
    }))
})

describe("OpenAI fake: videos", () => {
  it("creates from multipart form data with an input_reference file", () =>
    withFake({}, async (fake) => {
      const form = new FormData()
      form.append("prompt", "a cat on a piano")
      form.append("model", "sora-2-pro")
      form.append("seconds", "8")
      form.append("size", "1280x720")
      form.append("input_reference", new Blob([new Uint8Array(1234).fill(7)], { type: "image/png" }), "ref.png")
      const response = await fetch(`${fake.url}/v1/videos`, { method: "POST", headers: auth(fake), body: form })
      expect(response.status).toBe(200)
      expect(response.headers.get("openai-poll-after-ms")).toBe("500")
      const video = (await response.json()) as VideoJson
      expect(video).toMatchObject({
        object: "video",
        model: "sora-2-pro",
        status: "queued",
        progress: 0,
        completed_at: null,
        expires_at: null,
        seconds: "8",
        size: "1280x720",
        remixed_from_video_id: null,
        error: null
      })
      expect(video.id).toMatch(/^video_[0-9a-f]+$/)
      expect(video.created_at).toBeCloseTo(Date.now() / 1000, -1)
      const recorded = fake.videos.get(video.id)!
      expect(recorded.referenceBytes).toBe(1234)
      expect(recorded.input["prompt"]).toBe("a cat on a piano")
      expect(recorded.input["input_reference"]).toMatchObject({
        filename: "ref.png",
        contentType: "image/png",
        bytes: 1234
      })
      expect(fake.counts().videoCreate).toBe(1)
    }))

  it("creates from JSON with the defaults", () =>
    withFake({}, async (fake) => {
      const video = await createJsonVideo(fake, { prompt: "a cat" })
      expect(video).toMatchObject({ model: "sora-2", status: "queued", seconds: "4", size: "720x1280" })
      expect(fake.videos.get(video.id)!.referenceBytes).toBe(0)
      const dataUrl = `data:image/png;base64,${Buffer.alloc(300, 1).toString("base64")}`
      const withReference = await createJsonVideo(fake, { prompt: "a cat", seconds: 12, input_reference: dataUrl })
      expect(withReference.seconds).toBe("12")
      expect(fake.videos.get(withReference.id)!.referenceBytes).toBe(300)
      const missing = await postJson(fake, "/v1/videos", { model: "sora-2" })
      expect(missing.status).toBe(400)
      expect(((await missing.json()) as ErrorJson).error.param).toBe("prompt")
    }))

  it("progresses queued → in_progress → completed with the poll-after header", () =>
    withFake({ pollAfterMs: 25, plan: () => ({ durationMs: 300 }) }, async (fake) => {
      const { id } = await createJsonVideo(fake, { prompt: "a cat" })
      const first = await get(fake, `/v1/videos/${id}`)
      expect(first.headers.get("openai-poll-after-ms")).toBe("25")
      const seen: Array<string> = [((await first.json()) as VideoJson).status]
      const progress: Array<number> = []
      const done = await pollUntil(fake, id, (video) => {
        if (seen[seen.length - 1] !== video.status) seen.push(video.status)
        if (video.status === "in_progress") progress.push(video.progress)
        return video.status === "completed"
      })
      expect(seen).toEqual(["queued", "in_progress", "completed"])
      expect(progress.every((value) => value >= 1 && value <= 99)).toBe(true)
      expect([...progress].sort((a, b) => a - b)).toEqual(progress)
      expect(done.progress).toBe(100)
      expect(done.completed_at).not.toBeNull()
      expect(done.expires_at).toBe(done.completed_at! + 3600)
      expect(done.error).toBeNull()
      expect(fake.counts().videoGet).toBeGreaterThanOrEqual(3)
    }))

  it("downloads content only once completed and only with auth", () =>
    // 2 s: the early download comes before the video completes, also on a slow, busy machine
    withFake({ plan: () => ({ durationMs: 2000 }) }, async (fake) => {
      const { id } = await createJsonVideo(fake, { prompt: "a cat" })
      const early = await get(fake, `/v1/videos/${id}/content?variant=video`)
      expect([400, 404]).toContain(early.status)
      expect(((await early.json()) as ErrorJson).error.type).toBe("invalid_request_error")
      await pollUntil(fake, id, (video) => video.status === "completed")
      const anonymous = await get(fake, `/v1/videos/${id}/content`, {})
      expect(anonymous.status).toBe(401)
      await anonymous.arrayBuffer()
      const content = await get(fake, `/v1/videos/${id}/content?variant=video`)
      expect(content.status).toBe(200)
      expect(content.headers.get("content-type")).toBe("video/mp4")
      const bytes = new Uint8Array(await content.arrayBuffer())
      expect(Number(content.headers.get("content-length"))).toBe(bytes.length)
      expect(Buffer.from(bytes.subarray(4, 8)).toString("latin1")).toBe("ftyp")
      const thumbnail = await get(fake, `/v1/videos/${id}/content?variant=thumbnail`)
      expect(thumbnail.headers.get("content-type")).toBe("image/png")
      expect([...new Uint8Array(await thumbnail.arrayBuffer()).slice(0, 8)]).toEqual(pngSignature)
      expect(fake.counts().videoContent).toBe(4)
    }))

  it("fails a video per its plan, with error and no content", () =>
    withFake({}, async (fake) => {
      const { id } = await createJsonVideo(fake, { prompt: "a cat [fake:delay=20] [fake:fail=render crashed]" })
      const failed = await pollUntil(fake, id, (video) => video.status === "failed")
      expect(failed.status).toBe("failed")
      expect(failed.error?.message).toBe("render crashed")
      expect(typeof failed.error?.code).toBe("string")
      const content = await get(fake, `/v1/videos/${id}/content`)
      expect(content.status).toBeGreaterThanOrEqual(400)
      expect(((await content.json()) as ErrorJson).error.message.length).toBeGreaterThan(0)
    }))

  it("deletes a video in flight: it never completes and disappears", () =>
    // 1 s: the delete comes while the video is in flight, also on a slow, busy machine
    withFake({ plan: () => ({ durationMs: 1000 }) }, async (fake) => {
      const { id } = await createJsonVideo(fake, { prompt: "a cat" })
      const deleted = await fetch(`${fake.url}/v1/videos/${id}`, { method: "DELETE", headers: auth(fake) })
      expect(deleted.status).toBe(200)
      expect(await deleted.json()).toEqual({ id, object: "video.deleted", deleted: true })
      await sleep(1100)
      expect(fake.videos.get(id)!.deleted).toBe(true)
      const read = await get(fake, `/v1/videos/${id}`)
      expect(read.status).toBe(404)
      expect(((await read.json()) as ErrorJson).error.type).toBe("invalid_request_error")
      const content = await get(fake, `/v1/videos/${id}/content`)
      expect(content.status).toBe(404)
      await content.arrayBuffer()
      const again = await fetch(`${fake.url}/v1/videos/${id}`, { method: "DELETE", headers: auth(fake) })
      expect(again.status).toBe(404)
      await again.arrayBuffer()
      expect(fake.counts().videoDelete).toBe(2)
    }))

  it("remixes a completed video only", () =>
    // long enough that the early remix arrives before the source completes, even on a busy machine
    withFake({ plan: () => ({ durationMs: 600 }) }, async (fake) => {
      const source = await createJsonVideo(fake, { prompt: "a cat", seconds: "8", size: "1280x720" })
      const early = await postJson(fake, `/v1/videos/${source.id}/remix`, { prompt: "a dog" })
      expect(early.status).toBe(400)
      await early.arrayBuffer()
      await pollUntil(fake, source.id, (video) => video.status === "completed")
      const response = await postJson(fake, `/v1/videos/${source.id}/remix`, { prompt: "a dog" })
      expect(response.status).toBe(200)
      const remix = (await response.json()) as VideoJson
      expect(remix).toMatchObject({ status: "queued", remixed_from_video_id: source.id })
      expect(remix).toMatchObject({ seconds: "8", size: "1280x720" })
      expect(remix.id).not.toBe(source.id)
      expect(fake.counts().videoCreate).toBe(3)
    }))

  it("lists videos newest first with cursors, without deleted ones", () =>
    withFake({}, async (fake) => {
      const ids: Array<string> = []
      for (let index = 0; index < 5; index++) ids.push((await createJsonVideo(fake, { prompt: `cat ${index}` })).id)
      await fetch(`${fake.url}/v1/videos/${ids[2]}`, { method: "DELETE", headers: auth(fake) })
      const page = (await (await get(fake, "/v1/videos?limit=2")).json()) as {
        object: string
        data: ReadonlyArray<VideoJson>
        first_id: string
        last_id: string
        has_more: boolean
      }
      expect(page.object).toBe("list")
      expect(page.data.map((video) => video.id)).toEqual([ids[4], ids[3]])
      expect(page.first_id).toBe(ids[4])
      expect(page.last_id).toBe(ids[3])
      expect(page.has_more).toBe(true)
      const rest = (await (await get(fake, `/v1/videos?limit=2&after=${page.last_id}`)).json()) as typeof page
      expect(rest.data.map((video) => video.id)).toEqual([ids[1], ids[0]])
      expect(rest.has_more).toBe(false)
      const ascending = (await (await get(fake, "/v1/videos?order=asc")).json()) as typeof page
      expect(ascending.data.map((video) => video.id)).toEqual([ids[0], ids[1], ids[3], ids[4]])
    }))

  it(
    "keeps ten thousand videos in flight without timers",
    () =>
      // jobs of 10 minutes: every video is still queued when the last is created, even on a slow, busy machine
      withFake({ plan: () => ({ durationMs: 600_000 }) }, async (fake) => {
        // node:http with keep-alive: fetch's per-request overhead would dominate the test's time
        const agent = new Agent({ keepAlive: true, maxSockets: 50 })
        const create = (prompt: string) =>
          new Promise<number>((resolve, reject) => {
            const body = JSON.stringify({ prompt })
            const length = Buffer.byteLength(body)
            const headers = { ...auth(fake), "content-type": "application/json", "content-length": length }
            const sent = request(`${fake.url}/v1/videos`, { method: "POST", agent, headers }, (response) => {
              response.resume()
              response.on("end", () => resolve(response.statusCode ?? 0))
            })
            sent.on("error", reject)
            sent.end(body)
          })
        try {
          const statuses = await Promise.all(
            Array.from({ length: 50 }, async (_, batch) => {
              const answered: Array<number> = []
              for (let index = 0; index < 200; index++) answered.push(await create(`cat ${batch}-${index}`))
              return answered
            })
          )
          expect(statuses.flat().every((status) => status === 200)).toBe(true)
        } finally {
          agent.destroy()
        }
        expect(fake.videos.size).toBe(10_000)
        const list = (await (await get(fake, "/v1/videos?limit=100")).json()) as { data: ReadonlyArray<VideoJson> }
        expect(list.data).toHaveLength(100)
        expect(list.data.every((video) => video.status === "queued")).toBe(true)
        expect(fake.requests).toHaveLength(10_001)
      }),
    120_000
  )
})

describe("OpenAI fake: auth and outages", () => {
  it("answers 401 invalid_api_key for a missing or wrong key", () =>
    withFake({ key: "sk-right" }, async (fake) => {
      expect(fake.key).toBe("sk-right")
      for (const headers of [{}, { authorization: "Bearer sk-wrong" }, { authorization: "sk-right" }]) {
        const response = await postJson(fake, "/v1/images/generations", { prompt: "a fox" }, headers)
        expect(response.status).toBe(401)
        expect(await response.json()).toMatchObject({
          error: { type: "invalid_request_error", param: null, code: "invalid_api_key" }
        })
      }
      const video = await get(fake, "/v1/videos/video_123", { authorization: "Bearer sk-wrong" })
      expect(video.status).toBe(401)
      await video.arrayBuffer()
      expect(fake.images).toHaveLength(0)
      expect(fake.requests).toHaveLength(4)
      expect(fake.requests[0]).toMatchObject({ method: "POST", url: "/v1/images/generations" })
    }))

  it("answers 503 to everything while down, and unknown routes with 404", () =>
    withFake({}, async (fake) => {
      fake.down = true
      const down = await postJson(fake, "/v1/images/generations", { prompt: "a fox" })
      expect(down.status).toBe(503)
      expect(((await down.json()) as ErrorJson).error.message.length).toBeGreaterThan(0)
      fake.down = false
      const up = await postJson(fake, "/v1/images/generations", { prompt: "a fox", model: "dall-e-3" })
      expect(up.status).toBe(200)
      const body = (await up.json()) as { data: ReadonlyArray<{ url: string; revised_prompt: string }> }
      expect(body.data[0]!.revised_prompt).toBe("a fox")
      const unknown = await get(fake, "/v1/nothing")
      expect(unknown.status).toBe(404)
      expect(((await unknown.json()) as ErrorJson).error.message).toBe("Invalid URL (GET /v1/nothing)")
      expect(fake.counts().images).toBe(2)
    }))
})
