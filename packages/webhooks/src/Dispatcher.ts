/**
 * Durable webhook delivery (spec "Events"; decisions.md §6).
 *
 * - **Fan-out** ({@link fanOutOnce}): reads the engine's outbox (`TaskStorage.readOutbox`) after the dispatcher's
 *   durable cursor and, in one transaction with moving that cursor ({@link WebhookStore} `fanOut`), creates one
 *   delivery per (event, subscribed enabled webhook of the event's account) and one per-job delivery when the task
 *   had a `webhookUrl` (every terminal state). A crash never loses or duplicates fan-out; concurrent dispatchers
 *   (several processes) are serialised by the cursor's compare-and-set.
 * - **Delivery** ({@link attemptDelivery}, {@link deliverDue}): due deliveries are claimed with a lease and fence
 *   (`FOR UPDATE SKIP LOCKED` on PostgreSQL), sent, and the attempt is recorded. A 2xx answer succeeds; a non-2xx
 *   answer, a timeout or a connection failure schedules the next retry from the schedule (default 1 m, 5 m, 30 m,
 *   plus up to 10% jitter); after the last retry the delivery is `failed` (4 requests by default). A `410 Gone`
 *   answer fails the delivery at once and disables a configured webhook. The event id (`X-Webhook-ID`, body `id`)
 *   is the same on every attempt; the timestamp and signatures are made fresh for each attempt.
 * - {@link run} / {@link layer} run both loops in the background; the task path never waits for them. A loop whose
 *   storage fails (the database restarted, connections killed) never stops: it logs once and tries again after a
 *   capped exponential backoff ({@link DispatcherOptions.backoff}); a claimed delivery whose attempt could not be
 *   recorded is sent again when its lease runs out (at least once).
 *
 * @since 0.1.0
 */
import { Tracing, WebhookSignature } from "@mediagate/contract"
import * as Backoff from "@mediagate/persistence/Backoff"
import * as Ids from "@mediagate/persistence/Ids"
import { TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import { hostname } from "node:os"
import { layerSender, WebhookSender } from "./Outbound.js"
import { type DeliveryRow, type Settlement, WebhookStore } from "./WebhookStore.js"

/** Default delays of the retries: 1, 5 and 30 minutes. */
export const defaultRetryScheduleMs: ReadonlyArray<number> = [60_000, 300_000, 1_800_000]
/** Default time limit of one attempt: 10 s. */
export const defaultTimeoutMs = 10_000
/** Default jitter: each retry delay is lengthened by up to this fraction. */
export const defaultJitter = 0.1

/** Dispatcher settings. */
export interface DispatcherOptions {
  /** Delays of the retries after the first attempt. Default {@link defaultRetryScheduleMs}. */
  readonly retrySchedule?: ReadonlyArray<Duration.DurationInput>
  /** Time limit of one attempt. Default 10 s. */
  readonly timeout?: Duration.DurationInput
  /** Fraction by which a retry delay may be lengthened at random (0 turns jitter off). Default 0.1. */
  readonly jitter?: number
  /** Deliveries sent at once by one process. Default 16. */
  readonly concurrency?: number
  /** Lease of a claimed delivery; longer than the timeout. Default timeout + 30 s. */
  readonly lease?: Duration.DurationInput
  /** Outbox entries fanned out per transaction. Default 100. */
  readonly batchSize?: number
  /** Longest idle wait before looking for work again. Default 1 s. */
  readonly idle?: Duration.DurationInput
  /** This dispatcher's name in leases. Default `<host>:<pid>:<ulid>`. */
  readonly owner?: string
  /** Backoff of both loops while storage fails. Default 100 ms, doubling, at most 5 s. */
  readonly backoff?: Backoff.Options
}

/** Settings with defaults applied, in ms. */
export interface Resolved {
  readonly retryScheduleMs: ReadonlyArray<number>
  readonly timeoutMs: number
  readonly jitter: number
}

/** Applies the defaults. */
export const resolve = (options: DispatcherOptions = {}): Resolved => ({
  retryScheduleMs: (options.retrySchedule ?? defaultRetryScheduleMs).map(Duration.toMillis),
  timeoutMs: Duration.toMillis(options.timeout ?? defaultTimeoutMs),
  jitter: Math.max(0, options.jitter ?? defaultJitter)
})

// -----------------------------------------------------------------------------------------------------------------
// headers
// -----------------------------------------------------------------------------------------------------------------

/** Headers of a configured-webhook delivery: the spec's, signed with `sign`, plus Standard Webhooks headers. */
export const configuredHeaders = (
  secret: string,
  eventId: string,
  timestamp: number,
  body: string
): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "mediagate-webhooks/0.1",
  "x-webhook-id": eventId,
  "x-webhook-timestamp": String(timestamp),
  "x-webhook-signature": WebhookSignature.sign(secret, timestamp, body),
  "webhook-id": eventId,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": WebhookSignature.signStandard(secret, eventId, timestamp, body)
})

