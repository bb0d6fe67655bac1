/**
 * The rate limits of the HTTP layer (security.md "Rate limits"):
 *
 * - requests per minute per key (its own limit, else `MEDIAGATE_RATE_LIMIT_RPM`) and per account
 *   (`MEDIAGATE_RATE_LIMIT_ACCOUNT_RPM`), checked after authentication on every `/api/v1` route;
 * - tasks in flight (`pending`, `queued`, `running`) per key and per account, checked before a task is created
 *   (generation, retry);
 * - webhook `test` and `replay` calls per minute and account;
 * - failed admin-token attempts per minute and client address (an unknown address has a bucket of its own; IPv6
 *   addresses count per /64).
 *
 * Request counts live in fixed one-minute windows of `RateLimit.RateWindows` (the contract's port), which the
 * limiter requires: a composition chooses the store, `RateLimit.layerMemory` (this process's memory, one node) or
 * `<prefix>rate_windows` on PostgreSQL, shared by every node. A counter that reached its limit is remembered here
 * until its window ends, so refused requests cost no round trip. A store that
 * fails lets requests through (logged): the limits never turn an outage into refusals.
 *
 * Every refusal is `429 RATE_LIMITED` with `Retry-After` (seconds) and the `RateLimit-Policy` / `RateLimit` fields
 * of draft-ietf-httpapi-ratelimit-headers (`"key";q=600;w=60`, `"key";r=0;t=12`); answers that passed a limit
 * carry the same two fields. A limit of 0 is off and costs nothing.
 *
 * @since 0.1.0
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Errors, RateLimit, type Security, Services, Tracing } from "@mediagate/contract"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import ipaddr from "ipaddr.js"
import { ServerConfig } from "./ServerConfig.js"

/**
 * The length of a request window.
 *
 * @since 0.1.0
 * @category constants
 */
export const windowMs = 60_000

/**
 * The `Retry-After` of a refusal for tasks in flight (no window ends: a task must finish first).
 *
 * @since 0.1.0
 * @category constants
 */
export const inFlightRetryAfterSeconds = 10

/**
 * One limit as the headers announce it.
 *
 * @since 0.1.0
 * @category models
 */
export interface PolicyState {
  /** The policy's name: `key`, `account`, `key-tasks`, `account-tasks`, `webhook-actions`, `admin-auth`. */
  readonly name: string
  /** The quota: requests per window, or tasks at once. */
  readonly quota: number
  /** What is left of it after this request. */
  readonly remaining: number
  /** Seconds until the window ends; absent for a concurrency quota. */
  readonly reset?: number | undefined
}

/**
 * `RateLimit-Policy`: `"key";q=600;w=60`, or `"key-tasks";q=10;qu="concurrent-requests"` for a concurrency quota.
 *
 * @since 0.1.0
 * @category utils
 */
export const policyField = (states: ReadonlyArray<PolicyState>): string =>
  states.map((state) =>
    state.reset === undefined
      ? `"${state.name}";q=${state.quota};qu="concurrent-requests"`
      : `"${state.name}";q=${state.quota};w=${windowMs / 1000}`
  ).join(", ")

/**
 * `RateLimit`: `"key";r=12;t=30`, or `"key-tasks";r=3` for a concurrency quota.
 *
 * @since 0.1.0
 * @category utils
 */
export const stateField = (states: ReadonlyArray<PolicyState>): string =>
  states.map((state) =>
    state.reset === undefined
      ? `"${state.name}";r=${state.remaining}`
      : `"${state.name}";r=${state.remaining};t=${state.reset}`
  ).join(", ")

const appendField = (response: HttpServerResponse.HttpServerResponse, name: string, value: string) => {
  const existing = response.headers[name]
  return HttpServerResponse.setHeader(
    response,
    name,
    existing === undefined || existing === "" ? value : `${existing}, ${value}`
  )
}

/** Adds the fields of `states` (and `Retry-After`, when given) to the answer of the current request. */
const announce = (states: ReadonlyArray<PolicyState>, retryAfter?: number): Effect.Effect<void> =>
  HttpApp.appendPreResponseHandler((_request, response) => {
    const withFields = appendField(
      appendField(response, "ratelimit-policy", policyField(states)),
      "ratelimit",
      stateField(states)
    )
    return Effect.succeed(
      retryAfter === undefined
        ? withFields
        : HttpServerResponse.setHeader(withFields, "retry-after", String(retryAfter))
    )
  })

