/**
 * The one outbound HTTP client for URLs that clients give us (media inputs, webhook targets), under the address
 * rules of the contract's `Address` module.
 *
 * - {@link checkTarget}: unless `allowPrivate`, a literal host that is not public is refused; the name is resolved
 *   (`lookup(host, { all: true })`, within `resolveTimeout` when given) and **every** address must be global
 *   ({@link Address.isPublicAddress}, the one address policy), else the target is refused.
 * - {@link request}: checks the target, then connects to the address it checked: a custom `lookup` hands the socket
 *   that address, so a second DNS answer (rebinding) cannot change where the request goes; the Host header and TLS
 *   SNI keep the name. Redirects are followed only when `maxRedirects` is given, each hop checked again. The body is
 *   read up to `maxBytes` (refused or cut beyond), and the whole exchange (DNS, redirects, body) has one deadline, in
 *   real time: a timer of the exchange itself, not a racing fiber (a request costs no fiber of its own). Interruption
 *   destroys the connection.
 * - `keepAlive`: connections pooled per host and checked address, closed after 30 s idle or a second before the
 *   server's announced `Keep-Alive: timeout`; a repeatable request (`repeatable`, by default the idempotent methods)
 *   whose reused connection closed before any answer goes once more on a new connection.
 * - Spans (`PinnedHttp.request`, `PinnedHttp.stream`) only while the tracer is enabled (`Tracing.span`).
 *
 * Every failure is an {@link OutboundError} whose `reason` says what went wrong; callers word it for their users.
 *
 * @since 0.1.0
 */
import { Address, Tracing } from "@mediagate/contract"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { lookup as dnsLookup } from "node:dns/promises"
import * as http from "node:http"
import * as https from "node:https"
import { closedUnanswered, pinnedLookup, poolFor, repeatableRequest } from "./internal/pools.js"

/**
 * Why a request failed: `url` (not an absolute http(s) URL), `address` (a refused target, a redirect to a non-http
 * URL), `dns` (the name did not resolve), `refused` (connection refused), `network` (the connection failed or
 * closed early), `timeout`, `status` (a status `acceptStatus` refuses), `redirect` (too many, or no location),
 * `too_large` (a body over `maxBytes` under `overflow: "fail"`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Reason = Schema.Literal(
  "url",
  "address",
  "dns",
  "refused",
  "network",
  "timeout",
  "status",
  "redirect",
  "too_large"
)
/**
 * Why a request failed: one of the values of the {@link Reason} Schema.
 *
 * @see {@link Reason}
 * @since 0.1.0
 * @category schemas
 */
export type Reason = typeof Reason.Type

/**
 * An outbound request failed. `message` is safe to show to the client who gave the URL; it names the host where the
 * refusal is about the host (`address`, `dns`). `host` is absent only for `reason: "url"`.
 *
 * @since 0.1.0
 * @category errors
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: Reason,
  message: Schema.String,
  host: Schema.optional(Schema.String),
  /** The refused HTTP status (`reason: "status"`). */
  status: Schema.optional(Schema.Number)
}) {}

/**
 * One resolved address of a host name.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/**
 * Resolves a host name to all its addresses (default: `node:dns/promises` `lookup(host, { all: true })`).
 *
 * @since 0.1.0
 * @category models
 */
export type Resolver = (host: string) => Promise<ReadonlyArray<ResolvedAddress>>

/**
 * The address rules of a request.
 *
 * @since 0.1.0
 * @category models
 */
export interface TargetOptions {
  /** Allow loopback and private targets (development and tests). Default false. */
  readonly allowPrivate?: boolean | undefined
  /**
   * Host names (lower case) whose addresses are not checked, as under `allowPrivate`: hosts the operator trusts
   * (an upstream channel's own base URL). A redirect from such a host to another is checked again.
   */
  readonly trustedHosts?: ReadonlyArray<string> | undefined
  /** DNS resolver (tests). */
  readonly lookup?: Resolver | undefined
  /**
   * Whether a resolved address may be connected to (tests). Default: any address under `allowPrivate`, otherwise
   * public unicast addresses only ({@link Address.isPublicAddress}). When given, it replaces the literal-host check.
   */
  readonly isAllowedAddress?: ((address: string) => boolean) | undefined
  /**
   * Deadline of the name resolution alone: past it the target fails with `reason: "timeout"` (registration checks,
   * which have no other deadline). Default: none here; {@link request} bounds the whole exchange anyway.
   */
  readonly resolveTimeout?: Duration.DurationInput | undefined
}

