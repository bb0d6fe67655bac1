/**
 * The fal queue fake (`@mediagate/testing/fakes/fal`) driven by the official `@fal-ai/client` SDK: submit (with and
 * without a webhook), status through the queue's life (positions, logs, metrics), results whose files download,
 * cancel, `subscribe` by polling and by streaming, failures, refused keys, signed webhooks verified against the
 * fake's JWKS, and video outputs. The SDK reaches the fake through a `requestMiddleware` rewriting
 * `https://queue.fal.run` to the fake's URL.
 */
import { describe, expect, it } from "@effect/vitest"
import { ApiError, createFalClient, type QueueStatus, type Result } from "@fal-ai/client"
import { close, listen, readBody } from "@mediagate/testing/fakes/common"
import { type FalFake, type FalFakeOptions, startFalFake } from "@mediagate/testing/fakes/fal"
import { createHash, createPublicKey, randomUUID, verify } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"

/** The endpoint the tests submit to: app `fal-ai/fake-image`, endpoint path `dev`. */
const endpoint = "fal-ai/fake-image/dev"
const app = "fal-ai/fake-image"
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface FalFile {
  readonly url: string
  readonly content_type: string
  readonly file_name: string
  readonly file_size: number
}
interface ImageOutput {
  readonly images: ReadonlyArray<FalFile & { readonly width: number; readonly height: number }>
  readonly seed: number
  readonly has_nsfw_concepts: ReadonlyArray<boolean>
  readonly prompt: string
}
interface VideoOutput {
  readonly video: FalFile
}
interface WebhookBody {
  readonly request_id: string
  readonly gateway_request_id: string
  readonly status: "OK" | "ERROR"
  readonly payload: unknown
  readonly error?: string
}
interface Jwks {
  readonly keys: ReadonlyArray<{ readonly kty: string; readonly crv: string; readonly x: string }>
}

/** The official SDK pointed at the fake, with the fake's key, another one, or none (`null`). */
const clientOf = (fake: FalFake, key: string | null = fake.key) =>
  createFalClient({
    credentials: key ?? undefined,
    requestMiddleware: (request) =>
      Promise.resolve({ ...request, url: request.url.replace("https://queue.fal.run", fake.url) })
  })

/** Runs `body` against a fresh fake, closing it afterwards. */
const withFake = async (options: FalFakeOptions, body: (fake: FalFake) => Promise<void>) => {
  const fake = await startFalFake(options)
  try {
    await body(fake)
  } finally {
    await fake.close()
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The error `promise` rejects with (fails when it resolves). */
const failure = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected the call to fail")
}

/** Polls `find` until it answers something (or fails after `timeoutMs`). */
const eventually = async <A>(find: () => A | undefined, timeoutMs = 3_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = find()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error("timed out")
    await sleep(5)
  }
}

/** A local webhook receiver recording what it gets. */
const startReceiver = async () => {
  const received: Array<{ readonly url: string; readonly headers: IncomingHttpHeaders; readonly body: string }> = []
  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      received.push({ url: request.url ?? "/", headers: request.headers, body })
      response.writeHead(200).end()
    })
  })
  const url = await listen(server)
  return { url, received, close: () => close(server) }
}

/** Verifies a webhook the way fal documents it, with the keys of a JWKS. */
const verifyWebhook = (jwks: Jwks, headers: IncomingHttpHeaders, body: string) => {
  const header = (name: string) => {
    const value = headers[name]
    return typeof value === "string" ? value : ""
  }
  const timestamp = header("x-fal-webhook-timestamp")
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false
  const message = Buffer.from([
    header("x-fal-webhook-request-id"),
    header("x-fal-webhook-user-id"),
    timestamp,
    createHash("sha256").update(body).digest("hex")
  ].join("\n"))
  const signature = Buffer.from(header("x-fal-webhook-signature"), "hex")
  return jwks.keys.some((key) => verify(null, message, createPublicKey({ key: { ...key }, format: "jwk" }), signature))
}