/** A refusal: the error, with its fields on the answer. */
const refuse = (message: string, states: ReadonlyArray<PolicyState>, retryAfter: number) =>
  Effect.zipRight(announce(states, retryAfter), Effect.fail(new Errors.RateLimited({ message })))

/**
 * The bucket of a client address: the address, an IPv6 address's /64, or `unknown`.
 *
 * @since 0.1.0
 * @category utils
 */
export const addressBucket = (address: string | undefined): string => {
  if (address === undefined || address === "") return "unknown"
  const bare = address.replace(/%.*$/, "")
  if (!ipaddr.isValid(bare)) return `other:${bare}`
  const parsed = ipaddr.process(bare)
  if (parsed.kind() === "ipv4") return parsed.toString()
  return `${parsed.toNormalizedString().split(":").slice(0, 4).join(":")}::/64`
}

/**
 * The limiter of the HTTP layer (see the module's comment).
 *
 * @since 0.1.0
 * @category services
 */
export class RateLimiter extends Context.Tag("@mediagate/server/RateLimiter")<RateLimiter, {
  /** Counts an authenticated request against its key's and account's limits (the principal, when it passes). */
  readonly request: (principal: Security.Principal) => Effect.Effect<Security.Principal, Errors.RateLimited>
  /** Refuses a new task while the key or the account has as many active tasks as it may. */
  readonly tasks: (principal: Security.Principal) => Effect.Effect<void, Errors.RateLimited | Errors.ServiceUnavailable>
  /** Counts a webhook `test` or `replay` call against the account's limit. */
  readonly webhookAction: (principal: Security.Principal) => Effect.Effect<void, Errors.RateLimited>
  /** Refuses any admin-token attempt from an address that failed too often in the current window. */
  readonly adminGate: (address: string | undefined) => Effect.Effect<void, Errors.RateLimited>
  /** Counts a failed admin-token attempt; fails when it is one too many (the caller answers 401 otherwise). */
  readonly adminFailure: (address: string | undefined) => Effect.Effect<void, Errors.RateLimited>
  /**
   * Takes a slot for an event stream of the key (this node's count): refused while the key or the node has as many
   * open as it may. The slot is given back by `release` (once; later calls do nothing), and by itself when the
   * stream has not `start`ed within 30 s (an answer never written).
   */
  readonly eventStream: (principal: Security.Principal) => Effect.Effect<EventStreamSlot, Errors.RateLimited>
}>() {}

/**
 * An open event stream's place in the limits (see {@link RateLimiter}).
 *
 * @since 0.1.0
 * @category models
 */
export interface EventStreamSlot {
  /** The stream is being written: the slot is kept until {@link release}. */
  readonly start: () => void
  readonly release: () => void
}

/**
 * The `Retry-After` of a refusal for open event streams (a stream must end first).
 *
 * @since 0.1.0
 * @category constants
 */
export const eventStreamRetryAfterSeconds = 5

/** How long a slot whose stream never started is kept (ms). */
const unstartedSlotMs = 30_000

/** A counter to check: its scope in the store, its limit, and how the fields and message name it. */
interface Check {
  readonly scope: string
  readonly limit: number
  readonly name: string
  readonly noun: string
}

