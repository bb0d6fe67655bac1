/**
 * What the upstream protocol fakes (`fal.ts`, `replicate.ts`, `comfyui.ts`, `openai.ts`) share: a job's plan, the
 * files a fake serves as its outputs, the request log, and small HTTP helpers. The fakes are plain `node:http`
 * servers (no Effect) so that the official SDKs, the end-to-end tests and the benchmarks can all drive them.
 *
 * A job's behaviour comes from its input: the fake's `plan` option when given, else directives in the input's
 * `prompt` (`[fake:fail]`, `[fake:fail=message]`, `[fake:delay=<ms>]`, `[fake:video]`, `[fake:output=<url>]`),
 * else the default: 50 ms, success with one PNG served by the fake itself.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** A file a job produces. */
export interface FakeOutput {
  /** Absolute URL the upstream answers for the file. Default: the fake's own `/fake-files/<name>`. */
  readonly url?: string
  /** Name under `/fake-files/` (default `out-<job>-<n>.png` or `.mp4`). */
  readonly name?: string
  readonly contentType: string
}

/** How one job behaves. */
export interface FakePlan {
  /** How long the job runs (queued for the first 20%, then in progress). */
  readonly durationMs: number
  /** The job fails with this message. */
  readonly fail?: string
  /** The files it produces (default: one PNG). */
  readonly outputs: ReadonlyArray<FakeOutput>
  /** What the upstream reports the job ran, in seconds (default: its duration). */
  readonly seconds?: number
}

/** Plans a job from its input (the JSON the client sent as the model's input) and the model/app it was sent to. */
export type Planner = (input: Record<string, unknown>, model: string) => Partial<FakePlan>

/** One request the fake received. */
export interface LoggedRequest {
  readonly method: string
  /** Path and query. */
  readonly url: string
  readonly at: number
  readonly headers: IncomingMessage["headers"]
}

/** A small valid 8×8 PNG. */
export const pngBytes: Uint8Array = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAYAAADED76LAAAAIklEQVR4AYXBAQEAMAiAME7/YMa6CWR7szhIkCBBggQJEj46pQMwlMVpkAAAAABJRU5ErkJggg==",
  "base64"
)

/** A few bytes that start like an MP4 (`ftyp` box); enough for a content-type check, not a playable video. */
export const mp4Bytes: Uint8Array = Buffer.concat([
  Buffer.from([0, 0, 0, 24]),
  Buffer.from("ftypisom", "latin1"),
  Buffer.from([0, 0, 2, 0]),
  Buffer.from("isomiso2", "latin1"),
  Buffer.alloc(64, 0)
])

/** The plan of a job: `planner` first, then the prompt's directives, then the defaults. */
export const planOf = (input: Record<string, unknown>, model: string, planner?: Planner): FakePlan => {
  const prompt = typeof input["prompt"] === "string" ? input["prompt"] : ""
  const fromPrompt: { -readonly [K in keyof FakePlan]?: FakePlan[K] } = {}
  const delay = /\[fake:delay=(\d+)\]/.exec(prompt)
  if (delay !== null) fromPrompt.durationMs = Number(delay[1])
  const fail = /\[fake:fail(?:=([^\]]*))?\]/.exec(prompt)
  if (fail !== null) fromPrompt.fail = fail[1] ?? "the model failed"
  const output = /\[fake:output=([^\]]+)\]/.exec(prompt)
  const video = prompt.includes("[fake:video]")
  if (output !== null) fromPrompt.outputs = [{ url: output[1]!, contentType: video ? "video/mp4" : "image/png" }]
  else if (video) fromPrompt.outputs = [{ contentType: "video/mp4" }]
  return { durationMs: 50, outputs: [{ contentType: "image/png" }], ...fromPrompt, ...planner?.(input, model) }
}

/** Reads a request's body as text. */
export const readBody = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

/** Answers JSON. */
export const sendJson = (
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {}
) => {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers
  })
  response.end(text)
}

/** Listens on 127.0.0.1 (port 0: a free one) and answers the base URL. */
export const listen = (server: Server, port = 0): Promise<string> =>
  new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  })

/** Closes a server, ending its open connections. */
export const close = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })

/** Sends a JSON callback (a webhook) and ignores the answer; failures are retried a few times. */
export const postCallback = async (url: string, body: string, headers: Record<string, string>, attempts = 3) => {
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
        signal: AbortSignal.timeout(10_000)
      })
      await response.arrayBuffer()
      if (response.status < 500) return response.status
    } catch {
      // retried
    }
    await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)))
  }
  return undefined
}

/**
 * A fault a fake injects into one submit (the request that creates a job), for the tests of submits without
 * duplicates: `reset-before` (the connection is cut before a job is made), `reset-after` (the job is made, then the
 * connection is cut: the answer is lost), `stall-after` (the job is made and no answer comes: the client times out),
 * `500-after` (the job is made, then the fake answers 500).
 */
export type SubmitFault = "reset-before" | "reset-after" | "stall-after" | "500-after"

/** Every {@link SubmitFault}. */
export const submitFaults: ReadonlyArray<SubmitFault> = ["reset-before", "reset-after", "stall-after", "500-after"]

/**
 * Runs a submit under the next fault of `faults` (taken from its front; none: the submit as it is). `run(answer)`
 * checks the request and makes the job, answering it only when `answer` (a refused request is always answered); it
 * tells whether it made a job. A refused request leaves the fault for the next submit.
 */
export const faultedSubmit = async (
  faults: Array<SubmitFault>,
  response: ServerResponse,
  run: (answer: boolean) => Promise<boolean | void> | boolean | void
): Promise<void> => {
  const fault = faults.shift()
  if (fault === undefined) {
    await run(true)
    return
  }
  if (fault === "reset-before") {
    response.socket?.destroy()
    return
  }
  if (!(await run(false))) {
    faults.unshift(fault)
    return
  }
  if (fault === "reset-after") response.socket?.destroy()
  else if (fault === "500-after") sendJson(response, 500, { detail: "Internal Server Error" })
  // stall-after: no answer at all; the connection ends when the client gives up or the fake closes
}

/** How many of `jobs` mention `text` (a task id: in the callback URL, the input or the job's metadata) in `view`. */
export const countJobs = <J>(jobs: Iterable<J>, text: string, view: (job: J) => unknown): number => {
  let count = 0
  for (const job of jobs) if (JSON.stringify(view(job)).includes(text)) count++
  return count
}
