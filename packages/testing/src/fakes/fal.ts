/**
 * A fake of fal's queue protocol (`https://queue.fal.run`) as a plain `node:http` server, faithful enough for the
 * official `@fal-ai/client` SDK to drive it (point the SDK at it with a `requestMiddleware` that rewrites
 * `https://queue.fal.run` to the fake's `url`):
 *
 * - `POST /{owner}/{app}[/{path…}][?fal_webhook=<url>]` submits a job (`Authorization: Key <key>`, else 401);
 * - `GET /{owner}/{app}/requests/{id}/status[?logs=1]` answers its status: 202 while `IN_QUEUE` (with the number of
 *   queued jobs ahead) or `IN_PROGRESS`, 200 once `COMPLETED`; `…/status/stream` streams the same as server-sent
 *   events until `COMPLETED`;
 * - `GET /{owner}/{app}/requests/{id}` answers the output (400 while running; a failed job answers 500
 *   `{ detail: <message> }`, the model's error as fal relays it);
 * - `PUT /{owner}/{app}/requests/{id}/cancel` cancels it (202 / 400 `ALREADY_COMPLETED` / 404 `NOT_FOUND`);
 * - on completion a webhook is POSTed to `fal_webhook`, signed with ED25519 like fal's, whose public key the fake
 *   serves at `GET /.well-known/jwks.json`;
 * - the outputs are served at `GET /fake-files/<name>`.
 *
 * A job's timeline is computed from its timestamps (queued for the first 20% of its plan's duration, then in
 * progress, then completed), so status calls cost no timers; only a job with a webhook (and an open status stream)
 * holds one. A cancelled job leaves the queue at once and counts as `COMPLETED`: its result answers 499
 * `{ detail: "Request was cancelled", error_type: "client_cancelled" }` (fal's error type for a client cancellation),
 * and it sends no webhook at all.
 */