/** Headers of a per-job (`webhookUrl`) delivery: no signature. */
export const perJobHeaders = (
  eventType: string,
  jobId: string,
  eventId: string,
  timestamp: number
): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": "mediagate-webhooks/0.1",
  "x-webhook-event": eventType,
  "x-job-id": jobId,
  "x-webhook-id": eventId,
  "x-webhook-timestamp": String(timestamp)
})

const decodeTaskId = Schema.decodeUnknownOption(
  Schema.parseJson(Schema.Struct({ data: Schema.Struct({ task: Schema.Struct({ id: Schema.String }) }) }))
)

const taskIdOf = (payload: string): string => Option.match(decodeTaskId(payload), { onNone: () => "", onSome: (event) => event.data.task.id })

// -----------------------------------------------------------------------------------------------------------------
// one attempt
// -----------------------------------------------------------------------------------------------------------------

/** The delay before the next retry after `requests` requests, or undefined when none is left. */
export const retryDelayMs = (
  options: Resolved,
  requests: number,
  random: () => number = Math.random
): number | undefined => {
  const base = options.retryScheduleMs[requests - 1]
  if (base === undefined) return undefined
  return Math.round(base * (1 + options.jitter * random()))
}

const isSuccess = (status: number | null) => status !== null && status >= 200 && status <= 299

/**
 * Sends one claimed delivery and records the attempt (fenced): succeeded on 2xx; on a failure the next retry, or
 * `failed` after the last; `410 Gone` fails it and disables its webhook. A delivery whose webhook was deleted or
 * disabled is failed without a request.
 */
export const attemptDelivery = (delivery: DeliveryRow, options: Resolved) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    let headers: Record<string, string>
    const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (delivery.webhookId !== null) {
      const webhook = yield* store.getWebhookById(delivery.webhookId)
      if (Option.isNone(webhook) || webhook.value.deletedAt !== null || !webhook.value.enabled) {
        const reason = Option.isNone(webhook) || webhook.value.deletedAt !== null ? "webhook deleted" : "webhook disabled"
        return yield* store.settle(delivery.id, delivery.fence, undefined, { status: "failed", reason })
      }
      headers = configuredHeaders(webhook.value.secret, delivery.eventId, timestamp, delivery.payload)
    } else {
      headers = perJobHeaders(delivery.eventType, taskIdOf(delivery.payload), delivery.eventId, timestamp)
    }
    const result = yield* sender.send({
      url: delivery.url,
      headers,
      body: delivery.payload,
      timeoutMs: options.timeoutMs
    })
    const at = yield* store.now
    const requests = delivery.attempts + 1
    let settlement: Settlement
    if (isSuccess(result.statusCode)) settlement = { status: "succeeded" }
    else if (result.statusCode === 410) settlement = { status: "failed", disableWebhook: delivery.webhookId !== null }
    else {
      const delay = retryDelayMs(options, requests)
      settlement = delay === undefined ? { status: "failed" } : { status: "pending", nextAttemptAt: at + delay }
    }
    return yield* store.settle(delivery.id, delivery.fence, {
      statusCode: result.statusCode,
      error: isSuccess(result.statusCode) ? null : result.error ?? `HTTP ${result.statusCode}`,
      durationMs: result.durationMs,
      responseExcerpt: result.responseExcerpt,
      at
    }, settlement)
  }).pipe(Tracing.span("Webhooks.attemptDelivery", { attributes: { deliveryId: delivery.id } }))

