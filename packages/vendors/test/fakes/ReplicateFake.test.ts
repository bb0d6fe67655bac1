/**
 * The Replicate fake (`@mediagate/testing/fakes/replicate`) driven by the official `replicate` SDK: predictions
 * created on a model and on a version, read, awaited, run, streamed, canceled, listed and paginated; failures,
 * `Prefer: wait`, `Cancel-After` deadlines, output files, webhooks (event filter, throttling, the SDK's
 * `validateWebhook` and the Standard Webhooks library accepting the signature), and refused tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { close, listen, pngBytes, readBody } from "@mediagate/testing/fakes/common"
import { type ReplicateFake, replicateVersionOf, startReplicateFake } from "@mediagate/testing/fakes/replicate"
import { createServer, type IncomingHttpHeaders } from "node:http"
import Replicate, { parseProgressFromLogs, type Prediction, validateWebhook } from "replicate"
import { Webhook } from "standardwebhooks"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it holds (fails after `timeoutMs`). */
const eventually = async (check: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for a condition")
    await sleep(10)
  }
}

/** The HTTP status an SDK call failed with (`undefined` when it succeeded or failed without a response). */
const statusOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => (error as { response?: Response }).response?.status
  )

/** One webhook the receiver got. */
interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly at: number
}

/** A local webhook receiver recording every call; `for(tag)` is its URL for one prediction. */
const startReceiver = async () => {
  const received: Array<Received> = []
  const server = createServer((request, response) => {
    readBody(request).then((body) => {
      received.push({ path: request.url ?? "", headers: request.headers, body, at: Date.now() })
      response.writeHead(204).end()
    })
  })
  const url = await listen(server)
  return {
    received,
    url: (tag: string) => `${url}/hook?tag=${tag}`,
    of: (tag: string) => received.filter((call) => call.path === `/hook?tag=${tag}`),
    close: () => close(server)
  }
}

const knownVersion = replicateVersionOf("acme/painter")
const seenModels: Array<string> = []

let fake: ReplicateFake
let replicate: Replicate
let receiver: Awaited<ReturnType<typeof startReceiver>>

beforeAll(async () => {
  fake = await startReplicateFake({
    versions: { [knownVersion]: "acme/painter" },
    plan: (_input, model) => {
      seenModels.push(model)
      return model === "acme/sheet"
        ? { outputs: [{ contentType: "image/png" }, { contentType: "video/mp4" }], seconds: 7 }
        : {}
    }
  })
  replicate = new Replicate({ auth: fake.token, baseUrl: `${fake.url}/v1` })
  receiver = await startReceiver()
})

afterAll(async () => {
  await fake.close()
  await receiver.close()
})

