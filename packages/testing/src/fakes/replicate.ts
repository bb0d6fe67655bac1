/**
 * A fake of Replicate's predictions HTTP API (https://replicate.com/docs/reference/http), faithful enough for the
 * official `replicate` SDK: predictions created on a model (`/v1/models/{owner}/{name}/predictions`), a deployment
 * or a version (`/v1/predictions`), read, canceled and listed (cursor pages, newest first); `Prefer: wait` holds the
 * answer, `Cancel-After` sets a deadline (`aborted` before the start, `canceled` after); webhooks signed the Standard
 * Webhooks way with the secret of `/v1/webhooks/default/secret`; server-sent events on `urls.stream`; output files
 * served under `/fake-files/`.
 *
 * A prediction's state is computed from its timestamps on every read (`starting` for the first 20% of the plan's
 * duration, then `processing` with tqdm-like log lines, then `succeeded` or `failed`), so tens of thousands of
 * concurrent predictions cost no timers; timers exist only for webhooks and held answers.
 */
import { createHash, createHmac, randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import {
  close,
  countJobs,
  type FakePlan,
  faultedSubmit,
  listen,
  type LoggedRequest,
  mp4Bytes,
  type Planner,
  planOf,
  pngBytes,
  postCallback,
  readBody,
  sendJson,
  type SubmitFault
} from "./common.js"

/** The events a webhook can be sent on (`webhook_events_filter`). */
export type ReplicateWebhookEvent = "start" | "output" | "logs" | "completed"

/** A prediction's status. */
export type ReplicateStatus = "starting" | "processing" | "succeeded" | "failed" | "canceled" | "aborted"

/** Options of {@link startReplicateFake}. */
export interface ReplicateFakeOptions {
  /** The accepted API token (default `r8_test_token`). */
  readonly token?: string
  /** Plans a prediction from its input and model (`owner/name`, or the version id when its model is unknown). */
  readonly plan?: Planner
  readonly port?: number
  /** Version ids the fake knows, with their model (`owner/name`), for predictions created with a bare version id. */
  readonly versions?: Readonly<Record<string, string>>
  /** Predictions per page of `GET /v1/predictions` (default 100). */
  readonly pageSize?: number
}

/** What the fake stores per prediction; its state follows from these timestamps (epoch milliseconds). */
export interface ReplicatePrediction {
  readonly id: string
  /** Creation order (the list cursor). */
  readonly seq: number
  /** `owner/name`, or the version id when the prediction was created with an unknown bare version id. */
  readonly model: string
  readonly version: string
  /** `owner/name` of the deployment it was created on. */
  readonly deployment: string | undefined
  readonly input: Record<string, unknown>
  readonly plan: FakePlan
  readonly createdAt: number
  /** When it turns `processing` (20% of the plan's duration). */
  readonly startsAt: number
  /** When it succeeds or fails unless canceled before. */
  readonly completesAt: number
  /** From the `Cancel-After` header. */
  readonly deadlineAt: number | undefined
  readonly canceledAt: number | undefined
  readonly webhook: string | undefined
  readonly filter: ReadonlyArray<ReplicateWebhookEvent>
  /** The URLs its output names, in order. */
  readonly outputUrls: ReadonlyArray<string>
}

/** A prediction as the API answers it. */
export interface ReplicatePredictionJson {
  readonly id: string
  readonly model: string
  readonly version: string
  readonly input: Record<string, unknown>
  readonly logs: string
  readonly output: string | ReadonlyArray<string> | null
  readonly data_removed: false
  readonly error: string | null
  readonly status: ReplicateStatus
  readonly source: "api"
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly deadline?: string
  readonly deployment?: string
  readonly urls: { readonly get: string; readonly cancel: string; readonly stream: string; readonly web: string }
  readonly metrics: { readonly predict_time?: number; readonly total_time?: number }
}

/** One webhook the fake sent. */
export interface ReplicateWebhookDelivery {
  readonly predictionId: string
  readonly event: ReplicateWebhookEvent
  readonly messageId: string
  /** The receiver's answer (`undefined`: it never answered below 500). */
  readonly status: number | undefined
  readonly at: number
}

/** A running fake. */
export interface ReplicateFake {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:PORT`. */
  readonly url: string
  readonly token: string
  /** The webhook signing secret, `whsec_<base64>`. */
  readonly webhookSecret: string
  readonly predictions: ReadonlyMap<string, ReplicatePrediction>
  /** The last 100,000 requests. */
  readonly requests: ReadonlyArray<LoggedRequest>
  /** The last 100,000 webhooks sent, once answered. */
  readonly webhooks: ReadonlyArray<ReplicateWebhookDelivery>
  readonly counts: () => {
    create: number
    get: number
    cancel: number
    list: number
    files: number
    webhooks: number
  }
  /** A prediction as `GET /v1/predictions/{id}` would answer it now. */
  readonly view: (id: string) => ReplicatePredictionJson | undefined
  /** While true every request is answered 503. */
  down: boolean
  /** Faults for the next creates, one each, taken from the front (`common.ts`). */
  readonly submitFaults: Array<SubmitFault>
  /** How many predictions mention `text` (a task id) in their input or webhook URL. */
  readonly jobCount: (text: string) => number
  readonly close: () => Promise<void>
}

/** The deterministic 64-hex version id the fake gives a model's latest version. */
export const replicateVersionOf = (model: string): string =>
  createHash("sha256").update(`mediagate-fake-replicate:${model}`).digest("hex")

const events: ReadonlyArray<ReplicateWebhookEvent> = ["start", "output", "logs", "completed"]
const logLimit = 100_000
const throttleMs = 500
const progressSteps = 10
const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
const modelPattern = /^([A-Za-z0-9][\w.-]*)\/([A-Za-z0-9][\w.-]*)$/
const versionPattern = /^[0-9a-f]{64}$/

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** A stored prediction with the fake's bookkeeping. */
interface Entry {
  readonly p: Mutable<ReplicatePrediction>
  /** Held answers and streams, woken at the end or on cancel. */
  readonly waiters: Set<() => void>
  hook: Hook | undefined
}

/** Webhook bookkeeping of one prediction. */
interface Hook {
  timer: ReturnType<typeof setTimeout> | undefined
  /** When the last `logs`/`output` webhook went out. */
  lastThrottled: number
  /** How many log lines the last `logs` webhook carried. */
  sentLines: number
  done: boolean
  /** Sends in order. */
  queue: Promise<unknown>
}

interface Ending {
  readonly at: number
  readonly status: "succeeded" | "failed" | "canceled" | "aborted"
}

/** A random string of `length` characters from `[a-z0-9]`. */
const randomId = (length: number) => {
  const bytes = randomBytes(length)
  let id = ""
  for (const byte of bytes) id += alphabet[byte % alphabet.length]
  return id
}

/** When and how a prediction ends (natural end, cancel or deadline, whichever first). */
const ending = (p: ReplicatePrediction): Ending => {
  const canceled = p.canceledAt ?? Infinity
  const deadline = p.deadlineAt ?? Infinity
  if (p.completesAt <= canceled && p.completesAt <= deadline) {
    return { at: p.completesAt, status: p.plan.fail === undefined ? "succeeded" : "failed" }
  }
  if (canceled <= deadline) return { at: canceled, status: "canceled" }
  return { at: deadline, status: deadline < p.startsAt ? "aborted" : "canceled" }
}

/** When log line `n` appears (`undefined` past the progress lines). */
const lineTime = (p: ReplicatePrediction, n: number): number | undefined => {
  if (n === 0) return p.startsAt
  if (n > progressSteps) return undefined
  return p.startsAt + ((p.completesAt - p.startsAt) * n) / (progressSteps + 1)
}

/** How many log lines have appeared at `t` (before the natural end). */
const lineCount = (p: ReplicatePrediction, t: number) => {
  let count = 0
  for (let n = 0; n <= progressSteps; n++) {
    const at = lineTime(p, n)
    if (at === undefined || at > t) break
    count++
  }
  return count
}

const progressLine = (p: ReplicatePrediction, k: number) => {
  const elapsed = (((p.completesAt - p.startsAt) * k) / (progressSteps + 1) / 1000).toFixed(2)
  const bar = "█".repeat(k) + " ".repeat(progressSteps - k)
  return `${String((k * 100) / progressSteps).padStart(3)}%|${bar}| ${k}/${progressSteps} [${elapsed}s]`
}

/** The logs at `t` (clamped to the end by the caller); `final` adds the natural end's line. */
const logsAt = (p: ReplicatePrediction, t: number, final: boolean) => {
  const count = lineCount(p, t)
  const lines: Array<string> = []
  for (let n = 0; n < count; n++) lines.push(n === 0 ? `Running ${p.model}` : progressLine(p, n))
  if (final) {
    lines.push(
      p.plan.fail === undefined
        ? `Prediction completed in ${((p.completesAt - p.startsAt) / 1000).toFixed(2)}s`
        : `Error: ${p.plan.fail}`
    )
  }
  return lines.join("\n")
}

const iso = (ms: number) => new Date(ms).toISOString()
const seconds = (ms: number) => Math.round(ms) / 1000

/**
 * The prediction's JSON at `now`. `outputEvent` answers the moment output appears before the natural end: still
 * `processing`, with its output (what an `output` webhook carries).
 */
const viewOf = (p: ReplicatePrediction, base: string, now: number, outputEvent = false): ReplicatePredictionJson => {
  const end = ending(p)
  const terminal = !outputEvent && now >= end.at
  const t = outputEvent ? p.completesAt : Math.min(now, end.at)
  const status: ReplicateStatus = terminal ? end.status : t >= p.startsAt ? "processing" : "starting"
  const natural = terminal && (end.status === "succeeded" || end.status === "failed")
  const succeeded = (terminal && end.status === "succeeded") || outputEvent
  const output = !succeeded ? null : p.outputUrls.length === 1 ? p.outputUrls[0]! : p.outputUrls
  const started = t >= p.startsAt
  const metrics: Mutable<ReplicatePredictionJson["metrics"]> = {}
  if (terminal) {
    metrics.total_time = seconds(end.at - p.createdAt)
    if (end.status === "succeeded") metrics.predict_time = p.plan.seconds ?? p.plan.durationMs / 1000
    else if (started) metrics.predict_time = seconds(end.at - p.startsAt)
  }
  const urls = {
    get: `${base}/v1/predictions/${p.id}`,
    cancel: `${base}/v1/predictions/${p.id}/cancel`,
    stream: `${base}/v1/streams/${p.id}`,
    web: `https://replicate.com/p/${p.id}`
  }
  return {
    id: p.id,
    model: p.model,
    version: p.version,
    input: p.input,
    logs: logsAt(p, t, natural),
    output,
    data_removed: false,
    error: terminal && end.status === "failed" ? p.plan.fail ?? "the model failed" : null,
    status,
    source: "api",
    created_at: iso(p.createdAt),
    started_at: started ? iso(p.startsAt) : null,
    completed_at: terminal ? iso(end.at) : null,
    ...(p.deadlineAt === undefined ? {} : { deadline: iso(p.deadlineAt) }),
    ...(p.deployment === undefined ? {} : { deployment: p.deployment }),
    urls,
    metrics
  }
}

