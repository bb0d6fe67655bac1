/**
 * Outbound webhook requests under the address rules of decisions.md §6.
 *
 * {@link post} accepts `http`/`https` only; unless `allowPrivate`, it refuses a literal host that is not public
 * ({@link Address.literalHostProblem}), resolves the name (`lookup(host, { all: true })`), refuses when **any**
 * resolved address is not a public unicast address, then connects to the address it checked: a custom `lookup`
 * hands the socket that address, so a second DNS answer (rebinding) cannot change where the request goes. The Host
 * header and TLS SNI keep the name. Redirects are not followed (a 3xx is a failed attempt). The whole request has
 * one deadline; at most {@link WebhookStore.excerptBytes} bytes of the answer are read.
 *
 * {@link post} never fails: every outcome (status code, refusal, timeout, connection error) is a {@link PostResult}.
 * {@link WebhookSender} is the port the dispatcher and the test delivery send through (tests replace it).
 *
 * @since 0.1.0
 */
import { Address } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import ipaddr from "ipaddr.js"
import { lookup as dnsLookup } from "node:dns/promises"
import * as http from "node:http"
import * as https from "node:https"
import type { LookupFunction } from "node:net"
import { excerptBytes } from "./WebhookStore.js"

/** One resolved address of a host name. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Resolves a host name to all its addresses (default: `node:dns/promises` `lookup(host, { all: true })`). */
export type Resolver = (host: string) => Promise<ReadonlyArray<ResolvedAddress>>

/** Why a request got no answer. */
export type FailureReason = "address" | "timeout" | "refused" | "network"

/** The outcome of one request. */
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

/** Options of {@link post}. */
export interface PostOptions {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** Deadline of the whole request (DNS, connect, answer), in ms. */
  readonly timeoutMs: number
  /** Allow loopback and private targets (`MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`). */
  readonly allowPrivate?: boolean | undefined
  /** DNS resolver (tests). */
  readonly lookup?: Resolver | undefined
}

const defaultResolver: Resolver = (host) => dnsLookup(host, { all: true })

const clip = (text: string, bytes: number): string => {
  const buffer = Buffer.from(text, "utf8")
  return buffer.length <= bytes ? text : buffer.subarray(0, bytes).toString("utf8").replace(/\uFFFD$/, "")
}

/** Resolves and checks a target; the address to connect to, or why not. */
export const checkTarget = (
  url: URL,
  options: Pick<PostOptions, "allowPrivate" | "lookup">
): Effect.Effect<ResolvedAddress, { readonly reason: FailureReason; readonly message: string }> => {
  const host = Address.urlHost(url)
  const allowPrivate = options.allowPrivate === true
  return Effect.gen(function*() {
    if (!allowPrivate) {
      const problem = Address.literalHostProblem(url)
      if (problem !== undefined) return yield* Effect.fail({ reason: "address" as const, message: problem })
    }
    const addresses: ReadonlyArray<ResolvedAddress> = ipaddr.isValid(host)
      ? [{ address: host, family: ipaddr.parse(host).kind() === "ipv6" ? 6 : 4 }]
      : yield* Effect.tryPromise({
        try: () => (options.lookup ?? defaultResolver)(host),
        catch: () => ({ reason: "network" as const, message: `host ${host} could not be resolved` })
      })
    if (addresses.length === 0) {
      return yield* Effect.fail({ reason: "network" as const, message: `host ${host} could not be resolved` })
    }
    if (!allowPrivate) {
      const refused = addresses.find(({ address }) => !Address.isPublicAddress(address))
      if (refused !== undefined) {
        return yield* Effect.fail({
          reason: "address" as const,
          message: `host ${host} resolves to ${refused.address}, which is not a public address`
        })
      }
    }
    return addresses[0]!
  })
}