/** Claims every due delivery (up to `limit`) and sends them concurrently; answers how many were claimed. */
export const deliverDue = (options: DispatcherOptions = {}, limit = 100) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const resolved = resolve(options)
    const now = yield* store.now
    const owner = options.owner ?? "deliverDue"
    const claimed = yield* store.claimDue(owner, limit, Duration.toMillis(options.lease ?? resolved.timeoutMs + 30_000), now)
    yield* Effect.forEach(claimed, (delivery) => attemptDelivery(delivery, resolved), {
      concurrency: "unbounded",
      discard: true
    })
    return claimed.length
  })

// -----------------------------------------------------------------------------------------------------------------
// fan-out
// -----------------------------------------------------------------------------------------------------------------

/**
 * Fans out one page of the outbox after the durable cursor; answers how many outbox entries it consumed (0 when
 * there were none, or when another dispatcher moved the cursor first).
 */
export const fanOutOnce = (batchSize = 100) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const tasks = yield* TaskStorage
    const cursor = yield* store.readCursor
    const page = yield* tasks.readOutbox(cursor, batchSize)
    if (page.entries.length === 0 && page.cursor === cursor) return 0
    const now = yield* store.now
    const done = yield* store.fanOut(cursor, page.cursor, page.entries, now)
    return Option.isSome(done) ? page.entries.length : 0
  })

// -----------------------------------------------------------------------------------------------------------------
// the background loops
// -----------------------------------------------------------------------------------------------------------------

/** Runs fan-out and delivery until the scope closes. */
export const run = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    const tasks = yield* TaskStorage
    const resolved = resolve(options)
    const concurrency = Math.max(1, options.concurrency ?? 16)
    const leaseMs = Duration.toMillis(options.lease ?? resolved.timeoutMs + 30_000)
    const idleMs = Duration.toMillis(options.idle ?? "1 second")
    const batchSize = options.batchSize ?? 100
    const owner = options.owner ?? `${hostname()}:${process.pid}:${Ids.ulid()}`
    const pokes = yield* Queue.sliding<void>(1)
    const poke = Queue.offer(pokes, undefined)
    const sends = yield* FiberSet.make<void, never>()
    let running = 0
    const provide = <A, E>(effect: Effect.Effect<A, E, WebhookStore | WebhookSender | TaskStorage>) =>
      effect.pipe(
        Effect.provideService(WebhookStore, store),
        Effect.provideService(WebhookSender, sender),
        Effect.provideService(TaskStorage, tasks)
      )

    // a failure (storage unavailable) ends the round: the loop backs off (see the fibers below)
    const fanOutLoop = Effect.gen(function*() {
      const consumed = yield* provide(fanOutOnce(batchSize))
      if (consumed > 0) yield* poke
      else yield* Effect.sleep(Duration.millis(idleMs))
    })

    const send = (delivery: DeliveryRow) =>
      provide(attemptDelivery(delivery, resolved)).pipe(
        Effect.catchAllCause((cause) => Effect.logError(`delivery ${delivery.id} failed`, cause)),
        Effect.asVoid,
        Effect.ensuring(Effect.zipRight(Effect.sync(() => running--), poke))
      )

    const idle = Effect.gen(function*() {
      const now = yield* store.now.pipe(Effect.orElse(() => Clock.currentTimeMillis))
      const due = yield* store.nextDueAt.pipe(Effect.orElseSucceed(() => Option.none<number>()))
      const wait = Option.match(due, { onNone: () => idleMs, onSome: (at) => Math.min(idleMs, Math.max(0, at - now)) })
      if (wait > 0) yield* Effect.race(Queue.take(pokes), Effect.sleep(Duration.millis(wait)))
    })

    const deliverLoop = Effect.gen(function*() {
      const free = concurrency - running
      if (free <= 0) return yield* Queue.take(pokes)
      const claimed = yield* Effect.flatMap(store.now, (now) => store.claimDue(owner, free, leaseMs, now))
      for (const delivery of claimed) {
        running++
        yield* FiberSet.run(sends, send(delivery))
      }
      if (claimed.length < free) yield* idle
    })

    const fanOutFiber = yield* Effect.forkScoped(Backoff.loop("webhook fan-out", fanOutLoop, options.backoff))
    const deliverFiber = yield* Effect.forkScoped(Backoff.loop("webhook delivery claim", deliverLoop, options.backoff))
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(fanOutFiber)
        yield* Fiber.interrupt(deliverFiber)
        yield* Effect.interruptible(FiberSet.awaitEmpty(sends)).pipe(
          Effect.timeout(Duration.millis(resolved.timeoutMs + 1000)),
          Effect.ignore
        )
        yield* FiberSet.clear(sends)
        yield* store.releaseAll(owner).pipe(Effect.ignore)
      })
    )
  })

