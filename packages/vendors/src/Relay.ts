/**
 * The relay upstream: forwards tasks to another service that speaks this same `/api/v1` contract (another
 * Mediagate, or a hosted service with the same API), maps its task states, and copies its result files into our
 * own file store, so clients only ever see our signed URLs.
 *
 * The task id (with the channel's id, when the task is routed over channels: `<task>.<channel>`) is sent as the
 * `Idempotency-Key`: a submit repeated after a crash finds the same remote task, and a task that fails over to
 * another channel and later comes back to this one finds the job it already has here.
 *
 * Failures carry their kind for the channel router: timeouts, connection failures, 5xx and 429 are `unavailable`
 * (retried); 401, 402 and 403 are `auth` (the channel's credentials or its account at the other service); other
 * refusals are `refused` (the request itself: not retried, no failover).
 *
 * @since 0.1.0
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Catalog, Client, Errors, type Task } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type JobState, submitKey, Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { hostOf } from "./internal/upstreamHttp.js"
import type { ResultSource } from "./Mapping.js"
import * as ResultCopy from "./ResultCopy.js"
import { ResultCopier } from "./ResultCopy.js"

/**
 * Where the relay forwards to.
 *
 * @since 0.1.0
 * @category models
 */
export interface RelayOptions {
  /** Base URL of the other service, e.g. `https://gateway.example.com`. */
  readonly baseUrl: string
  /** Its API key. */
  readonly apiKey: Redacted.Redacted<string>
  /** Longest time one call may take. Default 30 s. */
  readonly timeout?: Duration.DurationInput
  /** Largest result file copied. Default 2 GiB. */
  readonly maxFileBytes?: number
  /** Hosts besides the base URL's whose result URLs may be private addresses. */
  readonly resultHosts?: ReadonlyArray<string>
  /** Allow private addresses for every result URL (development and tests). */
  readonly allowPrivate?: boolean
}

const retryable = (message: string) => new UpstreamError({ message, retryable: true, kind: "unavailable" })
const permanent = (message: string, code?: string) =>
  new UpstreamError({ message, retryable: false, kind: "refused", ...(code === undefined ? {} : { code }) })

/** How a failure of the other service's API maps onto the upstream error model. */
const fromApiError = (error: unknown): UpstreamError => {
  if (Errors.isApiError(error)) {
    // refusals of the request itself will not change on a retry; the others (503, 429, 500) may
    if (error.status >= 500 || error.status === 429) return retryable(`relay: ${error.code}: ${error.message}`)
    // our key or our account at the other service: the channel's problem, not the request's
    if (error.status === 401 || error.status === 402 || error.status === 403) {
      return new UpstreamError({ message: `relay: ${error.code}: ${error.message}`, retryable: false, kind: "auth" })
    }
    return permanent(`relay: ${error.code}: ${error.message}`)
  }
  return retryable(`relay: ${error instanceof Error ? error.message : String(error)}${becauseOf(error)}`)
}

/** The innermost cause of a failed call that is an `Error` (`fetch failed` says nothing; its cause says why). */
const innermost = (error: unknown): { readonly message: string; readonly code: string | undefined } | undefined => {
  let found: { readonly message: string; readonly code: string | undefined } | undefined
  let current: unknown = error
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null && "cause" in current; depth++) {
    current = current.cause
    if (current instanceof Error) {
      const code: unknown = Reflect.get(current, "code")
      found = { message: current.message, code: typeof code === "string" ? code : undefined }
    }
  }
  return found
}

/**
 * Why a call failed below HTTP, as `: <reason>` (`: other side closed (UND_ERR_SOCKET)`, `: connect ECONNREFUSED
 * 127.0.0.1:9`); empty when no cause says.
 */
const becauseOf = (error: unknown): string => {
  const cause = innermost(error)
  if (cause === undefined) return ""
  return cause.code === undefined || cause.message.includes(cause.code)
    ? `: ${cause.message}`
    : `: ${cause.message} (${cause.code})`
}

/**
 * Whether a call failed because the connection was closed before any answer came: what a kept-alive connection gives
 * when the other side closed it as the request went out (its idle timeout; a busy machine's timers are late to
 * notice). A refused connection or a timeout is not this.
 */
const closedUnanswered = (error: unknown): boolean => {
  const code = innermost(error)?.code
  return code === "UND_ERR_SOCKET" || code === "ECONNRESET"
}

/**
 * A failed submit as the router sees it: one that may have made a task at the other service (a timeout, a 5xx but
 * 503, a connection lost after the request went out) is `uncertain`; a refused connection, a 503 or a 429 made none.
 */
const submitFailure = (error: UpstreamError, cause: unknown): UpstreamError =>
  !error.retryable || (Errors.isApiError(cause) && (cause.status === 429 || cause.status === 503)) ||
    /ECONNREFUSED|ENOTFOUND/.test(String(cause))
    ? error
    : new UpstreamError({ message: error.message, retryable: true, kind: "unavailable", uncertain: true })