describe("fal queue fake, through @fal-ai/client", () => {
  it("submit answers the queue handle and records the job", async () => {
    await withFake({}, async (fake) => {
      const fal = clientOf(fake)
      const handle = await fal.queue.submit(endpoint, { input: { prompt: "a cat", seed: 7 } })
      expect(handle.request_id).toMatch(uuid)
      expect(handle.status).toBe("IN_QUEUE")
      expect(handle.queue_position).toBe(0)
      const base = `${fake.url}/${app}/requests/${handle.request_id}`
      expect(handle).toMatchObject({ response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` })
      expect(handle).not.toHaveProperty("gateway_request_id")

      const job = fake.jobs.get(handle.request_id)
      expect(job).toMatchObject({ app, model: endpoint, input: { prompt: "a cat", seed: 7 }, cancelled: false })
      expect(job?.webhook).toBeUndefined()
      expect(fake.counts().submit).toBe(1)
      const logged = fake.requests.at(-1)
      expect(logged).toMatchObject({ method: "POST", url: `/${endpoint}` })
      expect(logged?.headers.authorization).toBe(`Key ${fake.key}`)
    })
  })

  it("submit with a webhook URL records it and answers a gateway request id", async () => {
    await withFake({}, async (fake) => {
      const webhookUrl = "http://127.0.0.1:9/hooks/fal?task=t1"
      const handle = await clientOf(fake).queue.submit(endpoint, { input: { prompt: "a dog" }, webhookUrl })
      expect(handle).toMatchObject({ request_id: expect.stringMatching(uuid), gateway_request_id: handle.request_id })
      expect(fake.jobs.get(handle.request_id)?.webhook).toBe(webhookUrl)
      expect(fake.requests.at(-1)?.url).toBe(`/${endpoint}?fal_webhook=${encodeURIComponent(webhookUrl)}`)
    })
  })

  it("status counts the queued jobs ahead; cancel takes a job out of the queue", async () => {
    await withFake({}, async (fake) => {
      const fal = clientOf(fake)
      const handles = []
      for (let i = 0; i < 3; i++) {
        handles.push(await fal.queue.submit(endpoint, { input: { prompt: `[fake:delay=20000] job ${i}` } }))
      }
      const [first, second, third] = handles.map((handle) => handle.request_id) as [string, string, string]
      expect(handles.map((handle) => handle.queue_position)).toEqual([0, 1, 2])
      const statuses = await Promise.all(
        handles.map((handle) => fal.queue.status(endpoint, { requestId: handle.request_id }))
      )
      const positions = statuses.map((status) => status.status === "IN_QUEUE" ? status.queue_position : -1)
      expect(positions).toEqual([0, 1, 2])

      await fal.queue.cancel(endpoint, { requestId: first })
      expect(fake.jobs.get(first)?.cancelled).toBe(true)
      expect(fake.jobs.get(second)?.cancelled).toBe(false)
      expect(fake.requests.at(-1)).toMatchObject({ method: "PUT", url: `/${app}/requests/${first}/cancel` })
      expect(await fal.queue.status(endpoint, { requestId: third })).toMatchObject({
        status: "IN_QUEUE",
        queue_position: 1
      })
      expect((await fal.queue.status(endpoint, { requestId: first })).status).toBe("COMPLETED")

      const again = await failure(fal.queue.cancel(endpoint, { requestId: first }))
      expect(again).toBeInstanceOf(ApiError)
      expect(again).toMatchObject({ status: 400, body: { status: "ALREADY_COMPLETED" } })
      const unknown = await failure(fal.queue.cancel(endpoint, { requestId: randomUUID() }))
      expect(unknown).toMatchObject({ status: 404, body: { status: "NOT_FOUND" } })
      const cancelled = await failure(fal.queue.result(endpoint, { requestId: first }))
      expect(cancelled).toMatchObject({ status: 499, body: { error_type: "client_cancelled" } })
      expect(fake.counts()).toMatchObject({ submit: 3, status: 5, cancel: 3, result: 1 })
    })
  })

  it("status goes IN_QUEUE → IN_PROGRESS (with logs) → COMPLETED (with metrics)", async () => {
    await withFake({}, async (fake) => {
      const fal = clientOf(fake)
      const { request_id: requestId } = await fal.queue.submit(endpoint, { input: { prompt: "[fake:delay=600]" } })
      const early = await failure(fal.queue.result(endpoint, { requestId }))
      expect(early).toMatchObject({ status: 400, body: { detail: "Request is still in progress" } })

      const seen: Array<QueueStatus> = []
      for (;;) {
        const status = await fal.queue.status(endpoint, { requestId, logs: true })
        if (seen.at(-1)?.status !== status.status) seen.push(status)
        if (status.status === "COMPLETED") break
        await sleep(10)
      }
      expect(seen.map((status) => status.status)).toEqual(["IN_QUEUE", "IN_PROGRESS", "COMPLETED"])
      const [queued, running, completed] = seen
      expect(queued).toMatchObject({ queue_position: 0, logs: [] })
      expect(running).not.toHaveProperty("queue_position")
      expect(running).toMatchObject({ logs: [{ message: `Loading ${endpoint}`, level: "INFO", source: "USER" }] })
      expect(completed).toMatchObject({ metrics: { inference_time: 0.6 }, response_url: expect.any(String) })
      const logs = completed?.status === "COMPLETED" ? completed.logs : []
      expect(logs.length).toBeGreaterThanOrEqual(3)
      expect(logs.every((line) => !Number.isNaN(Date.parse(line.timestamp)))).toBe(true)
      expect(fake.requests.some((request) => request.url === `/${app}/requests/${requestId}/status?logs=1`)).toBe(true)
    })
  })

  it("result answers images whose URLs download as PNGs", async () => {
    await withFake({}, async (fake) => {
      const fal = clientOf(fake)
      const { request_id: requestId } = await fal.queue.submit(endpoint, { input: { prompt: "a red fox" } })
      await fal.queue.subscribeToStatus(endpoint, { requestId, pollInterval: 10 })
      const result: Result<ImageOutput> = await fal.queue.result(endpoint, { requestId })
      expect(result.requestId).toBe(requestId)
      expect(result.data).toMatchObject({ seed: 42, has_nsfw_concepts: [false], prompt: "a red fox" })
      expect(result.data.images).toHaveLength(1)
      const image = result.data.images[0]
      expect(image).toMatchObject({ content_type: "image/png", width: 8, height: 8 })
      expect(image.url).toBe(`${fake.url}/fake-files/${image.file_name}`)

      const download = await fetch(image.url)
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe("image/png")
      expect(Number(download.headers.get("content-length"))).toBe(image.file_size)
      const bytes = Buffer.from(await download.arrayBuffer())
      expect(bytes.length).toBe(image.file_size)
      expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG")
      expect(fake.counts()).toMatchObject({ submit: 1, result: 1, files: 1 })
    })
  })

  it("subscribe completes a job by polling and by streaming the status", async () => {
    await withFake({}, async (fake) => {
      const fal = clientOf(fake)
      const polled: Array<string> = []
      let enqueued = ""
      const byPolling: Result<ImageOutput> = await fal.subscribe(endpoint, {
        input: { prompt: "[fake:delay=400] polled" },
        pollInterval: 10,
        logs: true,
        onEnqueue: (requestId) => {
          enqueued = requestId
        },
        onQueueUpdate: (status) => polled.push(status.status)
      })
      expect(byPolling.requestId).toBe(enqueued)
      expect(byPolling.data.prompt).toBe("[fake:delay=400] polled")
      expect(polled[0]).toBe("IN_QUEUE")
      expect(polled).toContain("IN_PROGRESS")
      expect(polled.at(-1)).toBe("COMPLETED")

      const streamed: Array<string> = []
      const byStreaming: Result<ImageOutput> = await fal.subscribe(endpoint, {
        input: { prompt: "[fake:delay=400] streamed" },
        mode: "streaming",
        logs: true,
        onQueueUpdate: (status) => streamed.push(status.status)
      })
      expect(byStreaming.data.images[0]?.content_type).toBe("image/png")
      expect(streamed).toEqual(expect.arrayContaining(["IN_QUEUE", "IN_PROGRESS", "COMPLETED"]))
      expect(streamed.at(-1)).toBe("COMPLETED")
      const streamUrl = `/${app}/requests/${byStreaming.requestId}/status/stream?logs=1`
      expect(fake.requests.some((request) => request.url === streamUrl)).toBe(true)
    })
  })

  it("a failing job surfaces as an SDK error carrying the message", async () => {
    await withFake({}, async (fake) => {
      const fal = clientOf(fake)
      let requestId = ""
      const error = await failure(fal.subscribe(endpoint, {
        input: { prompt: "[fake:fail=boom]" },
        pollInterval: 10,
        onEnqueue: (id) => {
          requestId = id
        }
      }))
      expect(error).toBeInstanceOf(ApiError)
      expect(error).toMatchObject({ status: 500, body: { detail: "boom" } })
      expect(await fal.queue.status(endpoint, { requestId, logs: true })).toMatchObject({
        status: "COMPLETED",
        logs: expect.arrayContaining([expect.objectContaining({ message: "boom", level: "ERROR" })])
      })
    })
  })

  it("a wrong or missing key is refused with 401", async () => {
    await withFake({ key: "the-right-key" }, async (fake) => {
      const wrong = await failure(clientOf(fake, "the-wrong-key").queue.submit(endpoint, { input: { prompt: "x" } }))
      expect(wrong).toBeInstanceOf(ApiError)
      expect(wrong).toMatchObject({ status: 401, body: { detail: expect.any(String) } })
      const missing = await failure(clientOf(fake, null).queue.submit(endpoint, { input: { prompt: "x" } }))
      expect(missing).toMatchObject({ status: 401 })
      expect(fake.jobs.size).toBe(0)
      expect(fake.requests.map((request) => request.headers.authorization)).toEqual(["Key the-wrong-key", undefined])

      const { request_id: requestId } = await clientOf(fake).queue.submit(endpoint, { input: { prompt: "x" } })
      const status = await failure(clientOf(fake, "the-wrong-key").queue.status(endpoint, { requestId }))
      expect(status).toMatchObject({ status: 401 })
      expect(fake.jobs.size).toBe(1)
    })
  })

  it("webhooks arrive with the documented body, signed with the key the JWKS serves", async () => {
    const receiver = await startReceiver()
    try {
      await withFake({}, async (fake) => {
        const fal = clientOf(fake)
        const jwks = await (await fetch(fake.jwksUrl)).json() as Jwks
        expect(jwks.keys).toEqual([{ kty: "OKP", crv: "Ed25519", x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) }])
        const webhookUrl = `${receiver.url}/hooks/fal?task=ok`
        const byId = (id: string) => () =>
          receiver.received.find((hook) => hook.headers["x-fal-webhook-request-id"] === id)

        const ok = await fal.queue.submit(endpoint, { input: { prompt: "a hook" }, webhookUrl })
        const okHook = await eventually(byId(ok.request_id))
        expect(okHook.url).toBe("/hooks/fal?task=ok")
        expect(okHook.headers["content-type"]).toBe("application/json")
        expect(okHook.headers["x-fal-webhook-user-id"]).toBe(fake.userId)
        expect(verifyWebhook(jwks, okHook.headers, okHook.body)).toBe(true)
        expect(verifyWebhook(jwks, okHook.headers, okHook.body.replace("a hook", "a hoax"))).toBe(false)
        const okBody = JSON.parse(okHook.body) as WebhookBody
        const { data } = await fal.queue.result(endpoint, { requestId: ok.request_id })
        expect(okBody).toEqual({
          request_id: ok.request_id,
          gateway_request_id: ok.request_id,
          status: "OK",
          payload: data
        })

        const failed = await fal.queue.submit(endpoint, { input: { prompt: "[fake:fail=boom]" }, webhookUrl })
        const failedHook = await eventually(byId(failed.request_id))
        expect(verifyWebhook(jwks, failedHook.headers, failedHook.body)).toBe(true)
        expect(JSON.parse(failedHook.body)).toMatchObject({
          request_id: failed.request_id,
          status: "ERROR",
          error: expect.any(String),
          payload: { detail: "boom" }
        })

        const cancelled = await fal.queue.submit(endpoint, { input: { prompt: "[fake:delay=100]" }, webhookUrl })
        await fal.queue.cancel(endpoint, { requestId: cancelled.request_id })
        await sleep(250)
        expect(byId(cancelled.request_id)()).toBeUndefined()
        expect(receiver.received).toHaveLength(2)
        expect(fake.counts().webhooks).toBe(2)
      })
    } finally {
      await receiver.close()
    }
  })

  it("a video plan answers video.url with content type video/mp4", async () => {
    await withFake({}, async (fake) => {
      const result: Result<VideoOutput> = await clientOf(fake).subscribe("fal-ai/fake-video", {
        input: { prompt: "a wave [fake:video]" },
        pollInterval: 10
      })
      expect(result.data).not.toHaveProperty("images")
      expect(result.data.video).toMatchObject({ content_type: "video/mp4", file_name: expect.stringMatching(/\.mp4$/) })
      const download = await fetch(result.data.video.url)
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe("video/mp4")
      const bytes = Buffer.from(await download.arrayBuffer())
      expect(bytes.length).toBe(result.data.video.file_size)
      expect(bytes.subarray(4, 8).toString("latin1")).toBe("ftyp")
    })
  })

  it("an output with its own URL is answered as is", async () => {
    await withFake({}, async (fake) => {
      const hostile = "http://169.254.169.254/latest/meta-data.png"
      const result: Result<ImageOutput> = await clientOf(fake).subscribe(endpoint, {
        input: { prompt: `[fake:output=${hostile}]` },
        pollInterval: 10
      })
      expect(result.data.images.map((image) => image.url)).toEqual([hostile])
    })
  })

  it("speaks the raw protocol: 202 while running, 200 once done, 404s, files only once done, and outages", async () => {
    await withFake({ plan: () => ({ durationMs: 500 }) }, async (fake) => {
      const auth = { authorization: `Key ${fake.key}` }
      const submitted = await fetch(`${fake.url}/${endpoint}`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "raw" })
      })
      expect(submitted.status).toBe(200)
      const handle = await submitted.json() as { request_id: string; status_url: string; response_url: string }
      expect(fake.jobs.get(handle.request_id)?.plan.durationMs).toBe(500)
      const running = await fetch(handle.status_url, { headers: auth })
      expect(running.status).toBe(202)
      expect(await running.json()).toMatchObject({ status: "IN_QUEUE", request_id: handle.request_id })
      const file = `${fake.url}/fake-files/out-${handle.request_id}-0.png`
      expect((await fetch(file)).status).toBe(404)
      expect((await fetch(`${fake.url}/${app}/requests/${randomUUID()}/status`, { headers: auth })).status).toBe(404)
      expect((await fetch(`${fake.url}/fal-ai/other/requests/${handle.request_id}`, { headers: auth })).status)
        .toBe(404)

      await sleep(550)
      const done = await fetch(handle.status_url, { headers: auth })
      expect(done.status).toBe(200)
      expect(await done.json()).toMatchObject({ status: "COMPLETED", metrics: { inference_time: 0.5 } })
      expect((await fetch(file)).status).toBe(200)

      fake.down = true
      const outage = await fetch(handle.response_url, { headers: auth })
      expect(outage.status).toBe(503)
      await outage.arrayBuffer()
      fake.down = false
      expect((await fetch(handle.response_url, { headers: auth })).status).toBe(200)
    })
  })
})