import { createHash, generateKeyPairSync, randomUUID, sign } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import {
  close,
  countJobs,
  type FakeOutput,
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

/** How to start the fake. */
export interface FalFakeOptions {
  /** The accepted API key (default `"fal-test-key"`). */
  readonly key?: string
  /** Plans each job (default: the prompt's `[fake:…]` directives, see `common.ts`). */
  readonly plan?: Planner
  /** The port to listen on (default: a free one). */
  readonly port?: number
  /** The user id the webhooks are signed for (default `"fake-fal-user"`). */
  readonly userId?: string
}

/** A job the fake received. */
export interface FalJob {
  /** The request id (a UUID). */
  readonly id: string
  /** The app the job belongs to, `owner/app` (no endpoint path): its status, result and cancel URLs use it. */
  readonly app: string
  /** The full endpoint id the job was submitted to, `owner/app[/path…]` (what the planner sees). */
  readonly model: string
  readonly input: Record<string, unknown>
  readonly plan: FakePlan
  /** When it was submitted (epoch ms). */
  readonly submittedAt: number
  /** The `fal_webhook` URL it was submitted with. */
  readonly webhook: string | undefined
  cancelled: boolean
}

/** A running fake. */
export interface FalFake {
  /** The base URL, e.g. `http://127.0.0.1:PORT`: stands for `https://queue.fal.run`. */
  readonly url: string
  readonly key: string
  /** The user id in the webhooks' signatures. */
  readonly userId: string
  /** Where the webhooks' public key is served (JWKS). */
  readonly jwksUrl: string
  /** The jobs, by request id. */
  readonly jobs: ReadonlyMap<string, FalJob>
  /** Every request received, oldest first (the last 100,000). */
  readonly requests: ReadonlyArray<LoggedRequest>
  /** Requests per operation (those refused during an outage not included), and webhooks sent. */
  readonly counts: () => {
    submit: number
    status: number
    result: number
    cancel: number
    files: number
    webhooks: number
  }
  /** While true, every request is answered 503 (outage simulation). */
  down: boolean
  /** Faults for the next submits, one each, taken from the front (`common.ts`). */
  readonly submitFaults: Array<SubmitFault>
  /** How many jobs mention `text` (a task id) in their input or webhook URL. */
  readonly jobCount: (text: string) => number
  /**
   * Closes the listener (new connections refused, open ones ended) and keeps every job: they run on and send their
   * webhooks, as a crashed front of the real queue would. {@link restart} listens again on the same port.
   */
  readonly stop: () => Promise<void>
  /** Listens again on the fake's port after {@link stop}. */
  readonly restart: () => Promise<void>
  readonly close: () => Promise<void>
}

type Phase = "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED"

/** The most requests the log keeps. */
const maxLogged = 100_000

/** The endpoint namespaces whose app ids have three segments (as the SDK's `parseEndpointId`). */
const namespaces = new Set(["workflows", "comfy"])

/** A job and what the fake needs to compute its state. */
class Job implements FalJob {
  cancelled = false
  /** When it was cancelled (epoch ms). */
  cancelledAt: number | undefined = undefined
  /** Its webhook's timer. */
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  constructor(
    readonly id: string,
    readonly app: string,
    readonly model: string,
    readonly input: Record<string, unknown>,
    readonly plan: FakePlan,
    readonly submittedAt: number,
    readonly webhook: string | undefined,
    /** Its place in submission order (for queue positions). */
    readonly index: number
  ) {}
  /** When it leaves the queue. */
  get startsAt() {
    return this.submittedAt + this.plan.durationMs * 0.2
  }
  /** When it completes, unless cancelled. */
  get doneAt() {
    return this.submittedAt + this.plan.durationMs
  }
  phase(now: number): Phase {
    if (this.cancelled) return "COMPLETED"
    return now < this.startsAt ? "IN_QUEUE" : now < this.doneAt ? "IN_PROGRESS" : "COMPLETED"
  }
  /** Whether it completed with its outputs. */
  succeeded(now: number) {
    return !this.cancelled && this.plan.fail === undefined && now >= this.doneAt
  }
}

/**
 * Which jobs are still queued, by submission order: a Fenwick tree of "still queued" flags, whose exits are applied
 * lazily from a min-heap of exit times. Queue positions cost O(log n) however many jobs are queued.
 */
class QueueBook {
  private tree = new Int32Array(1025)
  private left = new Uint8Array(1024)
  private size = 0
  private readonly heapAt: Array<number> = []
  private readonly heapIndex: Array<number> = []

  /** Enqueues a job leaving the queue at `exitAt`; answers its index. */
  add(exitAt: number) {
    if (this.size === this.left.length) this.grow()
    const index = this.size++
    this.update(index, 1)
    this.push(exitAt, index)
    return index
  }

  /** Takes a job out of the queue (cancelled). */
  leave(index: number) {
    if (this.left[index] === 1) return
    this.left[index] = 1
    this.update(index, -1)
  }

  /** How many jobs submitted before `index` are still queued at `now`. */
  ahead(index: number, now: number) {
    this.drain(now)
    let sum = 0
    for (let i = index; i > 0; i -= i & -i) sum += this.tree[i]
    return sum
  }

  private update(index: number, delta: number) {
    for (let i = index + 1; i < this.tree.length; i += i & -i) this.tree[i] += delta
  }

  private grow() {
    const left = new Uint8Array(this.left.length * 2)
    left.set(this.left)
    const tree = new Int32Array(left.length + 1)
    for (let i = 1; i <= this.size; i++) {
      tree[i] += left[i - 1] === 1 ? 0 : 1
      const parent = i + (i & -i)
      if (parent < tree.length) tree[parent] += tree[i]
    }
    this.left = left
    this.tree = tree
  }

  private drain(now: number) {
    while (this.heapAt.length > 0 && this.heapAt[0] <= now) this.leave(this.pop())
  }

  private push(at: number, index: number) {
    const { heapAt, heapIndex } = this
    let i = heapAt.length
    heapAt.push(at)
    heapIndex.push(index)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (heapAt[parent] <= at) break
      heapAt[i] = heapAt[parent]
      heapIndex[i] = heapIndex[parent]
      i = parent
    }
    heapAt[i] = at
    heapIndex[i] = index
  }

  private pop() {
    const { heapAt, heapIndex } = this
    const top = heapIndex[0]
    const lastAt = heapAt.pop()!
    const lastIndex = heapIndex.pop()!
    const length = heapAt.length
    if (length === 0) return top
    let i = 0
    for (;;) {
      const leftChild = 2 * i + 1
      if (leftChild >= length) break
      const rightChild = leftChild + 1
      const child = rightChild < length && heapAt[rightChild] < heapAt[leftChild] ? rightChild : leftChild
      if (heapAt[child] >= lastAt) break
      heapAt[i] = heapAt[child]
      heapIndex[i] = heapIndex[child]
      i = child
    }
    heapAt[i] = lastAt
    heapIndex[i] = lastIndex
    return top
  }
}

const extensions: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "audio/mpeg": "mp3",
  "audio/wav": "wav"
}

/** The bytes the fake serves for a file: a small MP4 for videos, a small PNG for anything else. */
const bytesOf = (contentType: string) => contentType.startsWith("video/") ? mp4Bytes : pngBytes