/**
 * Builds the relay upstream.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: RelayOptions) =>
  Effect.gen(function*() {
    const client = yield* Client.make({ baseUrl: options.baseUrl, apiKey: options.apiKey }).pipe(
      Effect.provide(FetchHttpClient.layer)
    )
    const timeout = options.timeout ?? "30 seconds"
    const maxFileBytes = options.maxFileBytes ?? 2 * 1024 ** 3
    const call = <A, E>(effect: Effect.Effect<A, E>, submit = false) =>
      effect.pipe(
        // a kept-alive connection that the other side closed as the request went out: once more on a new one (every
        // call of the relay may be repeated: reads, cancels, and submits under their Idempotency-Key)
        Effect.retry({ times: 1, while: closedUnanswered }),
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () => retryable("relay: the other service did not answer in time")
        }),
        Effect.mapError((error) => {
          const mapped = error instanceof UpstreamError ? error : fromApiError(error)
          return submit ? submitFailure(mapped, error) : mapped
        })
      )

    const copier = yield* ResultCopier
    const policy: ResultCopy.CopyPolicy = {
      trustedHosts: [hostOf(options.baseUrl), ...(options.resultHosts ?? [])],
      allowPrivate: options.allowPrivate ?? false,
      timeoutMs: Duration.toMillis(Duration.decode(timeout)),
      maxBytes: maxFileBytes
    }

    /** The other service's result files as copy sources. */
    const sourcesOf = (items: ReadonlyArray<Task.ResultItem>): ReadonlyArray<ResultSource> =>
      items.map((item) => ({
        url: item.url,
        format: item.format,
        ...(item.kind === undefined ? {} : { kind: item.kind }),
        ...(item.duration === undefined ? {} : { duration: item.duration }),
        ...(item.width === undefined ? {} : { width: item.width }),
        ...(item.height === undefined ? {} : { height: item.height })
      }))

    const toState = (task: TaskRecord, remote: Task.Task): Effect.Effect<JobState, UpstreamError> => {
      switch (remote.status) {
        case "pending":
        case "queued":
          return Effect.succeed({ _tag: "Queued" })
        case "running":
          return Effect.succeed({ _tag: "Running", progress: remote.progress })
        case "succeeded": {
          const ran = remote.started_at === null || remote.completed_at === null
            ? NaN
            : (Date.parse(remote.completed_at) - Date.parse(remote.started_at)) / 1000
          return Effect.map(
            copier.collect(task, remote.id, sourcesOf(remote.result ?? []), policy, {
              ...(Number.isFinite(ran) && ran >= 0 ? { seconds: ran } : {}),
              // what the other service charged us is the job's cost
              costMicros: Math.round(remote.cost * 1_000_000)
            }),
            ResultCopy.jobState
          )
        }
        case "failed":
          return Effect.succeed({
            _tag: "Failed",
            code: remote.error?.code === "INVALID_INPUT_MEDIA" ? "INVALID_INPUT_MEDIA" : "PROVIDER_ERROR",
            message: remote.error?.message ?? "the upstream task failed"
          })
        case "expired":
        case "cancelled":
          return Effect.succeed({
            _tag: "Failed",
            code: "PROVIDER_ERROR",
            message: `the upstream task was ${remote.status}`
          })
      }
    }

    return Upstream.of({
      notifiesChanges: false,
      // a finished copy makes its task polled again
      changes: copier.changes,
      submit: (task) =>
        call(
          Effect.suspend(() => {
            // the only cast left: the derived client's generation group has one method per endpoint name, and the
            // relay picks it by the task's endpoint at run time (every method has this shape)
            const group = client.generation as unknown as Record<
              string,
              (
                request: { payload: unknown; headers: { "idempotency-key"?: string } }
              ) => Effect.Effect<Task.CreationAck, unknown>
            >
            const endpoint = group[Catalog.endpoints[task.endpoint].name]
            if (endpoint === undefined) return Effect.fail(permanent(`relay: no endpoint for ${task.endpoint}`))
            return endpoint({
              payload: {
                model: task.model,
                input: task.input,
                ...(Object.keys(task.metadata).length === 0 ? {} : { metadata: task.metadata })
              },
              headers: { "idempotency-key": submitKey(task) }
            })
          }),
          true
        ).pipe(Effect.map((ack) => ({ jobId: ack.id }))),
      // the other service honours the idempotency key: submitting again finds the task an uncertain submit made
      find: () => Effect.succeed({ _tag: "NotFound" } as const),
      poll: (task, jobId) =>
        call(client.tasks.get({ path: { id: jobId } })).pipe(Effect.flatMap((remote) => toState(task, remote))),
      cancel: (_task, jobId) => Effect.ignore(call(client.tasks.cancel({ path: { id: jobId } })))
    })
  })

/**
 * The relay upstream as a transport of its own.
 *
 * @since 0.1.0
 * @category services
 */
export class RelayUpstream extends Context.Tag("@mediagate/vendors/RelayUpstream")<RelayUpstream, Upstream["Type"]>() {}

/**
 * The relay with the given target.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RelayOptions): Layer.Layer<RelayUpstream, never, ResultCopier> =>
  Layer.effect(RelayUpstream, make(options))

/**
 * The relay's target from Effect `Config`: `MEDIAGATE_RELAY_URL`, `MEDIAGATE_RELAY_API_KEY`.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<RelayOptions> = Config.all({
  baseUrl: Config.string("MEDIAGATE_RELAY_URL"),
  apiKey: Config.redacted("MEDIAGATE_RELAY_API_KEY")
})

/**
 * The relay with its target from Effect `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<RelayUpstream, ConfigError.ConfigError, ResultCopier> = Layer
  .unwrapEffect(Effect.map(config, layer))