/**
 * Options of {@link request}.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestOptions extends TargetOptions {
  /** Default `GET`. */
  readonly method?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The request body; `content-length` is set from it. */
  readonly body?: string | Uint8Array | undefined
  /** Deadline of the whole exchange: DNS, connections, redirects and body. */
  readonly timeout: Duration.DurationInput
  /** Largest body read, in bytes. */
  readonly maxBytes: number
  /**
   * What a larger body gives: `fail` (default) a `too_large` error (a larger `content-length` is refused before
   * reading); `truncate` the first `maxBytes` bytes. Under `truncate` an answer whose status arrived counts: a
   * body cut by the deadline or a broken connection is answered as read so far.
   */
  readonly overflow?: "fail" | "truncate" | undefined
  /** Follow at most this many redirects (each hop checked again). Default: redirects are answered like any status. */
  readonly maxRedirects?: number | undefined
  /** Statuses answered; any other fails with `reason: "status"` without reading the body. Default: every status. */
  readonly acceptStatus?: ((status: number) => boolean) | undefined
  /**
   * Keep the connection to the checked address open for the next request to the same host and address (an
   * upstream's own API, called again and again); default: a connection per request.
   */
  readonly keepAlive?: boolean | undefined
  /**
   * Whether the request may be sent again, once, on a new connection when the kept-alive connection it went out on
   * closed before any answer (the server closed it as idle while it was being reused). Default: for the idempotent
   * methods (GET, HEAD, OPTIONS, PUT, DELETE); a POST only when the caller knows sending it twice is harmless.
   */
  readonly repeatable?: boolean | undefined
}

/**
 * An answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Response {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  /** At most `maxBytes` bytes. */
  readonly body: Uint8Array
  /** Whether the body was cut (`overflow: "truncate"`, a deadline or a broken connection after the status). */
  readonly truncated: boolean
  /** The URL answered, after redirects. */
  readonly url: string
}

const defaultResolver: Resolver = (host) => dnsLookup(host, { all: true })

const refuse = (host: string, reason: Reason, message: string) => new OutboundError({ reason, host, message })

