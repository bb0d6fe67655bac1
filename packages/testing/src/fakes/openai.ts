/**
 * A fake of the OpenAI-compatible image and video generation endpoints (the interface OpenAI defined and gateways
 * such as new-api and LiteLLM expose), as a plain `node:http` server:
 *
 * - `POST /v1/images/generations` answers synchronously after the plan's duration (`url` or `b64_json` items);
 * - `POST /v1/videos` (multipart as openai-python sends it, or JSON) creates a job whose status
 *   (`queued` → `in_progress` → `completed` | `failed`) is computed from timestamps on read, so ten thousand jobs in
 *   flight cost no timers; `GET /v1/videos/{id}`, `GET /v1/videos/{id}/content`, `GET /v1/videos`,
 *   `DELETE /v1/videos/{id}` (a cancel for gateways) and `POST /v1/videos/{id}/remix` follow it;
 * - `GET /fake-files/<name>` serves the image URLs without auth, like a CDN.
 *
 * Every error uses OpenAI's envelope `{ error: { message, type, param, code } }`.
 */
import { randomBytes } from "node:crypto"
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
  sendJson,
  type SubmitFault
} from "./common.js"

/** How the fake is set up. */
export interface OpenAiFakeOptions {
  /** The API key clients must send as `Authorization: Bearer <key>` (default `sk-test-openai`). */
  readonly key?: string
  /** Plans each image request and video job (else the prompt's directives, else the defaults). */
  readonly plan?: Planner
  /** The `openai-poll-after-ms` header of video answers (default 500). */
  readonly pollAfterMs?: number
  /** Port to listen on (default: a free one). */
  readonly port?: number
}

/** A video job the fake received. */
export interface OpenAiVideo {
  readonly id: string
  readonly model: string
  /** The create request's fields (a multipart file appears as `{ filename, contentType, bytes }`). */
  readonly input: Record<string, unknown>
  readonly plan: FakePlan
  /** When it was created (ms since the epoch). */
  readonly createdAt: number
  /** Deleted (`DELETE /v1/videos/{id}`): gone from reads, never completes. */
  deleted: boolean
  /** Size of the `input_reference` (a multipart file or a base64 data URL), 0 if none. */
  readonly referenceBytes: number
  /** The video it remixes, if any. */
  readonly remixedFrom: string | null
}

/** A running fake. */
export interface OpenAiFake {
  /** Base URL without `/v1`. */
  readonly url: string
  readonly key: string
  readonly videos: ReadonlyMap<string, OpenAiVideo>
  /** The image requests, in order. */
  readonly images: ReadonlyArray<{ readonly input: Record<string, unknown>; readonly at: number }>
  /** The requests received (the last 100,000). */
  readonly requests: ReadonlyArray<LoggedRequest>
  /** How many requests of each kind it answered (auth failures and 503s included). */
  readonly counts: () => {
    images: number
    videoCreate: number
    videoGet: number
    videoContent: number
    videoDelete: number
    files: number
  }
  /** While true, every request answers 503 with the error envelope. */
  down: boolean
  /** Faults for the next image and video creates, one each, taken from the front (`common.ts`). */
  readonly submitFaults: Array<SubmitFault>
  /** How many image requests and videos mention `text` (a task id) in their input. */
  readonly jobCount: (text: string) => number
  readonly close: () => Promise<void>
}

/** The `error` of OpenAI's error envelope. */
interface ErrorBody {
  readonly message: string
  readonly type: string
  readonly param: string | null
  readonly code: string | null
}

const logLimit = 100_000

const imageResponseFormats = ["url", "b64_json"]
const imageOutputFormats = ["png", "jpeg", "webp"]

/** Answers the error envelope. */
const sendError = (response: ServerResponse, status: number, error: ErrorBody, headers: Record<string, string> = {}) =>
  sendJson(response, status, { error }, headers)

const invalid = (message: string, param: string | null = null, code: string | null = null): ErrorBody => ({
  message,
  type: "invalid_request_error",
  param,
  code
})

/** A parameter with a wrong value. */
const invalidValue = (param: string, value: unknown, expected: string): ErrorBody =>
  invalid(`Invalid value for '${param}': ${JSON.stringify(value)}. ${expected}`, param, "invalid_value")

const missingPrompt = invalid("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter")

/** Reads a request's body as bytes (multipart bodies carry files). */
const readBytes = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)))

