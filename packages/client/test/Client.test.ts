/**
 * The Promise client against a scripted `fetch`: envelopes to data and errors, retries on 429/503 honouring
 * `Retry-After` (idempotent calls only), timeouts and aborts, pages, `run`/`waitFor` polling, downloads, and a method
 * for every operation of the contract. The client against a real server: test/client-sdk.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { methodOf } from "../src/Client.js"
import { generationEndpoints, operationTable } from "../src/generated/api.js"
import { Mediagate, MediagateError, type Task } from "../src/index.js"
import { newIdempotencyKey } from "../src/internal/http.js"
import { nextDelay } from "../src/internal/poll.js"

interface Seen {
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
  readonly at: number
}

/** A `fetch` that answers from a script (one answer per call, the last one repeated) and records each request. */
const scripted = (...answers: Array<(seen: Seen) => Response | Promise<Response>>) => {
  const seen: Array<Seen> = []
  const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request: Seen = {
      url: String(input),
      method: init?.method ?? "GET",
      headers: Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>)),
      body: typeof init?.body === "string" ? init.body : undefined,
      at: Date.now()
    }
    seen.push(request)
    const answer = answers[Math.min(seen.length - 1, answers.length - 1)]!
    return new Promise<Response>((resolve, reject) => {
      init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))
      Promise.resolve(answer(request)).then(resolve, reject)
    })
  }
  return { fetch, seen }
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })

const ok = (data: unknown, status = 200) => json(status, { success: true, data })

/** An event stream answer whose body arrives in the given chunks, then ends. */
const events = (...chunks: Array<string>) => () =>
  new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
        controller.close()
      }
    }),
    { status: 200, headers: { "content-type": "text/event-stream" } }
  )

/** The first item of an async iterable (rejects as its iteration does). */
const first = async <A>(items: AsyncIterable<A>): Promise<A | undefined> => {
  for await (const item of items) return item
  return undefined
}

const task = (status: string, progress = 0, extra: object = {}): Task => ({
  id: "task_1",
  type: "video",
  operation: "text-to-video",
  status,
  provider: "vendor3",
  model: "vendor3-3_fast",
  input: {},
  progress,
  cost: 0,
  estimated_seconds: 0.5,
  created_at: "2026-11-24T00:00:00.000Z",
  started_at: null,
  completed_at: null,
  ...extra
} as unknown as Task)