describe("Replicate fake, driven by the official SDK", () => {
  it("creates on a model, reads, waits until succeeded, and serves the output file", async () => {
    const created = await replicate.predictions.create({ model: "acme/painter", input: { prompt: "a cat" } })
    expect(created.status).toBe("starting")
    expect(created.model).toBe("acme/painter")
    expect(created.version).toBe(knownVersion)
    expect(created.id).toMatch(/^[a-z0-9]{26}$/)
    expect(created.output).toBeNull()
    expect(created.started_at).toBeNull()
    expect(new Date(created.created_at).toISOString()).toBe(created.created_at)
    expect(created.urls.get).toBe(`${fake.url}/v1/predictions/${created.id}`)
    expect(created.urls.cancel).toBe(`${fake.url}/v1/predictions/${created.id}/cancel`)

    const done = await replicate.wait(created, { interval: 10 })
    expect(done.status).toBe("succeeded")
    expect(done.error).toBeNull()
    expect(done.metrics?.predict_time).toBe(0.05)
    expect(typeof done.started_at).toBe("string")
    expect(Date.parse(done.completed_at!)).toBeGreaterThanOrEqual(Date.parse(done.started_at!))
    expect(parseProgressFromLogs(done)).toEqual({ percentage: 1, current: 10, total: 10 })
    expect(typeof done.output).toBe("string")
    expect(done.output).toMatch(new RegExp(`^${fake.url}/fake-files/out-${created.id}-0\\.png$`))

    const again = await replicate.predictions.get(created.id)
    expect(again).toEqual(done)

    const file = await fetch(done.output as string)
    expect(file.status).toBe(200)
    expect(file.headers.get("content-type")).toBe("image/png")
    expect(file.headers.get("content-length")).toBe(String(pngBytes.byteLength))
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(new Uint8Array(pngBytes))
  })

  it("creates on a version id and on owner/name:version, and refuses an invalid version (422)", async () => {
    const byId = await replicate.predictions.create({ version: knownVersion, input: { prompt: "by id" } })
    expect(byId.model).toBe("acme/painter")
    expect(byId.version).toBe(knownVersion)

    const other = replicateVersionOf("acme/other")
    const byRef = await replicate.predictions.create({ version: `acme/other:${other}`, input: { prompt: "by ref" } })
    expect(byRef.model).toBe("acme/other")
    expect(byRef.version).toBe(other)
    expect(seenModels).toContain("acme/other")

    const unknown = "f".repeat(64)
    const byUnknown = await replicate.predictions.create({ version: unknown, input: { prompt: "unknown" } })
    expect(byUnknown.version).toBe(unknown)
    expect(seenModels[seenModels.length - 1]).toBe(unknown)

    expect(await statusOf(replicate.predictions.create({ version: "not-a-version", input: {} }))).toBe(422)
    const noInput = await fetch(`${fake.url}/v1/predictions`, {
      method: "POST",
      headers: { authorization: `Bearer ${fake.token}`, "content-type": "application/json" },
      body: JSON.stringify({ version: knownVersion })
    })
    expect(noInput.status).toBe(422)
    const problem = (await noInput.json()) as {
      title: string
      status: number
      invalid_fields: Array<{ field: string }>
    }
    expect(problem.status).toBe(422)
    expect(problem.title).toBe("Input validation failed")
    expect(problem.invalid_fields.map((field) => field.field)).toEqual(["input"])
  })

  it("answers an array of URLs for several outputs, and a plan's own URL as is", async () => {
    const sheet = await replicate.predictions.create({ model: "acme/sheet", input: { prompt: "two" }, wait: 5 })
    expect(sheet.status).toBe("succeeded")
    expect(sheet.metrics?.predict_time).toBe(7)
    expect(Array.isArray(sheet.output)).toBe(true)
    const [image, video] = sheet.output as Array<string>
    expect((await fetch(image!)).headers.get("content-type")).toBe("image/png")
    const videoFile = await fetch(video!)
    expect(videoFile.headers.get("content-type")).toBe("video/mp4")
    expect(new TextDecoder().decode((await videoFile.arrayBuffer()).slice(4, 8))).toBe("ftyp")

    const hostile = "http://127.0.0.1:9/evil.png"
    const own = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: `[fake:output=${hostile}]` },
      wait: 5
    })
    expect(own.output).toBe(hostile)
  })

  it("holds the answer with Prefer: wait, until the end or the asked seconds", async () => {
    const held = await replicate.predictions.create({ model: "acme/painter", input: { prompt: "wait" }, wait: 5 })
    expect(held.status).toBe("succeeded")

    const started = Date.now()
    const slow = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: "[fake:delay=1500]" },
      wait: 1
    })
    const elapsed = Date.now() - started
    expect(elapsed).toBeGreaterThanOrEqual(950)
    expect(elapsed).toBeLessThan(1_450)
    expect(slow.status).toBe("processing")
    expect(slow.output).toBeNull()
    await replicate.predictions.cancel(slow.id)
  })

  it("runs a model with replicate.run (blocking and polling) and streams its output", async () => {
    const output = await replicate.run("acme/painter", { input: { prompt: "run" } })
    expect(output).toMatch(new RegExp(`^${fake.url}/fake-files/out-[a-z0-9]{26}-0\\.png$`))

    const polled = await replicate.run(`acme/painter:${knownVersion}`, {
      input: { prompt: "poll [fake:delay=60]" },
      wait: { mode: "poll", interval: 10 }
    })
    expect(polled).toMatch(/\/fake-files\/out-[a-z0-9]{26}-0\.png$/)

    await expect(replicate.run("acme/painter", { input: { prompt: "[fake:fail=kaput]" } })).rejects.toThrow(
      "Prediction failed: kaput"
    )

    const streamed: Array<{ event: string; data: string }> = []
    for await (const event of replicate.stream("acme/painter", { input: { prompt: "stream" } })) {
      streamed.push({ event: event.event, data: event.data })
    }
    expect(streamed.map((event) => event.event)).toEqual(["output", "done"])
    expect(streamed[0]!.data).toMatch(/\/fake-files\/out-[a-z0-9]{26}-0\.png$/)
  })

  it("fails a prediction with the plan's error", async () => {
    const created = await replicate.predictions.create({ model: "acme/painter", input: { prompt: "[fake:fail=boom]" } })
    await expect(replicate.wait(created, { interval: 10 })).rejects.toThrow("Prediction failed: boom")
    const failed = await replicate.predictions.get(created.id)
    expect(failed.status).toBe("failed")
    expect(failed.error).toBe("boom")
    expect(failed.output).toBeNull()
    expect(failed.logs).toContain("Error: boom")
  })

  it("cancels a running prediction, which never succeeds later; a finished one stays as it was", async () => {
    // 3 s jobs (processing after 0.6 s), 20 s for the one cancelled while queued (starting for 4 s): the cancels
    // come in time also on a slow, busy machine
    const running = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: "[fake:delay=3000]" },
      webhook: receiver.url("cancel"),
      webhook_events_filter: ["completed"]
    })
    await eventually(() => fake.view(running.id)?.status === "processing")
    const canceled = await replicate.predictions.cancel(running.id)
    expect(canceled.status).toBe("canceled")
    expect(canceled.output).toBeNull()
    expect(typeof canceled.started_at).toBe("string")
    expect(typeof canceled.completed_at).toBe("string")

    const queued = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: "[fake:delay=20000]" }
    })
    const canceledQueued = await replicate.predictions.cancel(queued.id)
    expect(canceledQueued.status).toBe("canceled")
    expect(canceledQueued.started_at).toBeNull()

    await sleep(3100)
    const later = await replicate.predictions.get(running.id)
    expect(later.status).toBe("canceled")
    expect(later.output).toBeNull()
    expect(later.completed_at).toBe(canceled.completed_at)
    expect((await replicate.predictions.get(queued.id)).status).toBe("canceled")
    expect(await replicate.wait(later, { interval: 10 })).toEqual(later)

    await eventually(() => receiver.of("cancel").length === 1)
    expect(JSON.parse(receiver.of("cancel")[0]!.body)).toMatchObject({ id: running.id, status: "canceled" })

    const finished = await replicate.predictions.create({ model: "acme/painter", input: { prompt: "x" }, wait: 5 })
    expect((await replicate.predictions.cancel(finished.id)).status).toBe("succeeded")
  })

  it("aborts at a Cancel-After deadline before the start, and cancels after it", async () => {
    const post = (cancelAfter: string) =>
      fetch(`${fake.url}/v1/models/acme/painter/predictions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${fake.token}`,
          "content-type": "application/json",
          "cancel-after": cancelAfter
        },
        body: JSON.stringify({ input: { prompt: "[fake:delay=1000]" } })
      }).then((response) => response.json() as Promise<Prediction>)
    const [early, late] = await Promise.all([post("100ms"), post("0.3")])
    expect(early.deadline).toBeDefined()
    await sleep(400)
    const aborted = await replicate.predictions.get(early.id)
    expect(aborted.status).toBe("aborted")
    expect(aborted.started_at).toBeNull()
    const canceled = await replicate.predictions.get(late.id)
    expect(canceled.status).toBe("canceled")
    expect(typeof canceled.started_at).toBe("string")
  })

  it("lists predictions newest first and paginates with cursors", async () => {
    const paged = await startReplicateFake({ pageSize: 2 })
    try {
      const client = new Replicate({ auth: paged.token, baseUrl: `${paged.url}/v1` })
      const ids: Array<string> = []
      for (let n = 0; n < 5; n++) {
        ids.push((await client.predictions.create({ model: "acme/painter", input: { prompt: `p${n}` } })).id)
      }
      const newestFirst = [...ids].reverse()

      const first = await client.predictions.list()
      expect(first.results.map((prediction) => prediction.id)).toEqual(newestFirst.slice(0, 2))
      expect(first.previous).toBeNull()
      expect(first.next).toMatch(new RegExp(`^${paged.url}/v1/predictions\\?cursor=`))

      const pages: Array<Array<string>> = []
      for await (const page of client.paginate(client.predictions.list)) {
        pages.push(page.map((prediction) => prediction.id))
      }
      expect(pages.map((page) => page.length)).toEqual([2, 2, 1])
      expect(pages.flat()).toEqual(newestFirst)

      const auth = { headers: { authorization: `Bearer ${paged.token}` } }
      const second = (await (await fetch(first.next!, auth)).json()) as { previous: string; next: string | null }
      const back = (await (await fetch(second.previous, auth)).json()) as { results: Array<{ id: string }> }
      expect(back.results.map((prediction) => prediction.id)).toEqual(newestFirst.slice(0, 2))
      expect(paged.counts()).toMatchObject({ create: 5, list: 6 })
    } finally {
      await paged.close()
    }
  })

  it("sends signed webhooks honouring the events filter, accepted by the SDK's validateWebhook", async () => {
    const completedOnly = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: "[fake:delay=100]" },
      webhook: receiver.url("completed"),
      webhook_events_filter: ["completed"]
    })
    const startAndEnd = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: "[fake:delay=100]" },
      webhook: receiver.url("start-end"),
      webhook_events_filter: ["start", "completed"]
    })
    const everything = await replicate.predictions.create({
      model: "acme/painter",
      input: { prompt: "[fake:delay=1400]" },
      webhook: receiver.url("all")
    })
    await Promise.all([completedOnly, startAndEnd, everything].map((p) => replicate.wait(p, { interval: 20 })))
    await eventually(() => receiver.of("all").some((call) => JSON.parse(call.body).status === "succeeded"))
    await sleep(200)

    const statuses = (tag: string) => receiver.of(tag).map((call) => (JSON.parse(call.body) as Prediction).status)
    expect(statuses("completed")).toEqual(["succeeded"])
    expect(statuses("start-end")).toEqual(["starting", "succeeded"])
    const all = statuses("all")
    expect(all[0]).toBe("starting")
    expect(all[all.length - 1]).toBe("succeeded")
    expect(all.slice(1, -1).length).toBeGreaterThanOrEqual(1)
    expect(all.slice(1, -1).every((status) => status === "processing")).toBe(true)
    const throttled = receiver.of("all").slice(1, -1)
    for (let n = 1; n < throttled.length; n++) {
      expect(throttled[n]!.at - throttled[n - 1]!.at).toBeGreaterThanOrEqual(400)
    }
    const last = JSON.parse(receiver.of("all")[all.length - 1]!.body) as Prediction
    expect(parseProgressFromLogs(last)?.percentage).toBe(1)

    const { key } = await replicate.webhooks.default.secret.get()
    expect(key).toBe(fake.webhookSecret)
    expect(key).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)

    const call = receiver.of("completed")[0]!
    const header = (name: string) => String(call.headers[name])
    expect(header("webhook-id")).toMatch(/^msg_/)
    expect(Math.abs(Number(header("webhook-timestamp")) - Date.now() / 1000)).toBeLessThan(60)
    expect(header("webhook-signature")).toMatch(/^v1,/)
    const signed = {
      id: header("webhook-id"),
      timestamp: header("webhook-timestamp"),
      signature: header("webhook-signature"),
      secret: key
    }
    expect(await validateWebhook({ ...signed, body: call.body })).toBe(true)
    const tampered = call.body.replace("succeeded", "failed")
    expect(tampered).not.toBe(call.body)
    expect(await validateWebhook({ ...signed, body: tampered })).toBe(false)
    expect(await validateWebhook({ ...signed, body: call.body, secret: "whsec_d3Jvbmc=" })).toBe(false)

    const request = new Request("http://receiver.invalid/hook", {
      method: "POST",
      headers: {
        "webhook-id": signed.id,
        "webhook-timestamp": signed.timestamp,
        "webhook-signature": signed.signature
      },
      body: call.body
    })
    expect(await validateWebhook(request, key)).toBe(true)

    const standard = new Webhook(key)
    const headers = {
      "webhook-id": signed.id,
      "webhook-timestamp": signed.timestamp,
      "webhook-signature": signed.signature
    }
    expect(standard.verify(call.body, headers)).toMatchObject({ id: completedOnly.id, status: "succeeded" })
    expect(() => standard.verify(tampered, headers)).toThrow()
  })

  it("refuses a wrong or missing token (401) and answers 503 while down", async () => {
    const wrong = new Replicate({ auth: "r8_wrong", baseUrl: `${fake.url}/v1` })
    expect(await statusOf(wrong.predictions.list())).toBe(401)
    expect(await statusOf(wrong.predictions.create({ model: "acme/painter", input: { prompt: "x" } }))).toBe(401)
    expect(await statusOf(replicate.predictions.list())).toBeUndefined()

    const missing = await fetch(`${fake.url}/v1/predictions`)
    expect(missing.status).toBe(401)
    expect(await missing.json()).toMatchObject({ title: "Unauthenticated", status: 401 })

    const before = fake.counts()
    fake.down = true
    try {
      const down = await fetch(`${fake.url}/v1/predictions`, { headers: { authorization: `Bearer ${fake.token}` } })
      expect(down.status).toBe(503)
    } finally {
      fake.down = false
    }
    expect(fake.counts().list).toBe(before.list)
    expect(fake.requests.length).toBeGreaterThan(0)
    expect(fake.requests[fake.requests.length - 1]!.url).toBe("/v1/predictions")
  })
})