const unixSeconds = (ms: number) => Math.floor(ms / 1000)

/** The file extension of a content type. */
const extensionOf = (contentType: string) => {
  const subtype = contentType.split("/")[1]?.split(";")[0]?.trim() ?? "bin"
  return subtype === "jpeg" ? "jpg" : subtype
}

/** The bytes served for a content type: the MP4 stub for videos, the PNG otherwise. */
const bytesOf = (contentType: string) => (contentType.startsWith("video/") ? mp4Bytes : pngBytes)

/** The body of a create request, from JSON or multipart form data; `undefined` when it does not parse. */
const parseBody = async (
  request: IncomingMessage,
  body: Buffer
): Promise<{ readonly input: Record<string, unknown>; readonly fileBytes: number } | undefined> => {
  const contentType = request.headers["content-type"] ?? ""
  if (contentType.startsWith("multipart/form-data")) {
    try {
      const form = await new Request("http://fake.invalid/", {
        method: "POST",
        headers: { "content-type": contentType },
        body: new Uint8Array(body)
      }).formData()
      const input: Record<string, unknown> = {}
      let fileBytes = 0
      for (const [name, value] of form.entries()) {
        if (typeof value === "string") input[name] = value
        else {
          input[name] = { filename: value.name, contentType: value.type, bytes: value.size }
          if (name === "input_reference") fileBytes = value.size
        }
      }
      return { input, fileBytes }
    } catch {
      return undefined
    }
  }
  try {
    const parsed: unknown = JSON.parse(body.toString("utf8"))
    return isRecord(parsed) ? { input: parsed, fileBytes: 0 } : undefined
  } catch {
    return undefined
  }
}

/** The size of a JSON `input_reference` given as a base64 data URL (0 otherwise). */
const dataUrlBytes = (value: unknown) => {
  if (typeof value !== "string") return 0
  const match = /^data:[^;,]*;base64,(.*)$/s.exec(value)
  return match === null ? 0 : Buffer.from(match[1]!, "base64").length
}