/** The dispatcher as a layer: it runs while the layer is alive. */
export const layer = (
  options: DispatcherOptions = {}
): Layer.Layer<never, never, WebhookStore | WebhookSender | TaskStorage> => Layer.scopedDiscard(run(options))

// -----------------------------------------------------------------------------------------------------------------
// configuration
// -----------------------------------------------------------------------------------------------------------------

/** Parses `500ms`, `2s`, `1m`, `1h` (decisions.md §10) into ms, or undefined. */
export const parseDurationMs = (text: string): number | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(text)
  if (match === null) return undefined
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"]
  return Math.round(Number(match[1]) * unit)
}

/** Parses a comma-separated retry schedule (`1m,5m,30m`; empty for no retries). */
export const parseSchedule = (text: string): Either.Either<ReadonlyArray<number>, string> => {
  if (text.trim() === "") return Either.right([])
  const parts = text.split(",").map(parseDurationMs)
  return parts.every((n): n is number => n !== undefined)
    ? Either.right(parts)
    : Either.left("must be comma-separated durations like 1m,5m,30m")
}

/** Webhook settings from the environment. */
export interface WebhookSettings {
  readonly retrySchedule: ReadonlyArray<Duration.DurationInput>
  readonly timeout: Duration.DurationInput
  readonly allowPrivate: boolean
}

/**
 * `MEDIAGATE_WEBHOOK_RETRY_SCHEDULE` (default `1m,5m,30m`), `MEDIAGATE_WEBHOOK_TIMEOUT` (default `10s`),
 * `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE` (default false).
 */
export const config: Config.Config<WebhookSettings> = Config.all({
  retrySchedule: Config.string("MEDIAGATE_WEBHOOK_RETRY_SCHEDULE").pipe(
    Config.withDefault("1m,5m,30m"),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseSchedule(text), (m) => ConfigError.InvalidData(["MEDIAGATE_WEBHOOK_RETRY_SCHEDULE"], m))
    )
  ),
  timeout: Config.string("MEDIAGATE_WEBHOOK_TIMEOUT").pipe(
    Config.withDefault("10s"),
    Config.mapOrFail((text) => {
      const ms = parseDurationMs(text)
      return ms === undefined || ms <= 0
        ? Either.left(ConfigError.InvalidData(["MEDIAGATE_WEBHOOK_TIMEOUT"], "must be a duration like 10s"))
        : Either.right(ms)
    })
  ),
  allowPrivate: Config.boolean("MEDIAGATE_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false))
})

/** The dispatcher with the real sender, its settings from Effect `Config` (overrides win). */
export const layerConfig = (
  overrides: DispatcherOptions = {}
): Layer.Layer<never, ConfigError.ConfigError, WebhookStore | TaskStorage> =>
  Layer.unwrapEffect(Effect.map(config, ({ allowPrivate, ...timing }) =>
    layer({ ...timing, ...overrides }).pipe(Layer.provide(layerSender({ allowPrivate })))))