/**
 * Builds the limiter on `ServerConfig`, the `TaskService` and the `RateWindows` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<
  RateLimiter["Type"],
  never,
  ServerConfig | Services.TaskService | RateLimit.RateWindows
> = Effect.gen(function*() {
  const settings = (yield* ServerConfig).rateLimits
  const windows = yield* RateLimit.RateWindows
  const taskService = yield* Services.TaskService

  /** Counters that reached their limit, until the end of their window (no round trip while they stay full). */
  const full = new Map<string, number>()
  const markFull = (scope: string, until: number, now: number) => {
    if (full.size >= 10_000) { for (const [name, end] of full) if (end <= now) full.delete(name) }
    full.set(scope, until)
  }
  const fullUntil = (scope: string, now: number): number | undefined => {
    const until = full.get(scope)
    if (until === undefined) return undefined
    if (until > now) return until
    full.delete(scope)
    return undefined
  }

  let lastWarning = -Infinity
  const storeFailed = (error: RateLimit.RateWindowsUnavailable, now: number) =>
    Effect.suspend(() => {
      if (now - lastWarning < 10_000) return Effect.void
      lastWarning = now
      return Effect.logWarning("rate limits: the counter store failed; requests pass unlimited meanwhile", error.cause)
    })

  const secondsUntil = (until: number, now: number) => Math.max(1, Math.ceil((until - now) / 1000))
  const message = (check: Check, retryAfter: number) =>
    `too many requests: ${check.noun} allows ${check.limit} per minute; retry in ${retryAfter} s`

  /** Counts one hit on every check's counter; refuses when one is over its limit. */
  const count = (checks: ReadonlyArray<Check>): Effect.Effect<void, Errors.RateLimited> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const windowStart = now - (now % windowMs)
      const windowEnd = windowStart + windowMs
      const reset = secondsUntil(windowEnd, now)
      for (const check of checks) {
        const until = fullUntil(check.scope, now)
        if (until !== undefined) {
          const retryAfter = secondsUntil(until, now)
          return refuse(message(check, retryAfter), [{
            name: check.name,
            quota: check.limit,
            remaining: 0,
            reset: retryAfter
          }], retryAfter)
        }
      }
      return windows.hit(checks.map((check) => ({ scope: check.scope, windowStart }))).pipe(
        Effect.matchEffect({
          onFailure: (error) => storeFailed(error, now),
          onSuccess: (counts) => {
            const states: Array<PolicyState> = []
            let over: Check | undefined
            for (let i = 0; i < checks.length; i++) {
              const check = checks[i]!
              const n = counts[i] ?? 0
              if (n >= check.limit) markFull(check.scope, windowEnd, now)
              if (n > check.limit && over === undefined) over = check
              states.push({ name: check.name, quota: check.limit, remaining: Math.max(0, check.limit - n), reset })
            }
            return over === undefined ? announce(states) : refuse(message(over, reset), states, reset)
          }
        })
      )
    })

  const request: RateLimiter["Type"]["request"] = (principal) => {
    const keyLimit = principal.rateLimit?.requestsPerMinute ?? settings.keyRequestsPerMinute
    const accountLimit = settings.accountRequestsPerMinute
    if (keyLimit <= 0 && accountLimit <= 0) return Effect.succeed(principal)
    const checks: Array<Check> = []
    if (keyLimit > 0) checks.push({ scope: `key:${principal.keyId}`, limit: keyLimit, name: "key", noun: "this key" })
    if (accountLimit > 0) {
      checks.push({
        scope: `account:${principal.accountId}`,
        limit: accountLimit,
        name: "account",
        noun: "this account"
      })
    }
    return Effect.as(count(checks), principal)
  }

  const tasks: RateLimiter["Type"]["tasks"] = (principal) => {
    const keyLimit = principal.rateLimit?.maxInFlightTasks ?? settings.keyMaxInFlightTasks
    const accountLimit = settings.accountMaxInFlightTasks
    if (keyLimit <= 0 && accountLimit <= 0) return Effect.void
    return Effect.flatMap(taskService.inFlight(principal), (active) => {
      const states: Array<PolicyState> = []
      let refusal: string | undefined
      if (keyLimit > 0) {
        states.push({ name: "key-tasks", quota: keyLimit, remaining: Math.max(0, keyLimit - active.key - 1) })
        if (active.key >= keyLimit) refusal = `too many tasks in flight: this key allows ${keyLimit} at once`
      }
      if (accountLimit > 0) {
        states.push({
          name: "account-tasks",
          quota: accountLimit,
          remaining: Math.max(0, accountLimit - active.account - 1)
        })
        if (refusal === undefined && active.account >= accountLimit) {
          refusal = `too many tasks in flight: this account allows ${accountLimit} at once`
        }
      }
      return refusal === undefined
        ? announce(states)
        : refuse(
          `${refusal}; retry when one has finished (in ${inFlightRetryAfterSeconds} s)`,
          states.map((state) => ({ ...state, remaining: 0 })),
          inFlightRetryAfterSeconds
        )
    }).pipe(Tracing.span("RateLimiter.tasks"))
  }

  const webhookAction: RateLimiter["Type"]["webhookAction"] = (principal) =>
    settings.webhookActionsPerMinute <= 0 ? Effect.void : count([{
      scope: `webhook:${principal.accountId}`,
      limit: settings.webhookActionsPerMinute,
      name: "webhook-actions",
      noun: "webhook test and replay of this account"
    }])

  const adminLimit = settings.adminFailuresPerMinute
  const adminCheck = (address: string | undefined): Check => ({
    scope: `admin:${addressBucket(address)}`,
    limit: adminLimit,
    name: "admin-auth",
    noun: "admin authentication from this address"
  })
  const adminRefusal = (check: Check, until: number, now: number) => {
    const retryAfter = secondsUntil(until, now)
    return refuse(
      `too many failed admin-token attempts from this address; retry in ${retryAfter} s`,
      [{ name: check.name, quota: check.limit, remaining: 0, reset: retryAfter }],
      retryAfter
    )
  }

  const adminGate: RateLimiter["Type"]["adminGate"] = (address) => {
    if (adminLimit <= 0) return Effect.void
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const check = adminCheck(address)
      const until = fullUntil(check.scope, now)
      if (until !== undefined) return adminRefusal(check, until, now)
      // another node may have counted this address's failures: ask the shared store (the admin API is not a hot path)
      if (!windows.shared) return Effect.void
      const windowStart = now - (now % windowMs)
      return windows.peek({ scope: check.scope, windowStart }).pipe(
        Effect.matchEffect({
          onFailure: (error) => storeFailed(error, now),
          onSuccess: (n) => {
            if (n < check.limit) return Effect.void
            markFull(check.scope, windowStart + windowMs, now)
            return adminRefusal(check, windowStart + windowMs, now)
          }
        })
      )
    })
  }

  const adminFailure: RateLimiter["Type"]["adminFailure"] = (address) =>
    adminLimit <= 0 ? Effect.void : count([adminCheck(address)])

  // open event streams: this node's counts (a stream holds a connection of this node)
  const streamsByKey = new Map<string, number>()
  let streamsOfNode = 0
  const eventStream: RateLimiter["Type"]["eventStream"] = (principal) =>
    Effect.suspend(() => {
      const ofKey = streamsByKey.get(principal.keyId) ?? 0
      const keyLimit = settings.keyMaxEventStreams
      const nodeLimit = settings.nodeMaxEventStreams
      const states: Array<PolicyState> = []
      if (keyLimit > 0) states.push({ name: "key-streams", quota: keyLimit, remaining: keyLimit - ofKey })
      if (nodeLimit > 0) states.push({ name: "node-streams", quota: nodeLimit, remaining: nodeLimit - streamsOfNode })
      const over = states.find((state) => state.remaining <= 0)
      if (over !== undefined) {
        const whose = over.name === "key-streams" ? "this key" : "this server"
        return refuse(
          `too many open event streams of ${whose} (${over.quota}); close one or poll GET /tasks/{id} instead`,
          states.map((state) => ({ ...state, remaining: Math.max(0, state.remaining) })),
          eventStreamRetryAfterSeconds
        )
      }
      streamsByKey.set(principal.keyId, ofKey + 1)
      streamsOfNode += 1
      let held = true
      const release = () => {
        if (!held) return
        held = false
        clearTimeout(unstarted)
        streamsOfNode -= 1
        const left = (streamsByKey.get(principal.keyId) ?? 1) - 1
        if (left <= 0) streamsByKey.delete(principal.keyId)
        else streamsByKey.set(principal.keyId, left)
      }
      const unstarted = setTimeout(release, unstartedSlotMs)
      unstarted.unref()
      return Effect.as(
        states.length === 0
          ? Effect.void
          : announce(states.map((state) => ({ ...state, remaining: state.remaining - 1 }))),
        { start: () => clearTimeout(unstarted), release }
      )
    })

  return { request, tasks, webhookAction, adminGate, adminFailure, eventStream }
})

/**
 * The limiter as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  RateLimiter,
  never,
  ServerConfig | Services.TaskService | RateLimit.RateWindows
> = Layer.effect(RateLimiter, make)