/** Starts the fake on a loopback port. */
export const startOpenAiFake = async (options: OpenAiFakeOptions = {}): Promise<OpenAiFake> => {
  const key = options.key ?? "sk-test-openai"
  const pollAfterMs = options.pollAfterMs ?? 500
  const videos = new Map<string, OpenAiVideo>()
  const order: Array<string> = []
  const images: Array<{ readonly input: Record<string, unknown>; readonly at: number }> = []
  const files = new Map<string, string>()
  let log: Array<LoggedRequest> = []
  const counts = { images: 0, videoCreate: 0, videoGet: 0, videoContent: 0, videoDelete: 0, files: 0 }
  let imageJobs = 0
  let base = ""

  /** The video object as OpenAI answers it, its state computed from the clock. */
  const videoObject = (video: OpenAiVideo, now: number) => {
    const duration = Math.max(0, video.plan.durationMs)
    const elapsed = now - video.createdAt
    const finishedAt = unixSeconds(video.createdAt + duration)
    const state = elapsed >= duration
      ? video.plan.fail !== undefined
        ? {
          status: "failed",
          progress: 0,
          completed_at: finishedAt,
          expires_at: null,
          error: {
            code: video.plan.fail.includes("policy") ? "moderation_blocked" : "video_generation_failed",
            message: video.plan.fail
          }
        }
        : { status: "completed", progress: 100, completed_at: finishedAt, expires_at: finishedAt + 3600, error: null }
      : elapsed < duration * 0.2
      ? { status: "queued", progress: 0, completed_at: null, expires_at: null, error: null }
      : {
        status: "in_progress",
        progress: Math.min(99, Math.max(1, Math.floor((elapsed / duration) * 100))),
        completed_at: null,
        expires_at: null,
        error: null
      }
    const { input } = video
    return {
      id: video.id,
      object: "video",
      model: video.model,
      status: state.status,
      progress: state.progress,
      created_at: unixSeconds(video.createdAt),
      completed_at: state.completed_at,
      expires_at: state.expires_at,
      prompt: typeof input["prompt"] === "string" ? input["prompt"] : null,
      seconds: input["seconds"] === undefined ? "4" : String(input["seconds"]),
      size: typeof input["size"] === "string" ? input["size"] : "720x1280",
      remixed_from_video_id: video.remixedFrom,
      error: state.error
    }
  }

  /** Validates a video request's fields; the error when one is wrong. */
  const videoInputError = (input: Record<string, unknown>, needsModel: boolean): ErrorBody | undefined => {
    const prompt = input["prompt"]
    if (typeof prompt !== "string" || prompt.length === 0) return missingPrompt
    if (needsModel && input["model"] !== undefined && typeof input["model"] !== "string") {
      return invalid("Invalid type for 'model': expected a string.", "model", "invalid_type")
    }
    const seconds = input["seconds"]
    if (seconds !== undefined && !/^[1-9]\d*$/.test(String(seconds))) {
      return invalidValue("seconds", seconds, "Expected a positive whole number of seconds.")
    }
    const size = input["size"]
    if (size !== undefined && (typeof size !== "string" || !/^\d+x\d+$/.test(size))) {
      return invalidValue("size", size, "Expected '<width>x<height>', such as '720x1280'.")
    }
    return undefined
  }

  const createVideo = (input: Record<string, unknown>, referenceBytes: number, remixedFrom: string | null) => {
    const model = typeof input["model"] === "string" ? input["model"] : "sora-2"
    const video: OpenAiVideo = {
      id: `video_${randomBytes(24).toString("hex")}`,
      model,
      input,
      plan: planOf(input, model, options.plan),
      createdAt: Date.now(),
      deleted: false,
      referenceBytes,
      remixedFrom
    }
    videos.set(video.id, video)
    order.push(video.id)
    return video
  }

  const pollHeaders = () => ({ "openai-poll-after-ms": String(pollAfterMs) })

  /** Checks an images request and makes its images, answering when `answer`; true when images were made. */
  const handleImages = async (
    request: IncomingMessage,
    response: ServerResponse,
    answer = true
  ): Promise<boolean | void> => {
    const parsed = await parseBody(request, await readBytes(request))
    if (parsed === undefined) {
      return sendError(response, 400, invalid("We could not parse the JSON body of your request."))
    }
    const { input } = parsed
    const prompt = input["prompt"]
    if (typeof prompt !== "string" || prompt.length === 0) return sendError(response, 400, missingPrompt)
    const n = input["n"] ?? 1
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 10) {
      return sendError(response, 400, invalidValue("n", n, "Expected an integer from 1 to 10."))
    }
    const format = input["response_format"] ?? "url"
    if (typeof format !== "string" || !imageResponseFormats.includes(format)) {
      const expected = "Supported values are 'url' and 'b64_json'."
      return sendError(response, 400, invalidValue("response_format", format, expected))
    }
    const outputFormat = input["output_format"]
    const badOutputFormat = typeof outputFormat !== "string" || !imageOutputFormats.includes(outputFormat)
    if (outputFormat !== undefined && badOutputFormat) {
      const expected = "Supported values are 'png', 'jpeg' and 'webp'."
      return sendError(response, 400, invalidValue("output_format", outputFormat, expected))
    }
    const model = typeof input["model"] === "string" ? input["model"] : "dall-e-2"
    const started = Date.now()
    images.push({ input, at: started })
    if (!answer) return true
    const job = ++imageJobs
    const plan = planOf(input, model, options.plan)
    await sleep(plan.durationMs - (Date.now() - started))
    if (response.destroyed) return
    if (plan.fail !== undefined) {
      return plan.fail.includes("policy")
        ? sendError(response, 400, invalid(plan.fail, null, "content_policy_violation"))
        : sendError(response, 500, { message: plan.fail, type: "server_error", param: null, code: "server_error" })
    }
    const outputs = plan.outputs.length > 0 ? plan.outputs : [{ contentType: "image/png" }]
    const data = Array.from({ length: n }, (_, index) => {
      const output = outputs[index % outputs.length]!
      const revised = model === "dall-e-3" ? { revised_prompt: prompt } : {}
      if (format === "b64_json") {
        return { b64_json: Buffer.from(bytesOf(output.contentType)).toString("base64"), ...revised }
      }
      if (output.url !== undefined) return { url: output.url, ...revised }
      const name = output.name ?? `out-img${job}-${index}.${extensionOf(output.contentType)}`
      files.set(name, output.contentType)
      return { url: `${base}/fake-files/${encodeURIComponent(name)}`, ...revised }
    })
    const gptImage = model.startsWith("gpt-image")
    const inputTokens = Math.ceil(prompt.length / 4)
    const outputTokens = 1056 * n
    sendJson(response, 200, {
      created: unixSeconds(Date.now()),
      data,
      ...(gptImage
        ? {
          background: typeof input["background"] === "string" ? input["background"] : "opaque",
          output_format: typeof outputFormat === "string" ? outputFormat : "png",
          quality: typeof input["quality"] === "string" ? input["quality"] : "medium",
          size: typeof input["size"] === "string" ? input["size"] : "1024x1024",
          usage: {
            total_tokens: inputTokens + outputTokens,
            input_tokens: inputTokens,
            output_tokens: outputTokens,
            input_tokens_details: { text_tokens: inputTokens, image_tokens: 0 }
          }
        }
        : {})
    })
    return true
  }

  /** Checks a video request and makes the video, answering when `answer`; true when a video was made. */
  const handleVideoCreate = async (
    request: IncomingMessage,
    response: ServerResponse,
    answer = true
  ): Promise<boolean | void> => {
    const parsed = await parseBody(request, await readBytes(request))
    if (parsed === undefined) return sendError(response, 400, invalid("We could not parse the body of your request."))
    const error = videoInputError(parsed.input, true)
    if (error !== undefined) return sendError(response, 400, error)
    const referenceBytes = parsed.fileBytes > 0 ? parsed.fileBytes : dataUrlBytes(parsed.input["input_reference"])
    const video = createVideo(parsed.input, referenceBytes, null)
    if (answer) sendJson(response, 200, videoObject(video, video.createdAt), pollHeaders())
    return true
  }

  const handleRemix = async (request: IncomingMessage, response: ServerResponse, source: OpenAiVideo) => {
    const parsed = await parseBody(request, await readBytes(request))
    if (parsed === undefined) return sendError(response, 400, invalid("We could not parse the body of your request."))
    const error = videoInputError(parsed.input, false)
    if (error !== undefined) return sendError(response, 400, error)
    if (videoObject(source, Date.now()).status !== "completed") {
      return sendError(response, 400, invalid("Only completed videos can be remixed.", "video_id", "invalid_value"))
    }
    const { input } = source
    const video = createVideo(
      {
        model: source.model,
        ...(input["seconds"] === undefined ? {} : { seconds: input["seconds"] }),
        ...(input["size"] === undefined ? {} : { size: input["size"] }),
        prompt: parsed.input["prompt"]
      },
      0,
      source.id
    )
    sendJson(response, 200, videoObject(video, video.createdAt), pollHeaders())
  }

  const handleContent = (response: ServerResponse, video: OpenAiVideo, variant: string) => {
    if (!["video", "thumbnail", "spritesheet"].includes(variant)) {
      const expected = "Supported values are 'video', 'thumbnail' and 'spritesheet'."
      return sendError(response, 400, invalidValue("variant", variant, expected))
    }
    const object = videoObject(video, Date.now())
    if (object.status === "failed") {
      return sendError(response, 400, invalid("Video generation failed; it has no content.", null, "video_failed"))
    }
    if (object.status !== "completed") {
      return sendError(
        response,
        404,
        invalid("Video is not ready yet, use GET /v1/videos/{video_id} to check status.", null, "video_not_ready")
      )
    }
    const own = video.plan.outputs[0]?.url
    if (variant === "video" && own !== undefined) {
      response.writeHead(302, { location: own, "content-length": 0 })
      return response.end()
    }
    const bytes = variant === "video" ? mp4Bytes : pngBytes
    response.writeHead(200, {
      "content-type": variant === "video" ? "video/mp4" : "image/png",
      "content-length": bytes.length
    })
    response.end(bytes)
  }

  const handleList = (response: ServerResponse, query: URLSearchParams) => {
    const limitParam = query.get("limit")
    const limit = limitParam === null ? 20 : Number(limitParam)
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return sendError(response, 400, invalidValue("limit", limitParam, "Expected an integer from 1 to 100."))
    }
    const ascending = query.get("order") === "asc"
    const live = order.filter((id) => videos.get(id)?.deleted === false)
    if (!ascending) live.reverse()
    const after = query.get("after")
    const start = after === null ? 0 : live.indexOf(after) + 1
    const page = live.slice(start, start + limit)
    const now = Date.now()
    sendJson(response, 200, {
      object: "list",
      data: page.map((id) => videoObject(videos.get(id)!, now)),
      first_id: page[0] ?? null,
      last_id: page[page.length - 1] ?? null,
      has_more: start + limit < live.length
    })
  }

  const handleFile = (response: ServerResponse, name: string) => {
    const contentType = files.get(name)
    if (contentType === undefined) return sendError(response, 404, invalid(`No file named '${name}'.`))
    const bytes = bytesOf(contentType)
    response.writeHead(200, { "content-type": contentType, "content-length": bytes.length })
    response.end(bytes)
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const method = request.method ?? "GET"
    const target = new URL(request.url ?? "/", "http://fake.invalid")
    const path = target.pathname.replace(/\/+$/, "")
    const read = method === "GET" || method === "HEAD"
    const videoMatch = /^\/v1\/videos\/([^/]+)(?:\/(content|remix))?$/.exec(path)
    const file = /^\/fake-files\/([^/]+)$/.exec(path)

    // counted before auth and outages, so retries against a failing fake show up
    if (path === "/v1/images/generations" && method === "POST") counts.images++
    else if ((path === "/v1/videos" || videoMatch?.[2] === "remix") && method === "POST") counts.videoCreate++
    else if (videoMatch !== null && videoMatch[2] === undefined && read) counts.videoGet++
    else if (videoMatch !== null && videoMatch[2] === "content" && read) counts.videoContent++
    else if (videoMatch !== null && videoMatch[2] === undefined && method === "DELETE") counts.videoDelete++
    else if (file !== null && read) counts.files++

    if (fake.down) {
      return sendError(response, 503, {
        message: "The engine is currently overloaded, please try again later.",
        type: "server_error",
        param: null,
        code: "service_unavailable"
      })
    }
    if (file !== null && read) {
      return handleFile(response, decodeURIComponent(file[1]!))
    }
    if (request.headers.authorization !== `Bearer ${key}`) {
      const message = request.headers.authorization === undefined
        ? "You didn't provide an API key. Provide it in an Authorization header using Bearer auth."
        : "Incorrect API key provided."
      return sendError(response, 401, invalid(message, null, "invalid_api_key"))
    }
    if (path === "/v1/images/generations" && method === "POST") {
      return faultedSubmit(fake.submitFaults, response, (answer) => handleImages(request, response, answer))
    }
    if (path === "/v1/videos" && method === "POST") {
      return faultedSubmit(fake.submitFaults, response, (answer) => handleVideoCreate(request, response, answer))
    }
    if (path === "/v1/videos" && read) return handleList(response, target.searchParams)
    if (videoMatch !== null) {
      const id = decodeURIComponent(videoMatch[1]!)
      const video = videos.get(id)
      const sub = videoMatch[2]
      const routed = (sub === undefined && (read || method === "DELETE")) || (sub === "content" && read) ||
        (sub === "remix" && method === "POST")
      if (routed) {
        if (video === undefined || video.deleted) {
          return sendError(response, 404, invalid(`Video with id '${id}' not found.`, null, "video_not_found"))
        }
        if (sub === "content") return handleContent(response, video, target.searchParams.get("variant") ?? "video")
        if (sub === "remix") return handleRemix(request, response, video)
        if (method === "DELETE") {
          video.deleted = true
          return sendJson(response, 200, { id, object: "video.deleted", deleted: true })
        }
        return sendJson(response, 200, videoObject(video, Date.now()), pollHeaders())
      }
    }
    sendError(response, 404, invalid(`Invalid URL (${method} ${target.pathname})`))
  }

  const server = createServer((request, response) => {
    log.push({ method: request.method ?? "GET", url: request.url ?? "/", at: Date.now(), headers: request.headers })
    if (log.length >= logLimit * 1.1) log = log.slice(-logLimit)
    response.setHeader("x-request-id", `req_${randomBytes(16).toString("hex")}`)
    handle(request, response).catch((cause: unknown) => {
      if (response.headersSent || response.destroyed) return response.destroy()
      sendError(response, 500, {
        message: `The fake failed: ${cause instanceof Error ? cause.message : String(cause)}`,
        type: "server_error",
        param: null,
        code: "server_error"
      })
    })
  })

  base = await listen(server, options.port)
  const fake: OpenAiFake = {
    url: base,
    key,
    videos,
    images,
    get requests() {
      return log.length > logLimit ? log.slice(-logLimit) : log
    },
    counts: () => ({ ...counts }),
    submitFaults: [],
    jobCount: (text) =>
      countJobs(images, text, (image) => image.input) + countJobs(videos.values(), text, (video) => video.input),
    down: false,
    close: () => close(server)
  }
  return fake
}
