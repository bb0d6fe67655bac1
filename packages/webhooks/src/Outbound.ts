/**
 * Outbound webhook requests under the address rules of decisions.md §6.
 *
 * {@link post} sends through `@mediagate/outbound`'s {@link PinnedHttp.request}: `http`/`https` only, every resolved
 * address checked (unless `allowPrivate`), the connection pinned to the checked address (Host header and TLS SNI
 * keep the name). Redirects are not followed (a 3xx is a failed attempt). The whole request has one deadline; at
 * most {@link WebhookStore.excerptBytes} bytes of the answer are read, and an answer whose status arrived in time
 * counts by its status.
 *
 * {@link post} never fails: every outcome (status code, refusal, timeout, connection error) is a {@link PostResult}.
 * {@link WebhookSender} is the port the dispatcher and the test delivery send through (tests replace it).
 *
 * @since 0.1.0
 */
import { PinnedHttp } from "@mediagate/outbound"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { excerptBytes } from "./WebhookStore.js"

/**
 * Resolves a host name to all its addresses (tests).
 *
 * @since 0.1.0
 * @category models
 */
export type Resolver = PinnedHttp.Resolver

/**
 * Why a request got no answer.
 *
 * @since 0.1.0
 * @category models
 */
export type FailureReason = "address" | "timeout" | "refused" | "network"

/**
 * The outcome of one request.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostResult {
  /** The HTTP status of the answer, or null when there was none. */
  readonly statusCode: number | null
  /** Why there was no (complete) answer, or null. */
  readonly reason: FailureReason | null
  /** A human-readable description of the failure, or null (a non-2xx answer is described too). */
  readonly error: string | null
  readonly durationMs: number
  /** The start of the answer's body (at most 1 KB, UTF-8), or null. */
  readonly responseExcerpt: string | null
}

/**
 * Options of {@link post}; `allowPrivate` is `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`, `lookup` a resolver (tests).
 *
 * @since 0.1.0
 * @category models
 */
export interface PostOptions extends SenderOptions {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** Deadline of the whole request (DNS, connect, answer), in ms. */
  readonly timeoutMs: number
}

const clip = (text: string, bytes: number): string => {
  const buffer = Buffer.from(text, "utf8")
  return buffer.length <= bytes ? text : buffer.subarray(0, bytes).toString("utf8").replace(/\uFFFD$/, "")
}

const reasons: Record<PinnedHttp.Reason, FailureReason> = {
  url: "address",
  address: "address",
  dns: "network",
  refused: "refused",
  network: "network",
  timeout: "timeout",
  status: "network",
  redirect: "network",
  too_large: "network"
}

/**
 * POSTs a body to a webhook target under the address rules; never fails.
 *
 * @since 0.1.0
 * @category utils
 */
export const post = Effect.fn("Outbound.post")(function*(url: string, options: PostOptions) {
  const [elapsed, outcome] = yield* PinnedHttp.request(url, {
    ...options,
    method: "POST",
    timeout: Duration.millis(Math.max(1, options.timeoutMs)),
    maxBytes: excerptBytes,
    overflow: "truncate"
  }).pipe(Effect.either, Effect.timed)
  const durationMs = Math.max(0, Math.round(Duration.toMillis(elapsed)))
  const result: PostResult = Either.match(outcome, {
    onLeft: (e) => ({
      statusCode: null,
      reason: reasons[e.reason],
      error: e.reason === "url" ? "target is not an absolute http(s) URL" : e.message,
      durationMs,
      responseExcerpt: null
    }),
    onRight: ({ body, status }) => ({
      statusCode: status,
      reason: null,
      error: status >= 200 && status <= 299 ? null : `HTTP ${status}`,
      durationMs,
      responseExcerpt: body.length === 0 ? null : clip(Buffer.from(body).toString("utf8"), excerptBytes)
    })
  })
  return result
})

/**
 * One request a sender makes.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutboundRequest extends Omit<PostOptions, keyof SenderOptions> {
  readonly url: string
}

/**
 * The port every webhook request goes through (tests replace it).
 *
 * @since 0.1.0
 * @category services
 */
export class WebhookSender extends Context.Tag("@mediagate/webhooks/WebhookSender")<WebhookSender, {
  readonly send: (request: OutboundRequest) => Effect.Effect<PostResult>
}>() {}

/**
 * Options of the real sender: `allowPrivate` (`MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`, default false), `lookup` (tests).
 *
 * @since 0.1.0
 * @category models
 */
export type SenderOptions = Pick<PinnedHttp.TargetOptions, "allowPrivate" | "lookup">

/**
 * The real sender: {@link post}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeSender = (options: SenderOptions = {}): WebhookSender["Type"] => ({
  send: (request) => post(request.url, { ...request, ...options })
})

/**
 * The real sender as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSender = (options: SenderOptions = {}): Layer.Layer<WebhookSender> =>
  Layer.succeed(WebhookSender, makeSender(options))