/** Parses a `Cancel-After` duration: `90`, `30s`, `5m`, `1h30m`, `250ms` (milliseconds; undefined when invalid). */
const parseDuration = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
  let total = 0
  let rest = trimmed
  while (rest !== "") {
    const part = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest)
    if (part === null) return undefined
    total += Number(part[1]) * units[part[2]!]!
    rest = rest.slice(part[0].length)
  }
  return trimmed === "" ? undefined : total
}

/** The seconds a `Prefer` header asks to wait (`wait` alone: 60; clamped to 1..60), or undefined. */
const preferWait = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined
  const match = /(?:^|[\s,;])wait(?:\s*=\s*"?(\d+)"?)?(?=$|[\s,;])/i.exec(header)
  if (match === null) return undefined
  const asked = match[1] === undefined ? 60 : Number(match[1])
  return Math.min(60, Math.max(1, asked))
}

const extensionOf = (contentType: string) => {
  const subtype = contentType.split("/")[1]?.split(/[;+]/)[0]?.trim() ?? "bin"
  return subtype === "jpeg" ? "jpg" : subtype === "mpeg" ? "mp3" : subtype
}

const contentTypeOfName = (name: string): string | undefined => {
  const extension = name.split(".").pop()?.toLowerCase()
  const known: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    webp: "image/webp",
    mp4: "video/mp4"
  }
  return extension === undefined ? undefined : known[extension]
}

