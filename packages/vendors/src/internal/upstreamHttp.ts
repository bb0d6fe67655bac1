/**
 * What the HTTP transports (fal, replicate, comfyui, openai) share: calls to the channel's own API, their failures in
 * the upstream error model, and what a transport is built from.
 *
 * Calls go through the outbound client (`PinnedHttp.request`) with the channel's host trusted (the operator chose
 * it, a private address included), within the channel's timeout, answers read up to 16 MiB. Failures say their kind
 * for the router: timeouts, refused connections, 5xx and 429 are `unavailable` (retried, failover); 401, 402 and 403
 * are `auth` (the channel's key); other 4xx are `refused` (the request itself: no retry, no failover), worded with
 * the upstream's own message where its answer has one.
 */
import { Address } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as PinnedHttp from "@mediagate/outbound/PinnedHttp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { ChannelConfig } from "../ChannelStore.js"
import * as Mapping from "../Mapping.js"
import type { CopyPolicy, ResultCopier } from "../ResultCopy.js"

/** What a transport of a channel is built from. */
export interface TransportContext {
  readonly channel: ChannelConfig
  /** The channel's base URL, without a trailing `/`. */
  readonly baseUrl: string
  /** The channel's model mapping, compiled. */
  readonly mapping: (model: string) => Mapping.Compiled
  readonly copier: ResultCopier["Type"]
  /** The rules of the channel's result copies. */
  readonly policy: CopyPolicy
  /** The URL the upstream calls back for a task (undefined: callbacks are off for the channel). */
  readonly callbackUrl: (task: TaskRecord) => Effect.Effect<string | undefined>
}

/** A transport: the upstream port, and how it checks a callback (absent: the upstream makes none). */
export interface Transport {
  readonly upstream: Upstream["Type"]
  /**
   * Whether a callback request is genuinely the upstream's (signatures it documents), given its raw body and
   * headers; the callback URL's own signature is checked before this.
   */
  readonly verifyCallback?: (
    body: string,
    headers: Readonly<Record<string, string | undefined>>
  ) => Effect.Effect<boolean>
  /**
   * The job a genuine callback names (its raw body), as its id from the task's model; undefined when it names none.
   * The router records it on a task whose job is not known yet (`TaskLifecycle.noteJob`): a submit whose answer was
   * lost, or whose worker died, made that job, and an upstream without a lookup by our id tells it this way.
   */
  readonly jobOfCallback?: (body: string) => ((model: string) => string) | undefined
}

/** A string field of a JSON object body; undefined when the body is not JSON or the field not a string. */
export const jsonField = (body: string, name: string): string | undefined => {
  try {
    return stringField(JSON.parse(body), name)
  } catch {
    return undefined
  }
}

/** An answer of the upstream's API. */
export interface ApiAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly json: unknown
  readonly text: string
}

export const unavailable = (message: string, retryAfterMs?: number) =>
  new UpstreamError({
    message,
    retryable: true,
    kind: "unavailable",
    ...(retryAfterMs === undefined ? {} : { retryAfterMs })
  })

export const refused = (message: string, code?: string) =>
  new UpstreamError({ message, retryable: false, kind: "refused", ...(code === undefined ? {} : { code }) })

export const authFailed = (message: string) => new UpstreamError({ message, retryable: false, kind: "auth" })

/** The upstream's own words in an error answer (`detail`, `error.message`, `message`, `title`), shortened. */
export const messageIn = (json: unknown, fallback: string): string => {
  const pick = (value: unknown): string | undefined => {
    if (typeof value === "string" && value.trim() !== "") return value
    if (Array.isArray(value)) {
      const parts = value.map((item) =>
        typeof item === "object" && item !== null && "msg" in item ? String((item as { msg: unknown }).msg) : pick(item)
      ).filter((part): part is string => part !== undefined)
      return parts.length > 0 ? parts.join("; ") : undefined
    }
    if (typeof value === "object" && value !== null) {
      const record = value as Record<string, unknown>
      return pick(record["detail"]) ?? pick(record["message"]) ?? pick(record["error"]) ?? pick(record["title"])
    }
    return undefined
  }
  const found = pick(json) ?? fallback
  return found.length > 500 ? `${found.slice(0, 500)}…` : found
}

/** How a non-2xx answer maps onto the upstream error model (`who`: the transport's name in messages). */
export const failureOf = (who: string, answer: ApiAnswer): UpstreamError => {
  const said = messageIn(answer.json, answer.text.slice(0, 200) || `HTTP ${answer.status}`)
  if (answer.status === 401 || answer.status === 402 || answer.status === 403) {
    return authFailed(`${who}: HTTP ${answer.status}: ${said}`)
  }
  if (answer.status === 429 || answer.status >= 500 || answer.status === 408) {
    const after = Number(headerOf(answer.headers, "retry-after"))
    return unavailable(
      `${who}: HTTP ${answer.status}: ${said}`,
      Number.isFinite(after) && after > 0 ? after * 1000 : undefined
    )
  }
  return refused(`${who}: ${said}`)
}