/** The default file name of a job's `n`th output. */
const defaultName = (id: string, n: number, output: FakeOutput) =>
  `out-${id}-${n}.${extensions[output.contentType.split(";")[0].trim()] ?? "bin"}`

const defaultNamePattern = /^out-([0-9a-f-]{36})-(\d+)\.[a-z0-9]+$/

/** Starts the fake on 127.0.0.1 (see the module's doc for the protocol). */
export const startFalFake = async (options: FalFakeOptions = {}): Promise<FalFake> => {
  const key = options.key ?? "fal-test-key"
  const userId = options.userId ?? "fake-fal-user"
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  const jwks = { keys: [{ kty: "OKP", crv: "Ed25519", x: publicKey.export({ format: "jwk" }).x }] }
  const jobs = new Map<string, Job>()
  /** Outputs with their own names: name → job id and output index. */
  const named = new Map<string, { readonly id: string; readonly n: number }>()
  const book = new QueueBook()
  const log: Array<LoggedRequest> = []
  const counts = { submit: 0, status: 0, result: 0, cancel: 0, files: 0, webhooks: 0 }
  const state = { down: false, closed: false }
  const submitFaults: Array<SubmitFault> = []
  let base = ""

  const requestUrl = (job: Job) => `${base}/${job.app}/requests/${job.id}`
  const handle = (job: Job) => ({
    request_id: job.id,
    response_url: requestUrl(job),
    status_url: `${requestUrl(job)}/status`,
    cancel_url: `${requestUrl(job)}/cancel`
  })

  /** The job's log lines up to `now`. */
  const logsOf = (job: Job, now: number) => {
    const until = Math.min(now, job.cancelledAt ?? Infinity)
    const lines: Array<{ message: string; level: string; source: string; timestamp: string }> = []
    const line = (at: number, message: string, level = "INFO") => {
      if (at <= until) lines.push({ message, level, source: "USER", timestamp: new Date(at).toISOString() })
    }
    const middle = (job.startsAt + job.doneAt) / 2
    line(job.startsAt, `Loading ${job.model}`)
    line(middle, "Generating")
    if (job.plan.fail !== undefined) line(job.doneAt, job.plan.fail, "ERROR")
    else line(job.doneAt, `Generated ${job.plan.outputs.length} output(s)`)
    return lines
  }

  const statusOf = (job: Job, now: number, logs: boolean) => {
    const phase = job.phase(now)
    const body: Record<string, unknown> = { status: phase, ...handle(job) }
    if (phase === "IN_QUEUE") body["queue_position"] = book.ahead(job.index, now)
    if (logs) body["logs"] = logsOf(job, now)
    if (phase === "COMPLETED") {
      const ran = (Math.min(job.cancelledAt ?? Infinity, job.doneAt) - job.startsAt) / 1000
      const seconds = job.cancelled ? (ran > 0 ? ran : null) : job.plan.seconds ?? job.plan.durationMs / 1000
      body["metrics"] = { inference_time: seconds }
    }
    return body
  }

  const fileOf = (job: Job, output: FakeOutput, n: number) => {
    const name = output.name ?? defaultName(job.id, n, output)
    return {
      url: output.url ?? `${base}/fake-files/${encodeURIComponent(name)}`,
      content_type: output.contentType,
      file_name: name,
      file_size: bytesOf(output.contentType).length
    }
  }

  /** The output JSON of a successful job, shaped like fal's image, video and audio models' outputs. */
  const resultOf = (job: Job) => {
    const images: Array<Record<string, unknown>> = []
    const others: Record<string, unknown> = {}
    job.plan.outputs.forEach((output, n) => {
      const file = fileOf(job, output, n)
      if (output.contentType.startsWith("image/")) images.push({ ...file, width: 8, height: 8 })
      else if (output.contentType.startsWith("video/")) others["video"] ??= file
      else if (output.contentType.startsWith("audio/")) others["audio"] ??= file
      else others["file"] ??= file
    })
    const prompt = job.input["prompt"]
    const fromImages = images.length === 0 ? {} : {
      images,
      seed: 42,
      has_nsfw_concepts: images.map(() => false),
      prompt: typeof prompt === "string" ? prompt : ""
    }
    return { ...fromImages, ...others }
  }

  const sendWebhook = (job: Job) => {
    job.timer = undefined
    if (job.cancelled || state.closed || job.webhook === undefined) return
    const ids = { request_id: job.id, gateway_request_id: job.id }
    const body = JSON.stringify(
      job.plan.fail === undefined
        ? { ...ids, status: "OK", payload: resultOf(job) }
        : { ...ids, status: "ERROR", error: "Invalid status code: 500", payload: { detail: job.plan.fail } }
    )
    const timestamp = String(Math.floor(Date.now() / 1000))
    const digest = createHash("sha256").update(body).digest("hex")
    const message = Buffer.from([job.id, userId, timestamp, digest].join("\n"), "utf8")
    counts.webhooks++
    void postCallback(job.webhook, body, {
      "X-Fal-Webhook-Request-Id": job.id,
      "X-Fal-Webhook-User-Id": userId,
      "X-Fal-Webhook-Timestamp": timestamp,
      "X-Fal-Webhook-Signature": sign(null, message, privateKey).toString("hex")
    })
  }

  /** Checks a submit and makes its job, answering it when `answer`; whether a job was made. */
  const submit = async (
    request: IncomingMessage,
    response: ServerResponse,
    model: string,
    app: string,
    url: URL,
    answer: boolean
  ): Promise<boolean> => {
    const text = await readBody(request)
    let input: unknown
    try {
      input = text.trim() === "" ? {} : JSON.parse(text)
    } catch {
      sendJson(response, 422, { detail: [{ loc: ["body"], msg: "Invalid JSON body", type: "json_invalid" }] })
      return false
    }
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      sendJson(response, 422, {
        detail: [{ loc: ["body"], msg: "Input should be a valid dictionary", type: "dict_type" }]
      })
      return false
    }
    const webhook = url.searchParams.get("fal_webhook") ?? undefined
    if (webhook !== undefined && !URL.canParse(webhook)) {
      sendJson(response, 422, { detail: `Invalid webhook URL: ${webhook}` })
      return false
    }
    const record = input as Record<string, unknown>
    const plan = planOf(record, model, options.plan)
    const now = Date.now()
    const id = randomUUID()
    const index = book.add(now + plan.durationMs * 0.2)
    const job = new Job(id, app, model, record, plan, now, webhook, index)
    jobs.set(id, job)
    plan.outputs.forEach((output, n) => {
      if (output.name !== undefined && output.url === undefined) named.set(output.name, { id, n })
    })
    if (webhook !== undefined) {
      job.timer = setTimeout(() => sendWebhook(job), Math.max(0, job.doneAt - now))
      job.timer.unref()
    }
    if (answer) {
      sendJson(response, 200, {
        status: "IN_QUEUE",
        ...handle(job),
        ...(webhook === undefined ? {} : { gateway_request_id: id }),
        queue_position: book.ahead(index, now)
      }, { "x-fal-request-id": id })
    }
    return true
  }

  const status = (response: ServerResponse, job: Job, logs: boolean) => {
    const body = statusOf(job, Date.now(), logs)
    sendJson(response, body["status"] === "COMPLETED" ? 200 : 202, body, { "x-fal-request-id": job.id })
  }

  /** Streams the job's status as server-sent events, one per change, until it completes. */
  const stream = (response: ServerResponse, job: Job, logs: boolean) => {
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-fal-request-id": job.id
    })
    let last = ""
    let timer: ReturnType<typeof setTimeout> | undefined
    const tick = () => {
      const now = Date.now()
      const body = statusOf(job, now, logs)
      const text = JSON.stringify(body)
      if (text !== last) response.write(`data: ${text}\n\n`)
      last = text
      if (body["status"] === "COMPLETED") {
        response.end()
        return
      }
      const next = now < job.startsAt ? job.startsAt : job.doneAt
      timer = setTimeout(tick, Math.max(1, Math.min(next - now, 250)))
    }
    response.on("close", () => clearTimeout(timer))
    tick()
  }

  const result = (response: ServerResponse, job: Job) => {
    const now = Date.now()
    const headers = { "x-fal-request-id": job.id }
    if (job.cancelled) {
      return sendJson(response, 499, { detail: "Request was cancelled", error_type: "client_cancelled" }, {
        ...headers,
        "x-fal-error-type": "client_cancelled"
      })
    }
    if (job.phase(now) !== "COMPLETED") {
      return sendJson(response, 400, { detail: "Request is still in progress" }, headers)
    }
    if (job.plan.fail !== undefined) return sendJson(response, 500, { detail: job.plan.fail }, headers)
    sendJson(response, 200, resultOf(job), headers)
  }

  const cancel = (response: ServerResponse, job: Job | undefined) => {
    if (job === undefined) return sendJson(response, 404, { status: "NOT_FOUND" })
    const now = Date.now()
    if (job.phase(now) === "COMPLETED") return sendJson(response, 400, { status: "ALREADY_COMPLETED" })
    job.cancelled = true
    job.cancelledAt = now
    book.leave(job.index)
    clearTimeout(job.timer)
    job.timer = undefined
    sendJson(response, 202, { status: "CANCELLATION_REQUESTED" })
  }

  const file = (request: IncomingMessage, response: ServerResponse, name: string) => {
    counts.files++
    const match = defaultNamePattern.exec(name)
    const ref = named.get(name) ?? (match === null ? undefined : { id: match[1], n: Number(match[2]) })
    const job = ref === undefined ? undefined : jobs.get(ref.id)
    const output = job?.plan.outputs[ref?.n ?? -1]
    if (job === undefined || output === undefined || !job.succeeded(Date.now())) {
      return sendJson(response, 404, { detail: "File not found" })
    }
    const bytes = bytesOf(output.contentType)
    response.writeHead(200, { "content-type": output.contentType, "content-length": bytes.length })
    response.end(request.method === "HEAD" ? undefined : bytes)
  }

  const authorized = (request: IncomingMessage) => request.headers.authorization === `Key ${key}`

  const route = async (request: IncomingMessage, response: ServerResponse) => {
    const method = request.method ?? "GET"
    const url = new URL(request.url ?? "/", "http://fake")
    let segments: Array<string>
    try {
      segments = url.pathname.split("/").filter((segment) => segment !== "").map(decodeURIComponent)
    } catch {
      return sendJson(response, 400, { detail: "Malformed path" })
    }
    const read = method === "GET" || method === "HEAD"
    if (read && segments.length === 2 && segments[0] === ".well-known" && segments[1] === "jwks.json") {
      return sendJson(response, 200, jwks)
    }
    if (read && segments.length === 2 && segments[0] === "fake-files") return file(request, response, segments[1])
    const appLength = namespaces.has(segments[0] ?? "") ? 3 : 2
    if (segments.length < appLength) return sendJson(response, 404, { detail: "Not Found" })
    const app = segments.slice(0, appLength).join("/")
    const onRequest = segments[appLength] === "requests" && segments.length > appLength + 1
    if (!onRequest) {
      if (method !== "POST") return sendJson(response, 405, { detail: "Method Not Allowed" })
      counts.submit++
      if (!authorized(request)) return refuse(request, response)
      const model = segments.join("/")
      return faultedSubmit(submitFaults, response, (answer) => submit(request, response, model, app, url, answer))
    }
    const id = segments[appLength + 1]
    const rest = segments.slice(appLength + 2).join("/")
    const found = jobs.get(id)
    const job = found?.app === app ? found : undefined
    const logs = url.searchParams.get("logs") === "1"
    const operation = method === "GET" && rest === ""
      ? "result"
      : method === "GET" && (rest === "status" || rest === "status/stream")
      ? "status"
      : method === "PUT" && rest === "cancel"
      ? "cancel"
      : undefined
    if (operation === undefined) return sendJson(response, 404, { detail: "Not Found" })
    counts[operation]++
    if (!authorized(request)) return refuse(request, response)
    if (operation === "cancel") return cancel(response, job)
    if (job === undefined) return sendJson(response, 404, { detail: `Request ${id} not found` })
    if (operation === "result") return result(response, job)
    return rest === "status" ? status(response, job, logs) : stream(response, job, logs)
  }

  const refuse = (request: IncomingMessage, response: ServerResponse) => {
    const detail = request.headers.authorization === undefined
      ? "Authentication is required to access this application."
      : "Invalid API key."
    request.resume()
    sendJson(response, 401, { detail })
  }

  const server = createServer((request, response) => {
    log.push({ method: request.method ?? "GET", url: request.url ?? "/", at: Date.now(), headers: request.headers })
    if (log.length >= maxLogged + 10_000) log.splice(0, log.length - maxLogged)
    if (state.down) {
      request.resume()
      return sendJson(response, 503, { detail: "Service Unavailable" })
    }
    route(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { detail: String(error) })
      else response.end()
    })
  })
  base = await listen(server, options.port)

  return {
    url: base,
    key,
    userId,
    jwksUrl: `${base}/.well-known/jwks.json`,
    jobs,
    get requests() {
      if (log.length > maxLogged) log.splice(0, log.length - maxLogged)
      return log
    },
    counts: () => ({ ...counts }),
    submitFaults,
    jobCount: (text) => countJobs(jobs.values(), text, (job) => [job.input, job.webhook]),
    get down() {
      return state.down
    },
    set down(value: boolean) {
      state.down = value
    },
    stop: () => close(server),
    restart: async () => {
      await listen(server, Number(new URL(base).port))
    },
    close: async () => {
      state.closed = true
      for (const job of jobs.values()) clearTimeout(job.timer)
      await close(server)
    }
  }
}