const bytesOf = (contentType: string): Uint8Array =>
  contentType.startsWith("video/") ? mp4Bytes : contentType.startsWith("image/") ? pngBytes : Buffer.from("fake")

/** An RFC 7807 problem, as Replicate answers errors. */
const problem = (
  response: ServerResponse,
  status: number,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {}
) => sendJson(response, status, { title, detail, status, ...extra }, { "content-type": "application/problem+json" })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

interface InvalidField {
  readonly type: string
  readonly field: string
  readonly description: string
}

/** Where a create request was sent. */
type Target =
  | { readonly _tag: "version" }
  | { readonly _tag: "model"; readonly model: string }
  | { readonly _tag: "deployment"; readonly deployment: string }

/** Starts the fake on 127.0.0.1 (a free port unless `port` is given). */
export const startReplicateFake = async (options: ReplicateFakeOptions = {}): Promise<ReplicateFake> => {
  const token = options.token ?? "r8_test_token"
  const pageSize = Math.max(1, options.pageSize ?? 100)
  const secretBytes = randomBytes(24)
  const webhookSecret = `whsec_${secretBytes.toString("base64")}`
  const versions = new Map<string, string>(Object.entries(options.versions ?? {}))
  const entries = new Map<string, Entry>()
  const predictions = new Map<string, ReplicatePrediction>()
  const order: Array<Entry> = []
  /** Output file name → content type. */
  const files = new Map<string, string>()
  let log: Array<LoggedRequest> = []
  let deliveries: Array<ReplicateWebhookDelivery> = []
  const counts = { create: 0, get: 0, cancel: 0, list: 0, files: 0, webhooks: 0 }
  const submitFaults: Array<SubmitFault> = []
  let closed = false
  let base = ""

  /**
   * Resolves when the prediction ends, is canceled, or `maxMs` passes. A timer can fire a little early by the wall
   * clock (the event loop's cached time), so it re-arms until the moment has really come.
   */
  const settle = (entry: Entry, maxMs: number) =>
    new Promise<void>((resolve) => {
      const until = Date.now() + maxMs
      let timer: ReturnType<typeof setTimeout> | undefined
      const done = () => {
        clearTimeout(timer)
        entry.waiters.delete(done)
        resolve()
      }
      const arm = () => {
        const remaining = Math.min(until, ending(entry.p).at) - Date.now()
        if (remaining <= 0 || closed) return done()
        timer = setTimeout(arm, Math.max(1, remaining))
      }
      entry.waiters.add(done)
      arm()
    })

  const wake = (entry: Entry) => {
    for (const waiter of [...entry.waiters]) waiter()
  }

  // Webhooks ------------------------------------------------------------------------------------------------------

  const send = (entry: Entry, hook: Hook, event: ReplicateWebhookEvent, body: ReplicatePredictionJson) => {
    const url = entry.p.webhook
    if (url === undefined) return
    const text = JSON.stringify(body)
    const messageId = `msg_${randomId(27)}`
    const timestamp = String(Math.floor(Date.now() / 1000))
    const signature = createHmac("sha256", secretBytes).update(`${messageId}.${timestamp}.${text}`).digest("base64")
    const headers = {
      "webhook-id": messageId,
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1,${signature}`,
      "user-agent": "Replicate-Webhooks/fake"
    }
    counts.webhooks++
    hook.queue = hook.queue.then(async () => {
      if (closed) return
      const status = await postCallback(url, text, headers)
      deliveries.push({ predictionId: entry.p.id, event, messageId, status, at: Date.now() })
      if (deliveries.length >= 2 * logLimit) deliveries = deliveries.slice(-logLimit)
    })
  }

  /** Arms the timer for the prediction's next webhook event. */
  const schedule = (entry: Entry) => {
    const hook = entry.hook
    if (hook === undefined || hook.done || closed) return
    clearTimeout(hook.timer)
    const p = entry.p
    const end = ending(p)
    let next = end.at
    if (p.filter.includes("logs")) {
      const lineAt = lineTime(p, hook.sentLines)
      if (lineAt !== undefined && lineAt < end.at) {
        next = Math.min(next, Math.max(lineAt, hook.lastThrottled + throttleMs))
      }
    }
    hook.timer = setTimeout(() => fire(entry), Math.max(0, next - Date.now()))
  }

  /** Sends what is due: `logs` (throttled) while it runs; at the end `output` (throttled) and `completed`. */
  const fire = (entry: Entry) => {
    const hook = entry.hook
    if (hook === undefined || hook.done || closed) return
    const p = entry.p
    const now = Date.now()
    const end = ending(p)
    if (now >= end.at) {
      hook.done = true
      hook.timer = undefined
      if (p.filter.includes("output") && end.status === "succeeded" && end.at - hook.lastThrottled >= throttleMs) {
        send(entry, hook, "output", viewOf(p, base, end.at, true))
      }
      if (p.filter.includes("completed")) send(entry, hook, "completed", viewOf(p, base, end.at))
      return
    }
    const count = lineCount(p, now)
    if (p.filter.includes("logs") && count > hook.sentLines && now - hook.lastThrottled >= throttleMs) {
      hook.sentLines = count
      hook.lastThrottled = now
      send(entry, hook, "logs", viewOf(p, base, now))
    }
    schedule(entry)
  }

  // Handlers ------------------------------------------------------------------------------------------------------

  /** Checks a create and makes its prediction, answering it when `answer`; true when a prediction was made. */
  const create = async (
    request: IncomingMessage,
    response: ServerResponse,
    target: Target,
    answer = true
  ): Promise<boolean | void> => {
    counts.create++
    const text = await readBody(request)
    let body: unknown
    try {
      body = text.trim() === "" ? {} : JSON.parse(text)
    } catch {
      return problem(response, 400, "Bad Request", "The request body is not valid JSON.")
    }
    if (!isRecord(body)) return problem(response, 400, "Bad Request", "The request body must be a JSON object.")
    const invalid: Array<InvalidField> = []
    const input = body["input"]
    if (input === undefined) invalid.push({ type: "required", field: "input", description: "input is required" })
    else if (!isRecord(input)) {
      invalid.push({ type: "invalid_type", field: "input", description: "input: Invalid type. Expected: object" })
    }
    let model = ""
    let version = ""
    let deployment: string | undefined
    if (target._tag === "version") {
      const asked = body["version"]
      if (asked === undefined) {
        invalid.push({ type: "required", field: "version", description: "version is required" })
      } else if (typeof asked !== "string") {
        invalid.push({ type: "invalid_type", field: "version", description: "version: Invalid type. Expected: string" })
      } else {
        const [name, id] = asked.split(":", 2) as [string, string | undefined]
        if (id !== undefined && modelPattern.test(name) && versionPattern.test(id)) {
          model = name
          version = id
          versions.set(id, name)
        } else if (id === undefined && versionPattern.test(name)) {
          version = name
          model = versions.get(name) ?? name
        } else if (id === undefined && modelPattern.test(name)) {
          model = name
          version = replicateVersionOf(name)
        } else {
          invalid.push({ type: "format", field: "version", description: "Invalid version or not permitted" })
        }
      }
    } else if (target._tag === "model") {
      model = target.model
      version = replicateVersionOf(model)
    } else {
      deployment = target.deployment
      model = target.deployment
      version = replicateVersionOf(model)
    }
    const webhook = body["webhook"]
    if (webhook !== undefined && webhook !== null) {
      let valid = typeof webhook === "string"
      if (typeof webhook === "string") {
        try {
          valid = ["http:", "https:"].includes(new URL(webhook).protocol)
        } catch {
          valid = false
        }
      }
      if (!valid) {
        invalid.push({ type: "format", field: "webhook", description: "webhook: Does not match format 'uri'" })
      }
    }
    const filterAsked = body["webhook_events_filter"]
    let filter: ReadonlyArray<ReplicateWebhookEvent> = events
    if (filterAsked !== undefined && filterAsked !== null) {
      const known = (value: unknown): value is ReplicateWebhookEvent =>
        typeof value === "string" && (events as ReadonlyArray<string>).includes(value)
      if (Array.isArray(filterAsked) && filterAsked.every(known)) filter = filterAsked
      else {
        invalid.push({
          type: "enum",
          field: "webhook_events_filter",
          description: `webhook_events_filter: each item must be one of ${events.map((e) => `"${e}"`).join(", ")}`
        })
      }
    }
    const cancelAfter = request.headers["cancel-after"]
    const deadlineMs = typeof cancelAfter === "string" ? parseDuration(cancelAfter) : undefined
    if (typeof cancelAfter === "string" && deadlineMs === undefined) {
      return problem(response, 400, "Bad Request", `Invalid Cancel-After header: ${cancelAfter}`)
    }
    if (invalid.length > 0 || !isRecord(input)) {
      return problem(response, 422, "Input validation failed", invalid.map((f) => `- ${f.description}`).join("\n"), {
        invalid_fields: invalid
      })
    }

    const id = randomId(26)
    const plan = planOf(input, model, options.plan)
    const durationMs = Math.max(0, plan.durationMs)
    const createdAt = Date.now()
    const outputUrls = plan.outputs.map((output, n) => {
      if (output.url !== undefined) return output.url
      const name = output.name ?? `out-${id}-${n}.${extensionOf(output.contentType)}`
      files.set(name, output.contentType)
      return `${base}/fake-files/${encodeURIComponent(name)}`
    })
    const p: Mutable<ReplicatePrediction> = {
      id,
      seq: order.length,
      model,
      version,
      deployment,
      input,
      plan: { ...plan, durationMs },
      createdAt,
      startsAt: createdAt + durationMs * 0.2,
      completesAt: createdAt + durationMs,
      deadlineAt: deadlineMs === undefined ? undefined : createdAt + deadlineMs,
      canceledAt: undefined,
      webhook: typeof webhook === "string" ? webhook : undefined,
      filter,
      outputUrls
    }
    const entry: Entry = { p, waiters: new Set(), hook: undefined }
    entries.set(id, entry)
    predictions.set(id, p)
    order.push(entry)
    if (p.webhook !== undefined) {
      const hook: Hook = {
        timer: undefined,
        lastThrottled: -Infinity,
        sentLines: 0,
        done: false,
        queue: Promise.resolve()
      }
      entry.hook = hook
      if (filter.includes("start")) send(entry, hook, "start", viewOf(p, base, createdAt))
      schedule(entry)
    }
    const prefer = request.headers["prefer"]
    const wait = preferWait(Array.isArray(prefer) ? prefer.join(", ") : prefer)
    if (!answer) return true
    if (wait !== undefined) await settle(entry, wait * 1000)
    if (response.destroyed) return true
    sendJson(response, 201, viewOf(p, base, Date.now()), { location: `${base}/v1/predictions/${id}` })
    return true
  }

  const cancel = (response: ServerResponse, entry: Entry) => {
    counts.cancel++
    const now = Date.now()
    if (now < ending(entry.p).at) {
      entry.p.canceledAt = now
      wake(entry)
      schedule(entry)
    }
    sendJson(response, 200, viewOf(entry.p, base, now))
  }

  /** Cursors as Django REST's CursorPagination makes them: base64 of `p=<position>` (`r=1&` for backwards). */
  const cursorOf = (seq: number, reverse: boolean) => {
    const cursor = Buffer.from(`${reverse ? "r=1&" : ""}p=${seq}`).toString("base64")
    return `${base}/v1/predictions?cursor=${encodeURIComponent(cursor)}`
  }

  const list = (response: ServerResponse, cursor: string | null) => {
    counts.list++
    let reverse = false
    let position = order.length
    if (cursor !== null) {
      const decoded = new URLSearchParams(Buffer.from(cursor, "base64").toString("utf8"))
      const p = Number(decoded.get("p"))
      if (decoded.get("p") === null || !Number.isInteger(p)) {
        return problem(response, 400, "Bad Request", "Invalid cursor")
      }
      reverse = decoded.get("r") === "1"
      position = p
    }
    const page: Array<Entry> = []
    if (reverse) {
      for (let seq = position + 1; seq < order.length && page.length < pageSize; seq++) page.unshift(order[seq]!)
    } else {
      for (let seq = Math.min(position, order.length) - 1; seq >= 0 && page.length < pageSize; seq--) {
        page.push(order[seq]!)
      }
    }
    const now = Date.now()
    const first = page[0]?.p.seq
    const last = page[page.length - 1]?.p.seq
    sendJson(response, 200, {
      next: last !== undefined && last > 0 ? cursorOf(last, false) : null,
      previous: first !== undefined && first < order.length - 1 ? cursorOf(first, true) : null,
      results: page.map((entry) => viewOf(entry.p, base, now))
    })
  }

  /** Server-sent events of `urls.stream`: the output URLs and `done` at the end, or `error`. */
  const stream = async (response: ServerResponse, entry: Entry) => {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" })
    response.flushHeaders()
    await settle(entry, Infinity)
    if (response.destroyed) return
    const end = ending(entry.p)
    if (end.status === "succeeded") {
      entry.p.outputUrls.forEach((url, n) => response.write(`event: output\nid: ${n}\ndata: ${url}\n\n`))
      response.write("event: done\ndata: {}\n\n")
    } else if (end.status === "failed") {
      const message = (entry.p.plan.fail ?? "the model failed").split("\n").map((line) => `data: ${line}`).join("\n")
      response.write(`event: error\n${message}\n\n`)
    } else {
      response.write(`event: done\ndata: {"reason":"canceled"}\n\n`)
    }
    response.end()
  }

  const serveFile = (request: IncomingMessage, response: ServerResponse, name: string) => {
    const contentType = files.get(name) ?? contentTypeOfName(name)
    if (contentType === undefined) return problem(response, 404, "Not found", `No file ${name}`)
    counts.files++
    const bytes = bytesOf(contentType)
    response.writeHead(200, {
      "content-type": contentType,
      "content-length": bytes.byteLength,
      "cache-control": "public, max-age=3600"
    })
    if (request.method === "HEAD") response.end()
    else response.end(bytes)
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const method = request.method ?? "GET"
    log.push({ method, url: request.url ?? "/", at: Date.now(), headers: request.headers })
    if (log.length >= 2 * logLimit) log = log.slice(-logLimit)
    if (fake.down) return problem(response, 503, "Service Unavailable", "The fake is down.")
    const url = new URL(request.url ?? "/", base)
    const parts = url.pathname.split("/").filter((part) => part !== "").map(decodeURIComponent)
    const notFound = () => problem(response, 404, "Not found", "The requested resource could not be found.")
    const notAllowed = () => problem(response, 405, "Method Not Allowed", `${method} is not allowed here.`)

    if (parts[0] === "fake-files" && parts.length === 2) {
      return method === "GET" || method === "HEAD" ? serveFile(request, response, parts[1]!) : notAllowed()
    }
    if (parts[0] !== "v1") return notFound()
    if (parts[1] === "streams" && parts.length === 3) {
      const entry = entries.get(parts[2]!)
      if (entry === undefined) return notFound()
      return method === "GET" ? stream(response, entry) : notAllowed()
    }

    const authorization = request.headers["authorization"] ?? ""
    const presented = /^(?:Bearer|Token)\s+(.+)$/i.exec(authorization)?.[1]?.trim()
    if (presented !== token) {
      return problem(
        response,
        401,
        "Unauthenticated",
        presented === undefined
          ? "You did not pass an authentication token"
          : "You did not pass a valid authentication token"
      )
    }

    const [, resource, a, b, c] = parts
    if (resource === "predictions") {
      if (parts.length === 2) {
        if (method === "POST") {
          const target: Target = { _tag: "version" }
          return faultedSubmit(submitFaults, response, (answer) => create(request, response, target, answer))
        }
        if (method === "GET") return list(response, url.searchParams.get("cursor"))
        return notAllowed()
      }
      const entry = entries.get(a!)
      if (parts.length === 3) {
        if (method !== "GET") return notAllowed()
        counts.get++
        return entry === undefined ? notFound() : sendJson(response, 200, viewOf(entry.p, base, Date.now()))
      }
      if (parts.length === 4 && b === "cancel") {
        if (method !== "POST") return notAllowed()
        return entry === undefined ? notFound() : cancel(response, entry)
      }
      return notFound()
    }
    if ((resource === "models" || resource === "deployments") && parts.length === 5 && c === "predictions") {
      const name = `${a}/${b}`
      if (!modelPattern.test(name)) return notFound()
      if (method !== "POST") return notAllowed()
      const target: Target = resource === "models"
        ? { _tag: "model", model: name }
        : { _tag: "deployment", deployment: name }
      return faultedSubmit(submitFaults, response, (answer) => create(request, response, target, answer))
    }
    if (resource === "webhooks" && a === "default" && b === "secret" && parts.length === 4) {
      return method === "GET" ? sendJson(response, 200, { key: webhookSecret }) : notAllowed()
    }
    if (resource === "account" && parts.length === 2) {
      return method === "GET"
        ? sendJson(response, 200, { type: "user", username: "fake", name: "Fake Replicate", github_url: null })
        : notAllowed()
    }
    return notFound()
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) response.destroy()
      else problem(response, 500, "Internal Server Error", String(error))
    })
  })
  base = await listen(server, options.port)

  const fake: ReplicateFake = {
    url: base,
    token,
    webhookSecret,
    predictions,
    get requests() {
      return log.length > logLimit ? log.slice(-logLimit) : log
    },
    get webhooks() {
      return deliveries.length > logLimit ? deliveries.slice(-logLimit) : deliveries
    },
    counts: () => ({ ...counts }),
    submitFaults,
    jobCount: (text) => countJobs(predictions.values(), text, (p) => [p.input, p.webhook]),
    view: (id) => {
      const entry = entries.get(id)
      return entry === undefined ? undefined : viewOf(entry.p, base, Date.now())
    },
    down: false,
    close: async () => {
      closed = true
      for (const entry of entries.values()) {
        if (entry.hook !== undefined) clearTimeout(entry.hook.timer)
        wake(entry)
      }
      await close(server)
    }
  }
  return fake
}