/** One header's value. */
export const headerOf = (headers: ApiAnswer["headers"], name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** The host of a URL as the outbound guard compares it (the contract's `Address.urlHost`): the trusted hosts. */
export const hostOf = (url: string): string => Address.urlHost(new URL(url))

/** Options of {@link call}. */
export interface CallOptions {
  readonly method?: string
  /** Path below the base URL (starting with `/`), or an absolute URL on the channel's host. */
  readonly path: string
  readonly json?: unknown
  readonly body?: Uint8Array | string
  readonly headers?: Readonly<Record<string, string>>
  /** Statuses that are answers, not failures (default: 2xx). */
  readonly accept?: (status: number) => boolean
  /**
   * The request creates a job (a submit): a failure after the request may have reached the upstream (a timeout, a
   * connection lost, a 5xx but 503, or 408) is `uncertain`, as the job may exist (the worker looks for it before
   * submitting again).
   */
  readonly creates?: boolean
  /**
   * A POST that may be sent twice (a cancel, a delete): sent again on a new connection when a kept-alive one closed
   * before any answer, as GET, PUT and DELETE always are ({@link PinnedHttp.RequestOptions.repeatable}).
   */
  readonly repeatable?: boolean
}

/** A failure of a creating call marked uncertain when the request may have made a job (see {@link CallOptions}). */
const uncertainIf = (creates: boolean | undefined, error: UpstreamError, sent: boolean): UpstreamError =>
  creates === true && sent && error.retryable
    ? new UpstreamError({
      message: error.message,
      retryable: true,
      uncertain: true,
      ...(error.kind === undefined ? {} : { kind: error.kind }),
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs })
    })
    : error

/** Calls the channel's API: the answer of an accepted status, or the failure of any other (see the module). */
export const call =
  (context: TransportContext, who: string, auth: Readonly<Record<string, string>>) =>
  (options: CallOptions): Effect.Effect<ApiAnswer, UpstreamError> =>
    Effect.gen(function*() {
      const url = options.path.startsWith("http") ? options.path : `${context.baseUrl}${options.path}`
      const body = options.json === undefined ? options.body : JSON.stringify(options.json)
      const response = yield* PinnedHttp.request(url, {
        method: options.method ?? (body === undefined ? "GET" : "POST"),
        headers: {
          accept: "application/json",
          ...(options.json === undefined ? {} : { "content-type": "application/json" }),
          ...auth,
          ...options.headers
        },
        ...(body === undefined ? {} : { body }),
        trustedHosts: [hostOf(context.baseUrl)],
        allowPrivate: context.policy.allowPrivate,
        lookup: context.policy.lookup,
        timeout: Duration.millis(context.channel.settings.timeoutMs ?? 30_000),
        maxBytes: 16 * 1024 * 1024,
        // the channel's API is called again and again: its connections are kept open
        keepAlive: true,
        ...(options.repeatable === undefined ? {} : { repeatable: options.repeatable })
      }).pipe(Effect.mapError((error) =>
        uncertainIf(
          options.creates,
          error.reason === "timeout"
            ? unavailable(`${who}: the upstream did not answer in time`)
            : error.reason === "too_large"
            ? unavailable(`${who}: the upstream's answer is larger than 16 MiB`)
            : unavailable(`${who}: ${error.message}`),
          // refused connections, names that do not resolve and refused addresses never reached the upstream
          error.reason === "timeout" || error.reason === "network" || error.reason === "too_large"
        )
      ))
      const text = Buffer.from(response.body).toString("utf8")
      let json: unknown = undefined
      try {
        json = text === "" ? undefined : JSON.parse(text)
      } catch {
        // not JSON: the text is kept
      }
      const answer: ApiAnswer = { status: response.status, headers: response.headers, json, text }
      const accepted = options.accept ?? ((status: number) => status >= 200 && status < 300)
      if (!accepted(response.status)) {
        // 503 (like 429) says the request was not taken on; other 5xx and 408 may come after the job was made
        const sent = (response.status >= 500 && response.status !== 503) || response.status === 408
        return yield* uncertainIf(options.creates, failureOf(who, answer), sent)
      }
      return answer
    })

/** A JSON object's field, when the value is an object. */
export const field = (value: unknown, name: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[name]
    : undefined

/** A JSON object's string field. */
export const stringField = (value: unknown, name: string): string | undefined => {
  const found = field(value, name)
  return typeof found === "string" ? found : undefined
}

/** A JSON object's number field. */
export const numberField = (value: unknown, name: string): number | undefined => {
  const found = field(value, name)
  return typeof found === "number" && Number.isFinite(found) ? found : undefined
}

/** A task's input as the upstream takes it: the mapping's (a JSON object for these upstreams), or the input itself. */
export const mappedInput = (who: string, compiled: Mapping.Compiled, task: TaskRecord) =>
  Effect.flatMap(
    Mapping.mapInput(compiled, { model: task.model, input: task.input, taskId: task.id, metadata: task.metadata }),
    (value) =>
      typeof value === "object" && value !== null && !Array.isArray(value)
        ? Effect.succeed(value as Record<string, unknown>)
        : Effect.fail(refused(`${who}: the input mapping of model ${task.model} must give a JSON object`))
  )

/**
 * An upstream's log lines as text: a string split at line ends (Replicate's `logs`), or each entry's `message` of an
 * array (fal's `logs`); blank lines left out; undefined when there are none.
 */
export const logLines = (value: unknown): ReadonlyArray<string> | undefined => {
  const lines = typeof value === "string"
    ? value.split(/\r?\n|\r/)
    : Array.isArray(value)
    ? value.map((entry) => stringField(entry, "message") ?? (typeof entry === "string" ? entry : ""))
    : []
  const kept = lines.map((line) => line.trimEnd()).filter((line) => line.trim() !== "")
  return kept.length === 0 ? undefined : kept
}

/** Progress while a job runs, from how long it has run against its estimate (5 to 95). */
export const elapsedProgress = (task: TaskRecord, now: number): number => {
  const started = task.startedAt ?? task.createdAt
  const share = (now - started) / Math.max(1000, task.estimatedSeconds * 1000)
  return Math.round(Math.max(5, Math.min(95, share * 100)))
}