const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024) * 10) / 10} MB` : `${bytes} bytes`

/**
 * Resolves and checks the host of a URL under the address rules; the address to connect to.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkTarget = (url: URL, options: TargetOptions): Effect.Effect<ResolvedAddress, OutboundError> =>
  checkTargetBy(url, options, undefined).pipe(Tracing.span("PinnedHttp.checkTarget"))

/** The deadline of a whole exchange (epoch ms, real time) and the failure past it. */
interface Deadline {
  readonly at: number
  readonly timedOut: () => OutboundError
}

/** {@link checkTarget} within an exchange's deadline (the name resolution is cut by it too). */
const checkTargetBy = (url: URL, options: TargetOptions, deadline: Deadline | undefined) =>
  Effect.suspend((): Effect.Effect<ResolvedAddress, OutboundError> => {
    const host = Address.urlHost(url)
    const trusted = options.trustedHosts?.includes(host.toLowerCase()) ?? false
    const allowPrivate = options.allowPrivate === true || trusted
    const allowed = trusted
      ? () => true
      : options.isAllowedAddress ?? (allowPrivate ? () => true : Address.isPublicAddress)
    if (!allowPrivate && options.isAllowedAddress === undefined) {
      const problem = Address.literalHostProblem(url)
      if (problem !== undefined) return Effect.fail(refuse(host, "address", problem))
    }
    const checked = (addresses: ReadonlyArray<ResolvedAddress>): Effect.Effect<ResolvedAddress, OutboundError> => {
      const first = addresses[0]
      if (first === undefined) return Effect.fail(refuse(host, "dns", `host ${host} could not be resolved`))
      const refused = addresses.find(({ address }) => !allowed(address))
      return refused === undefined
        ? Effect.succeed(first)
        : Effect.fail(
          refuse(host, "address", `host ${host} resolves to ${refused.address}, which is not a public address`)
        )
    }
    const literal = Address.parseAddress(host)
    return literal !== undefined
      ? checked([{ address: host, family: literal.kind() === "ipv6" ? 6 : 4 }])
      : Effect.flatMap(resolveName(host, options, deadline), checked)
  })

/**
 * Resolves a name, within `resolveTimeout` and the exchange's deadline (whichever comes first says why), by a timer
 * of its own.
 */
const resolveName = (host: string, options: TargetOptions, deadline: Deadline | undefined) =>
  Effect.async<ReadonlyArray<ResolvedAddress>, OutboundError>((resume) => {
    const now = Date.now()
    const ownMs = options.resolveTimeout === undefined
      ? Infinity
      : Duration.toMillis(Duration.decode(options.resolveTimeout))
    const leftMs = deadline === undefined ? Infinity : deadline.at - now
    const timeout = () => {
      if (leftMs < ownMs && deadline !== undefined) return deadline.timedOut()
      const seconds = Math.round(ownMs / 100) / 10
      return refuse(host, "timeout", `host ${host} did not resolve within ${seconds} s`)
    }
    let done = false
    const finish = (result: Effect.Effect<ReadonlyArray<ResolvedAddress>, OutboundError>) => {
      if (done) return
      done = true
      if (timer !== undefined) clearTimeout(timer)
      resume(result)
    }
    const limit = Math.min(ownMs, leftMs)
    const timer = Number.isFinite(limit)
      ? setTimeout(() => finish(Effect.fail(timeout())), Math.max(0, limit))
      : undefined
    ;(options.lookup ?? defaultResolver)(host).then(
      (addresses) => finish(Effect.succeed(addresses)),
      () => finish(Effect.fail(refuse(host, "dns", `host ${host} could not be resolved`)))
    )
    return Effect.sync(() => {
      done = true
      if (timer !== undefined) clearTimeout(timer)
    })
  })

type Hop =
  | { readonly _tag: "Answer"; readonly response: Response }
  | { readonly _tag: "Redirect"; readonly location: string }

const redirectStatuses = new Set([301, 302, 303, 307, 308])

/**
 * One exchange with an already-checked address, ended by the deadline: a failure, or under `overflow: "truncate"`
 * the answer read so far once its status arrived.
 */
const exchange = (url: URL, target: ResolvedAddress, options: RequestOptions, deadline: Deadline) =>
  Effect.async<Hop, OutboundError>((resume) => {
    const host = Address.urlHost(url)
    const truncate = options.overflow === "truncate"
    let settled = false
    let answered: (() => Response) | undefined
    /** Ends the exchange; `keep`: a whole answer on a kept-alive connection, which goes back to its pool. */
    const settle = (result: Effect.Effect<Hop, OutboundError>, keep = false) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (!keep) request.destroy()
      resume(result)
    }
    const timer = setTimeout(() => {
      if (truncate && answered !== undefined) return answer(true)
      settle(Effect.fail(deadline.timedOut()))
    }, Math.max(0, deadline.at - Date.now()))
    const failWith = (reason: Reason, message: string, status?: number) => {
      if (!settled) settle(Effect.fail(new OutboundError({ reason, host, message, status })))
    }
    const answer = (truncated: boolean) => {
      if (answered !== undefined) {
        settle(Effect.succeed({ _tag: "Answer", response: { ...answered(), truncated } }), !truncated && keepAlive)
      }
    }
    const broken = () =>
      truncate ? answer(true) : failWith("network", "the connection closed before the body was complete")
    const body = options.body
    const length = body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }
    const headers = { ...options.headers, ...length }
    const send = url.protocol === "https:" ? https.request : http.request
    const method = options.method ?? "GET"
    const keepAlive = options.keepAlive === true
    const agent = keepAlive ? poolFor(url, target) : false
    // a reused connection the server closed as idle: the request never reached it, so it goes again on a new one
    const again = keepAlive && repeatableRequest(options)
      ? Effect.suspend(() => exchange(url, target, { ...options, keepAlive: false }, deadline))
      : undefined
    const request = send(url, { method, agent, lookup: pinnedLookup(target), headers }, (response) => {
      const status = response.statusCode ?? 0
      if (options.maxRedirects !== undefined && redirectStatuses.has(status)) {
        const location = response.headers.location
        if (location === undefined || location === "") {
          return failWith("redirect", `redirect (HTTP ${status}) without a location`, status)
        }
        return settle(Effect.succeed({ _tag: "Redirect", location }))
      }
      if (options.acceptStatus !== undefined && !options.acceptStatus(status)) {
        return failWith("status", `the server answered HTTP ${status}`, status)
      }
      const tooLarge = () => failWith("too_large", `the body is larger than ${formatBytes(options.maxBytes)}`)
      const declared = Number(response.headers["content-length"])
      if (!truncate && Number.isFinite(declared) && declared > options.maxBytes) return tooLarge()
      const chunks: Array<Buffer> = []
      let total = 0
      answered = () => {
        const bytes = Buffer.concat(chunks, total)
        const body = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        return { status, headers: response.headers, body, truncated: true, url: url.href }
      }
      response.on("data", (chunk: Buffer) => {
        if (settled) return
        const room = options.maxBytes - total
        if (chunk.length > room && !truncate) return tooLarge()
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk
        chunks.push(part)
        total += part.length
        // enough read: the rest of the body is not needed
        if (truncate && total >= options.maxBytes) answer(true)
      })
      response.on("end", () => answer(false))
      response.on("error", broken)
      response.on("close", broken)
    })
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (answered !== undefined) return broken()
      if (again !== undefined && request.reusedSocket && closedUnanswered(error)) return settle(again)
      if (error.code === "ECONNREFUSED") return failWith("refused", "connection refused")
      if (closedUnanswered(error)) {
        return failWith("network", "connection closed without an answer")
      }
      failWith("network", `connection failed${error.code === undefined ? "" : ` (${error.code})`}`)
    })
    request.end(body)
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
      request.destroy()
    })
  })

/** Follows a request's redirects (each hop's target checked again), answering the first hop that is not one. */
const follow = <A>(
  first: URL,
  options: TargetOptions & { readonly maxRedirects?: number | undefined },
  deadline: Deadline,
  hop: (
    url: URL,
    target: ResolvedAddress
  ) => Effect.Effect<A | { readonly _tag: "Redirect"; readonly location: string }, OutboundError>
) =>
  Effect.gen(function*() {
    let current = first
    for (let redirects = 0;; redirects++) {
      const target = yield* checkTargetBy(current, options, deadline)
      const answer = yield* hop(current, target)
      if (!isRedirect(answer)) return answer
      const host = Address.urlHost(current)
      if (redirects >= (options.maxRedirects ?? 0)) {
        return yield* refuse(host, "redirect", `more than ${options.maxRedirects ?? 0} redirects`)
      }
      const next = Address.parseHttpUrl(
        URL.canParse(answer.location, current) ? new URL(answer.location, current).href : ""
      )
      if (next === undefined) return yield* refuse(host, "address", "redirect to a URL that is not http(s)")
      current = next
    }
  })

const isRedirect = (value: unknown): value is { readonly _tag: "Redirect"; readonly location: string } =>
  typeof value === "object" && value !== null && (value as { _tag?: unknown })._tag === "Redirect"

const parsed = (url: string) => {
  const first = Address.parseHttpUrl(url)
  return first === undefined
    ? Effect.fail(new OutboundError({ reason: "url", message: "the URL is not an absolute http(s) URL" }))
    : Effect.succeed(first)
}

/** The deadline of an exchange with the URL's host starting now. */
const deadlineOf = (first: URL, timeout: Duration.DurationInput): Deadline => {
  const ms = Duration.toMillis(Duration.decode(timeout))
  const seconds = Math.round(ms / 100) / 10
  return {
    at: Date.now() + ms,
    timedOut: () => refuse(Address.urlHost(first), "timeout", `no answer within ${seconds} s`)
  }
}

/**
 * Sends a request to a URL under the address rules, pinned to the checked address, within `timeout`.
 *
 * @since 0.1.0
 * @category utils
 */
export const request = (url: string, options: RequestOptions): Effect.Effect<Response, OutboundError> =>
  Effect.flatMap(parsed(url), (first) => {
    const deadline = deadlineOf(first, options.timeout)
    return Effect.map(
      follow(first, options, deadline, (current, target) => exchange(current, target, options, deadline)),
      (hop) => (hop as Extract<Hop, { _tag: "Answer" }>).response
    )
  }).pipe(Tracing.span("PinnedHttp.request"))

/**
 * Options of {@link stream}.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamOptions extends TargetOptions {
  readonly method?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Deadline until the answer's status and headers arrived (DNS, connections, redirects). */
  readonly timeout: Duration.DurationInput
  /** A larger `content-length` is refused before the body is read (`too_large`); the reader counts the rest. */
  readonly maxBytes: number
  readonly maxRedirects?: number | undefined
  /** Statuses answered; any other fails with `reason: "status"` without reading the body. Default: 2xx. */
  readonly acceptStatus?: ((status: number) => boolean) | undefined
  /**
   * Keep the connection to the checked address for the next request to the same host and address once the body
   * was read whole (a body not read to its end closes its connection). Default: a connection per request.
   */
  readonly keepAlive?: boolean | undefined
  /** As {@link RequestOptions.repeatable}. */
  readonly repeatable?: boolean | undefined
}

/**
 * An answer whose body is still to be read.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamedResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  /** The body: read it, or let the scope close (which destroys the connection). */
  readonly body: http.IncomingMessage
  /** The URL answered, after redirects. */
  readonly url: string
}

/**
 * {@link request} that answers once the status and headers arrived, with the body as a Node stream for the caller
 * to read (a large file is never held in memory). The same address rules, pinning and redirect checks; `headers`
 * are sent to the first URL's host only; the connection is destroyed when the scope closes.
 *
 * @since 0.1.0
 * @category utils
 */
export const stream = (
  url: string,
  options: StreamOptions
): Effect.Effect<StreamedResponse, OutboundError, Scope.Scope> =>
  Effect.flatMap(parsed(url), (first) => {
    const deadline = deadlineOf(first, options.timeout)
    return Effect.acquireRelease(
      // the caller's headers (an upstream's credentials) go to the first host only, never to a redirect's other host
      follow(first, options, deadline, (current, target) =>
        open(
          current,
          target,
          Address.urlHost(current) === Address.urlHost(first) ? options : { ...options, headers: undefined },
          deadline
        )),
      (response) => Effect.sync(() => response.body.destroy())
    )
  }).pipe(Tracing.span("PinnedHttp.stream"))

/** One exchange with an already-checked address, answered at its headers (see {@link stream}). */
const open = (url: URL, target: ResolvedAddress, options: StreamOptions, deadline: Deadline) =>
  Effect.async<StreamedResponse | { readonly _tag: "Redirect"; readonly location: string }, OutboundError>(
    (resume) => {
      const host = Address.urlHost(url)
      let settled = false
      const fail = (reason: Reason, message: string, status?: number) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        request.destroy()
        resume(Effect.fail(new OutboundError({ reason, host, message, status })))
      }
      const timer = setTimeout(() => {
        if (settled) return
        settled = true
        request.destroy()
        resume(Effect.fail(deadline.timedOut()))
      }, Math.max(0, deadline.at - Date.now()))
      const keepAlive = options.keepAlive === true
      const again = keepAlive && repeatableRequest(options)
        ? Effect.suspend(() => open(url, target, { ...options, keepAlive: false }, deadline))
        : undefined
      const request = (url.protocol === "https:" ? https.request : http.request)(url, {
        method: options.method ?? "GET",
        agent: keepAlive ? poolFor(url, target) : false,
        lookup: pinnedLookup(target),
        headers: { ...options.headers }
      }, (response) => {
        if (settled) return response.destroy()
        const status = response.statusCode ?? 0
        if (options.maxRedirects !== undefined && redirectStatuses.has(status)) {
          const location = response.headers.location
          if (location === undefined || location === "") {
            return fail("redirect", `redirect (HTTP ${status}) without a location`, status)
          }
          settled = true
          clearTimeout(timer)
          request.destroy()
          return resume(Effect.succeed({ _tag: "Redirect", location }))
        }
        if (!(options.acceptStatus ?? ((code: number) => code >= 200 && code < 300))(status)) {
          return fail("status", `the server answered HTTP ${status}`, status)
        }
        const declared = Number(response.headers["content-length"])
        if (Number.isFinite(declared) && declared > options.maxBytes) {
          return fail("too_large", `the body is larger than ${formatBytes(options.maxBytes)}`)
        }
        settled = true
        clearTimeout(timer)
        resume(Effect.succeed({ status, headers: response.headers, body: response, url: url.href }))
      })
      request.on("error", (error: NodeJS.ErrnoException) => {
        if (!settled && again !== undefined && request.reusedSocket && closedUnanswered(error)) {
          settled = true
          clearTimeout(timer)
          request.destroy()
          return resume(again)
        }
        if (error.code === "ECONNREFUSED") return fail("refused", "connection refused")
        fail("network", `connection failed${error.code === undefined ? "" : ` (${error.code})`}`)
      })
      request.end()
      return Effect.sync(() => {
        clearTimeout(timer)
        if (!settled) {
          settled = true
          request.destroy()
        }
      })
    }
  )