const send = (
  url: URL,
  target: ResolvedAddress,
  options: PostOptions,
  deadline: number,
  started: number
): Effect.Effect<PostResult> =>
  Effect.async<PostResult>((resume) => {
    let settled = false
    let statusCode: number | null = null
    const chunks: Array<Buffer> = []
    let received = 0
    const excerpt = () => {
      if (chunks.length === 0) return null
      return clip(Buffer.concat(chunks).toString("utf8"), excerptBytes)
    }
    const finish = (reason: FailureReason | null, error: string | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      request.destroy()
      const success = statusCode !== null && statusCode >= 200 && statusCode <= 299
      resume(Effect.succeed({
        statusCode,
        reason,
        error: error ?? (statusCode === null || success ? null : `HTTP ${statusCode}`),
        durationMs: Math.max(0, Math.round(performance.now() - started)),
        responseExcerpt: excerpt()
      }))
    }
    const pinnedLookup: LookupFunction = (_hostname, lookupOptions, callback) => {
      if (lookupOptions.all === true) callback(null, [{ address: target.address, family: target.family }])
      else callback(null, target.address, target.family)
    }
    const request = (url.protocol === "https:" ? https.request : http.request)(url, {
      method: "POST",
      agent: false,
      lookup: pinnedLookup,
      headers: { ...options.headers, "content-length": String(Buffer.byteLength(options.body, "utf8")) }
    }, (response) => {
      statusCode = response.statusCode ?? null
      response.on("data", (chunk: Buffer) => {
        if (settled) return
        const room = excerptBytes - received
        if (room > 0) {
          const part = chunk.subarray(0, room)
          chunks.push(part)
          received += part.length
        }
        // enough read: the answer is known, the rest of the body is not needed
        if (received >= excerptBytes) finish(null, null)
      })
      response.on("end", () => finish(null, null))
      response.on("error", () => finish(null, null))
      response.on("close", () => finish(null, null))
    })
    const timer = setTimeout(() => {
      // an answer whose status arrived in time counts by its status
      if (statusCode !== null) return finish(null, null)
      finish("timeout", `no answer within ${Math.round(options.timeoutMs / 100) / 10} s`)
    }, Math.max(0, deadline - performance.now()))
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (statusCode !== null) return finish(null, null)
      if (error.code === "ECONNREFUSED") return finish("refused", "connection refused")
      if (error.code === "ECONNRESET" || error.message === "socket hang up") {
        return finish("network", "connection closed without an answer")
      }
      finish("network", `connection failed${error.code === undefined ? "" : ` (${error.code})`}`)
    })
    request.end(options.body)
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
      request.destroy()
    })
  })

/** POSTs a body to a webhook target under the address rules; never fails. */
export const post = (url: string, options: PostOptions): Effect.Effect<PostResult> =>
  Effect.suspend(() => {
    const started = performance.now()
    const deadline = started + options.timeoutMs
    const failed = (reason: FailureReason, error: string): PostResult => ({
      statusCode: null,
      reason,
      error,
      durationMs: Math.max(0, Math.round(performance.now() - started)),
      responseExcerpt: null
    })
    const parsed = Address.parseHttpUrl(url)
    if (parsed === undefined) return Effect.succeed(failed("address", "target is not an absolute http(s) URL"))
    return checkTarget(parsed, options).pipe(
      // DNS counts against the deadline too
      Effect.timeoutFail({
        duration: Math.max(1, options.timeoutMs),
        onTimeout: () => ({ reason: "timeout" as const, message: "no answer (DNS) within the time limit" })
      }),
      Effect.matchEffect({
        onFailure: (problem) => Effect.succeed(failed(problem.reason, problem.message)),
        onSuccess: (target) => send(parsed, target, options, deadline, started)
      })
    )
  })

/** One request a sender makes. */
export interface OutboundRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly timeoutMs: number
}

/** The port every webhook request goes through (tests replace it). */
export class WebhookSender extends Context.Tag("@mediagate/webhooks/WebhookSender")<WebhookSender, {
  readonly send: (request: OutboundRequest) => Effect.Effect<PostResult>
}>() {}

/** Options of the real sender. */
export interface SenderOptions {
  /** Allow loopback and private targets (`MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`). Default false. */
  readonly allowPrivate?: boolean | undefined
  /** DNS resolver (tests). */
  readonly lookup?: Resolver | undefined
}

/** The real sender: {@link post}. */
export const makeSender = (options: SenderOptions = {}): WebhookSender["Type"] => ({
  send: (request) =>
    post(request.url, {
      headers: request.headers,
      body: request.body,
      timeoutMs: request.timeoutMs,
      allowPrivate: options.allowPrivate,
      lookup: options.lookup
    })
})

/** The real sender as a layer. */
export const layerSender = (options: SenderOptions = {}): Layer.Layer<WebhookSender> =>
  Layer.succeed(WebhookSender, makeSender(options))