describe("Mediagate (client)", () => {
  it("declares a client method for every operation of the contract", () => {
    const client = new Mediagate({ apiKey: "k" })
    const ids = Object.keys(operationTable)
    expect(ids).toContain("tasks.list")
    expect(Object.keys(methodOf).sort()).toEqual([...ids].sort())
    for (const id of ids) expect(typeof methodOf[id as keyof typeof methodOf](client), id).toBe("function")
    expect(Object.values(generationEndpoints).every((id) => id in operationTable)).toBe(true)
  })

  it("sends the key, the body and the idempotency key; answers the envelope's data", async () => {
    const { fetch, seen } = scripted(ok({ id: "task_1", status: "pending", estimated_seconds: 3 }, 201))
    const client = new Mediagate({ apiKey: "mg_test_x", baseUrl: "http://api.test/mg/", fetch })
    const ack = await client.create("vendor3/text-to-video", { model: "vendor3-3_fast", input: { prompt: "p" } }, {
      idempotencyKey: "idem-1"
    })
    expect(ack).toEqual({ id: "task_1", status: "pending", estimated_seconds: 3 })
    expect(seen[0]).toMatchObject({
      url: "http://api.test/mg/api/v1/vendor3/text-to-video",
      method: "POST",
      headers: { authorization: "Bearer mg_test_x", "content-type": "application/json", "idempotency-key": "idem-1" },
      body: JSON.stringify({ model: "vendor3-3_fast", input: { prompt: "p" } })
    })
  })

  it("estimate: the endpoint's estimate path, the body, no idempotency key; answers the estimate", async () => {
    const estimate = { model: "vendor3-3", price: 0, live_price: 0.4, estimated_seconds: 60, input: { prompt: "p" } }
    const { fetch, seen } = scripted(ok(estimate))
    const client = new Mediagate({ apiKey: "mg_test_x", baseUrl: "http://api.test", fetch })
    expect(await client.estimate("vendor3/text-to-video", { model: "vendor3-3", input: { prompt: "p" } })).toEqual(
      estimate
    )
    expect(seen[0]).toMatchObject({ url: "http://api.test/api/v1/vendor3/text-to-video/estimate", method: "POST" })
    expect(seen[0]!.headers["idempotency-key"]).toBeUndefined()
    await expect(client.estimate("vendor0/nothing" as never, {} as never)).rejects.toThrow("unknown endpoint")
  })

  it("puts path parameters (escaped) and the query (undefined left out) into the URL", async () => {
    const { fetch, seen } = scripted(
      ok([]),
      json(200, { success: true, data: [], pagination: { cursor: null, hasMore: false, total: 0 } })
    )
    const client = new Mediagate({ baseUrl: "http://api.test", fetch })
    await client.tasks.get("a/b c")
    await client.tasks.list({ status: "failed", limit: 5, search: undefined as unknown as string })
    expect(seen[0]!.url).toBe("http://api.test/api/v1/tasks/a%2Fb%20c")
    expect(seen[1]!.url).toBe("http://api.test/api/v1/tasks?status=failed&limit=5")
  })

  it("fails with one error class carrying code, message, status and request id", async () => {
    const { fetch } = scripted(
      json(404, { success: false, error: { code: "TASK_NOT_FOUND", message: "no such task", request_id: "req_1" } })
    )
    const client = new Mediagate({ fetch })
    const error = await client.tasks.get("x").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MediagateError)
    expect(error).toMatchObject({ code: "TASK_NOT_FOUND", message: "no such task", status: 404, requestId: "req_1" })
    expect(MediagateError.is(error)).toBe(true)
  })

  it("takes the request id from X-Request-Id when the envelope has none; a non-envelope is INVALID_RESPONSE", async () => {
    const { fetch } = scripted(
      json(409, { success: false, error: { code: "IDEMPOTENCY_KEY_REUSED", message: "m" } }, {
        "x-request-id": "req_h"
      }),
      () => new Response("<html>bad gateway</html>", { status: 502, headers: { "x-request-id": "req_p" } })
    )
    const client = new Mediagate({ fetch })
    await expect(client.apiKeys.create({ name: "k" } as never)).rejects.toMatchObject({
      code: "IDEMPOTENCY_KEY_REUSED",
      requestId: "req_h",
      status: 409
    })
    await expect(client.apiKeys.list()).rejects.toMatchObject({
      code: "INVALID_RESPONSE",
      status: 502,
      requestId: "req_p"
    })
  })

  it("retries an idempotent call on 429 and 503, waiting Retry-After", async () => {
    const { fetch, seen } = scripted(
      json(429, { success: false, error: { code: "RATE_LIMITED", message: "slow down" } }, { "retry-after": "1" }),
      json(503, { success: false, error: { code: "SERVICE_UNAVAILABLE", message: "later" } }, { "retry-after": "0" }),
      ok({ balance: 1 })
    )
    const client = new Mediagate({ fetch })
    expect(await client.balance.get()).toEqual({ balance: 1 })
    expect(seen).toHaveLength(3)
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(950)
  })

  it("sends a new Idempotency-Key per creating call, the same on its retries, or the caller's", async () => {
    const limited = json(429, { success: false, error: { code: "RATE_LIMITED", message: "slow down" } }, {
      "retry-after": "0"
    })
    const dropped = () => Promise.reject(new TypeError("fetch failed"))
    const body = { model: "vendor3-3_fast", input: { prompt: "p" } } as const
    const first = scripted(limited, dropped, ok({ id: "t" }, 201))
    const client = new Mediagate({ fetch: first.fetch })
    expect(await client.create("vendor3/text-to-video", body)).toEqual({ id: "t" })
    expect(first.seen).toHaveLength(3)
    const key = first.seen[0]!.headers["idempotency-key"]
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(first.seen.map((seen) => seen.headers["idempotency-key"])).toEqual([key, key, key])
    // every other creating call: a key of its own
    await client.tasks.retry("task_1")
    await client.apiKeys.create({ name: "k" } as never)
    await client.webhooks.create({ url: "https://hooks.example.com/h" } as never)
    const keys = first.seen.slice(3).map((seen) => seen.headers["idempotency-key"])
    expect(keys.every((each) => each !== undefined && each !== key)).toBe(true)
    expect(new Set(keys).size).toBe(3)
    // reads send none
    await client.tasks.get("task_1")
    expect(first.seen.at(-1)!.headers["idempotency-key"]).toBeUndefined()
    const second = scripted(limited, ok({ id: "t" }, 201))
    const keyed = new Mediagate({ fetch: second.fetch })
    expect(await keyed.tasks.retry("task_1", { idempotencyKey: "k" })).toEqual({ id: "t" })
    expect(second.seen.map((seen) => seen.headers["idempotency-key"])).toEqual(["k", "k"])
  })

  it("makes version-4 UUID keys without crypto.randomUUID (plain-HTTP pages) and without Web Crypto", () => {
    const crypto = Object.getOwnPropertyDescriptor(globalThis, "crypto")!
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    try {
      Object.defineProperty(globalThis, "crypto", {
        configurable: true,
        value: { getRandomValues: (bytes: Uint8Array) => bytes.fill(0xff) }
      })
      expect(newIdempotencyKey()).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff")
      Object.defineProperty(globalThis, "crypto", { configurable: true, value: undefined })
      const made = Array.from({ length: 20 }, () => newIdempotencyKey())
      expect(made.every((key) => uuid.test(key))).toBe(true)
      expect(new Set(made).size).toBe(20)
    } finally {
      Object.defineProperty(globalThis, "crypto", crypto)
    }
    expect(newIdempotencyKey()).toMatch(uuid)
  })

  it("gives up after maxRetries, and at once when Retry-After is past the call's timeout", async () => {
    const limited = json(503, { success: false, error: { code: "SERVICE_UNAVAILABLE", message: "later" } }, {
      "retry-after": "0"
    })
    const a = scripted(limited)
    await expect(new Mediagate({ fetch: a.fetch, maxRetries: 2 }).tasks.get("t")).rejects.toMatchObject({
      code: "SERVICE_UNAVAILABLE"
    })
    expect(a.seen).toHaveLength(3)
    const b = scripted(
      json(429, { success: false, error: { code: "RATE_LIMITED", message: "m" } }, { "retry-after": "60" })
    )
    const started = Date.now()
    await expect(new Mediagate({ fetch: b.fetch, timeout: 2_000 }).tasks.get("t")).rejects.toMatchObject({
      code: "RATE_LIMITED",
      retryAfter: 60
    })
    expect(Date.now() - started).toBeLessThan(1_000)
    expect(b.seen).toHaveLength(1)
  })

  it("answers TIMEOUT after `timeout` and ABORTED on the caller's signal; NETWORK_ERROR when fetch throws", async () => {
    const never = scripted(() => new Promise<Response>(() => {}))
    await expect(new Mediagate({ fetch: never.fetch }).tasks.get("t", { timeout: 50 })).rejects.toMatchObject({
      code: "TIMEOUT",
      status: 0
    })
    const controller = new AbortController()
    const pending = new Mediagate({ fetch: never.fetch }).tasks.get("t", { signal: controller.signal })
    controller.abort()
    await expect(pending).rejects.toMatchObject({ code: "ABORTED" })
    const broken = scripted(() => Promise.reject(new TypeError("fetch failed")))
    await expect(new Mediagate({ fetch: broken.fetch, maxRetries: 0 }).tasks.get("t")).rejects.toMatchObject({
      code: "NETWORK_ERROR"
    })
  })

  it("iterates over every page with the cursor", async () => {
    const page = (ids: Array<string>, cursor: string | null) =>
      json(200, {
        success: true,
        data: ids.map((id) => ({ id })),
        pagination: { cursor, hasMore: cursor !== null, total: 3 }
      })
    const { fetch, seen } = scripted(page(["a", "b"], "c1"), page(["c"], null))
    const client = new Mediagate({ fetch })
    const ids: Array<string> = []
    for await (const p of client.tasks.pages({ status: "succeeded", limit: 2 })) for (const t of p.data) ids.push(t.id)
    expect(ids).toEqual(["a", "b", "c"])
    expect(seen.map((s) => new URL(s.url).search)).toEqual([
      "?status=succeeded&limit=2",
      "?status=succeeded&limit=2&cursor=c1"
    ])
  })

  it("run: creates, polls until a terminal state, reports progress", async () => {
    const { fetch, seen } = scripted(
      ok({ id: "task_1", status: "pending", estimated_seconds: 0.5 }, 201),
      ok(task("running", 0.2)),
      ok(task("running", 0.2)),
      ok(task("running", 0.7)),
      ok(task("succeeded", 1, { result: [{ url: "http://files.test/f.png", format: "png", size_bytes: 3 }] }))
    )
    const client = new Mediagate({ fetch })
    const progress: Array<string> = []
    const done = await client.run("vendor3/text-to-video", { model: "vendor3-3_fast", input: { prompt: "p" } }, {
      onProgress: (t) => progress.push(`${t.status}:${t.progress}`),
      pollInterval: { min: 10, max: 50 },
      stream: false
    })
    expect(done.status).toBe("succeeded")
    expect(progress).toEqual(["running:0.2", "running:0.7", "succeeded:1"])
    expect(seen.slice(1).every((s) => s.url.endsWith("/api/v1/tasks/task_1"))).toBe(true)
  })

  it("run: a timeout rejects with TIMEOUT; a failed task resolves with its error", async () => {
    const slow = scripted(ok({ id: "task_1", status: "pending", estimated_seconds: 5 }, 201), ok(task("running")))
    await expect(
      new Mediagate({ fetch: slow.fetch }).run("vendor3/text-to-video", {
        model: "vendor3-3_fast",
        input: { prompt: "p" }
      }, {
        timeout: 300,
        pollInterval: { min: 20, max: 50 },
        stream: false
      })
    ).rejects.toMatchObject({ code: "TIMEOUT" })
    const failed = scripted(ok(task("failed", 0, { error: { code: "GENERATION_FAILED", message: "upstream" } })))
    const result = await new Mediagate({ fetch: failed.fetch }).waitFor("task_1", { stream: false })
    expect(result).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } })
  })

  it("stream: the states of the event stream; resumes with Last-Event-ID after a drop; ends at end or 204", async () => {
    const { fetch, seen } = scripted(
      // split mid-event, CRLF lines, a comment, a multi-line data field
      events("retry: 5\r\n\r\n: keep-alive\n\nid: v1\nevent: task\ndata: ", `${JSON.stringify(task("queued"))}\n\n`),
      // dropped before the end: the next connection resumes after v2
      events(`id: v2\nevent: task\ndata: ${JSON.stringify(task("running", 40))}\n\n`),
      events(
        `id: v3\nevent: task\ndata: ${JSON.stringify(task("succeeded", 100)).replace("{", "{\ndata: ")}\n\n`,
        "event: end\ndata: {}\n\n"
      )
    )
    const client = new Mediagate({ fetch, apiKey: "mg_test_k" })
    const states: Array<string> = []
    for await (const state of client.tasks.stream("task_1")) states.push(`${state.status}:${state.progress}`)
    expect(states).toEqual(["queued:0", "running:40", "succeeded:100"])
    expect(seen.map((s) => s.url)).toEqual(Array(3).fill("http://localhost:3000/api/v1/tasks/task_1/events"))
    expect(seen.map((s) => s.headers["last-event-id"])).toEqual([undefined, "v1", "v2"])
    expect(seen[0]!.headers).toMatchObject({ accept: "text/event-stream", authorization: "Bearer mg_test_k" })

    // the final state known already: 204 ends the stream without a state
    const done = scripted(() => new Response(null, { status: 204 }))
    const none: Array<Task> = []
    for await (const state of new Mediagate({ fetch: done.fetch }).tasks.stream("task_1", { lastEventId: "v3" })) {
      none.push(state)
    }
    expect(none).toEqual([])
    expect(done.seen[0]!.headers["last-event-id"]).toBe("v3")
    // an error answer is the API's error; an answer that is no event stream is STREAM_UNSUPPORTED
    const missing = scripted(json(404, { success: false, error: { code: "TASK_NOT_FOUND", message: "task gone" } }))
    await expect(first(new Mediagate({ fetch: missing.fetch }).tasks.stream("task_1"))).rejects.toMatchObject({
      code: "TASK_NOT_FOUND",
      status: 404
    })
    const plain = scripted(ok(task("running")))
    await expect(first(new Mediagate({ fetch: plain.fetch }).tasks.stream("task_1"))).rejects.toMatchObject({
      code: "STREAM_UNSUPPORTED"
    })
  })

  it("changes: every change of the filtered stream, past terminal states; resumes with Last-Event-ID", async () => {
    const other = { ...task("queued"), id: "task_2" }
    const { fetch, seen } = scripted(
      events(
        "retry: 5\n\n",
        `id: 1764000000000.task_1\nevent: task\ndata: ${JSON.stringify(task("succeeded", 100))}\n\n`
      ),
      // dropped: the next connection resumes after the last change
      events(`id: 1764000000100.task_2\nevent: task\ndata: ${JSON.stringify(other)}\n\n`),
      events(`id: 1764000000200.task_2\nevent: task\ndata: ${JSON.stringify({ ...other, status: "running" })}\n\n`)
    )
    const client = new Mediagate({ fetch, apiKey: "mg_test_k" })
    const changes: Array<string> = []
    for await (const changed of client.tasks.changes({ status: "succeeded", search: "kite boat" })) {
      changes.push(`${changed.id}:${changed.status}`)
      // it does not end by itself: the caller stops it
      if (changes.length === 3) break
    }
    expect(changes).toEqual(["task_1:succeeded", "task_2:queued", "task_2:running"])
    expect(seen.map((s) => s.url)).toEqual(
      Array(3).fill("http://localhost:3000/api/v1/tasks/events?status=succeeded&search=kite+boat")
    )
    expect(seen.map((s) => s.headers["last-event-id"])).toEqual([
      undefined,
      "1764000000000.task_1",
      "1764000000100.task_2"
    ])
  })

  it("waitFor: waits on the stream, reporting each state; polls where the server has no stream", async () => {
    const { fetch, seen } = scripted(events(
      `id: v0\nevent: task\ndata: ${
        JSON.stringify(task("pending", 0, { queue_position: { account: 2, upstream: null } }))
      }\n\n`,
      `id: v0b\nevent: task\ndata: ${
        JSON.stringify(task("pending", 0, { queue_position: { account: 1, upstream: null } }))
      }\n\n`,
      `id: v1\nevent: task\ndata: ${JSON.stringify(task("running", 10, { logs: ["started"] }))}\n\n`,
      `id: v2\nevent: task\ndata: ${JSON.stringify(task("running", 60))}\n\n`,
      `id: v3\nevent: task\ndata: ${JSON.stringify(task("succeeded", 100))}\n\nevent: end\ndata: {}\n\n`
    ))
    const progress: Array<string> = []
    const queue: Array<unknown> = []
    const done = await new Mediagate({ fetch }).waitFor("task_1", {
      onProgress: (t) => progress.push(`${t.status}:${t.progress}`),
      onQueueUpdate: (t) => queue.push([t.queue_position?.account ?? null, t.logs ?? null])
    })
    expect(done.status).toBe("succeeded")
    expect(progress).toEqual(["pending:0", "running:10", "running:60", "succeeded:100"])
    // where it waits, and its log lines: each change (the state without either, once they were there, too)
    expect(queue).toEqual([[2, null], [1, null], [null, ["started"]], [null, null]])
    expect(seen).toHaveLength(1)

    // an older server: no such route; then polls
    const older = scripted(
      json(404, { success: false, error: { code: "NOT_FOUND", message: "no route" } }),
      ok(task("running", 5)),
      ok(task("succeeded", 100))
    )
    const polled = await new Mediagate({ fetch: older.fetch }).waitFor("task_1", { pollInterval: { min: 5, max: 10 } })
    expect(polled.status).toBe("succeeded")
    expect(older.seen.map((s) => s.url.replace("http://localhost:3000/api/v1/tasks/", ""))).toEqual([
      "task_1/events",
      "task_1",
      "task_1"
    ])
    // a task that does not exist: the stream's 404 is the answer, no poll
    const unknown = scripted(json(404, { success: false, error: { code: "TASK_NOT_FOUND", message: "no task" } }))
    await expect(new Mediagate({ fetch: unknown.fetch }).waitFor("task_1")).rejects.toMatchObject({
      code: "TASK_NOT_FOUND"
    })
    expect(unknown.seen).toHaveLength(1)
  })

  it("paces polls by the estimate: quick first looks, about ten looks during the estimate, slower after", () => {
    const bounds = { min: 250, max: 5_000 }
    expect(nextDelay(undefined, 0, 60, bounds)).toBe(250)
    expect(nextDelay(250, 250, 60, bounds)).toBe(500)
    expect(nextDelay(4_000, 10_000, 60, bounds)).toBe(5_000)
    expect(nextDelay(4_000, 10_000, 20, bounds)).toBe(2_000)
    expect(nextDelay(2_000, 30_000, 20, bounds)).toBe(3_000)
    expect(nextDelay(4_000, 30_000, 20, bounds)).toBe(5_000)
    expect(nextDelay(250, 1_000, 0, bounds)).toBe(375)
  })

  it("downloads a result file without the API key and checks its size", async () => {
    const { fetch, seen } = scripted(
      () => new Response(new Uint8Array([1, 2, 3]), { status: 200, headers: { "content-type": "image/png" } }),
      () => new Response(new Uint8Array([1, 2]), { status: 200 }),
      json(403, { success: false, error: { code: "FILE_LINK_EXPIRED", message: "expired" } })
    )
    const client = new Mediagate({ apiKey: "mg_test_x", fetch })
    const blob = await client.files.download({ url: "http://files.test/f.png", size_bytes: 3 })
    expect([...new Uint8Array(await blob.arrayBuffer())]).toEqual([1, 2, 3])
    expect(blob.type).toBe("image/png")
    expect(seen[0]!.headers["authorization"]).toBeUndefined()
    await expect(client.files.download({ url: "http://files.test/f.png", size_bytes: 3 })).rejects.toMatchObject({
      code: "DOWNLOAD_SIZE_MISMATCH"
    })
    await expect(client.files.download({ url: "http://files.test/f.png", size_bytes: 3 })).rejects.toMatchObject({
      code: "FILE_LINK_EXPIRED",
      status: 403
    })
  })
})
