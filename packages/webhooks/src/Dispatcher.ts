/**
 * Durable webhook delivery (spec "Events"; decisions.md §6).
 *
 * - **Fan-out** ({@link fanOutOnce}): reads the engine's outbox (`TaskOutbox.readOutbox`) after the dispatcher's
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
 * - Wake-ups: the fan-out loop waits on the storage's outbox signal (`TaskOutbox.outboxWakeups`: in process after
 *   a terminal transition commits; on PostgreSQL also `NOTIFY <prefix>outbox`, sent by the outbox insert itself, so
 *   a finish in any process wakes every dispatcher), with a poll every `idle` (default 5 s) as the backstop of a
 *   lost signal. The deliveries a fan-out creates are inserted leased to this dispatcher, as many as it has free
 *   slots (`WebhookStore.fanOutLeased`), and sent at once without a claim; the rest are claimed by the delivery loop,
 *   which is woken for them.
 * - Round trips (docs/webhooks.md "Statements per delivery"): the fan-out's compare-and-set and inserts are one
 *   statement on PostgreSQL; a claim returns each delivery's webhook (no read per attempt); outcomes are settled in
 *   batches (`WebhookStore.settleAll`, group commit: the attempts that finish while a batch is written go in the
 *   next), each fenced on its own; the loops keep what they wrote (the outbox cursor) and estimate the storage clock
 *   in the process (the offset measured when the delivery loop runs out of work), instead of reading them again.
 * - {@link run} / {@link layer} run both loops in the background; the task path never waits for them. A loop whose
 *   storage fails (the database restarted, connections killed) never stops: it logs once and tries again after a
 *   capped exponential backoff ({@link DispatcherOptions.backoff}); a claimed delivery whose attempt could not be
 *   recorded is sent again when its lease runs out (at least once).
 *
 * @since 0.1.0
 */
import { Metrics, Tracing, WebhookSignature } from "@mediagate/contract"
import { TaskOutbox } from "@mediagate/engine/TaskOutbox"
import { TaskReads } from "@mediagate/engine/TaskReads"
import * as Backoff from "@mediagate/persistence/Backoff"
import * as GroupCommit from "@mediagate/persistence/GroupCommit"
import * as Ids from "@mediagate/persistence/Ids"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { hostname } from "node:os"
import { layerSender, WebhookSender } from "./Outbound.js"
import type { ClaimedDelivery, DeliveryRow, FanOutLease, Settle, Settlement, Target } from "./WebhookStore.js"
import { WebhookStore } from "./WebhookStore.js"

/** Default delays of the retries: 1, 5 and 30 minutes. */
export const defaultRetryScheduleMs: ReadonlyArray<number> = [60_000, 300_000, 1_800_000]
/** Default time limit of one attempt: 10 s. */
export const defaultTimeoutMs = 10_000
/** Default jitter: each retry delay is lengthened by up to this fraction. */
export const defaultJitter = 0.1
/** Default fan-out backstop ({@link DispatcherOptions.idle}): 5 s. */
export const defaultIdle: Duration.DurationInput = "5 seconds"
/** The most attempt outcomes settled in one statement (`WebhookStore.settleAll`) by the background dispatcher. */
const maxSettleBatch = 256

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
  /** Outbox entries fanned out per round (one compare-and-set). Default 500. */
  readonly batchSize?: number
  /**
   * Fan-out backstop: the longest wait for an outbox signal (`TaskOutbox.outboxWakeups`) before reading the outbox
   * anyway (a signal lost with a dropped `LISTEN` connection). Default {@link defaultIdle} (5 s).
   */
  readonly idle?: Duration.DurationInput
  /**
   * The longest wait of the delivery loop between looks for due deliveries (retries are awaited to their due time;
   * this catches deliveries made due elsewhere, e.g. a replay on another process). Default 1 s.
   */
  readonly deliveryIdle?: Duration.DurationInput
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

const taskIdOf = (payload: string): string =>
  Option.match(decodeTaskId(payload), { onNone: () => "", onSome: (event) => event.data.task.id })

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
 * A delivery to attempt: a claimed row, with its configured webhook as the claim read it (`webhook`, see
 * `ClaimedDelivery`), or without it (then the attempt reads the webhook).
 */
export type Attempting = DeliveryRow & { readonly webhook?: Target | null | undefined }

/** Where an attempt records its outcome: the settle, and the storage clock. */
interface Recorder {
  readonly settle: (settle: Settle) => Effect.Effect<boolean, PersistenceError>
  readonly now: Effect.Effect<number, PersistenceError>
}

/** Each settle on its own (`settleAll` of one), the clock read from the storage. */
const directRecorder = (store: WebhookStore["Type"]): Recorder => ({
  settle: (settle) => Effect.map(store.settleAll([settle]), (answers) => answers[0] === true),
  now: store.now
})

/**
 * Sends one claimed delivery and records the attempt (fenced): succeeded on 2xx; on a failure the next retry, or
 * `failed` after the last; `410 Gone` fails it and disables its webhook. A delivery whose webhook was deleted or
 * disabled is failed without a request. Answers whether the outcome was recorded (the fence still held).
 */
export const attemptDelivery = (delivery: Attempting, options: Resolved) =>
  Effect.flatMap(WebhookStore, (store) => attemptWith(delivery, options, directRecorder(store)))

const attemptWith = (delivery: Attempting, options: Resolved, recorder: Recorder) =>
  Effect.flatMap(
    Tracing.enabled,
    (on) => on ? tracedAttempt(delivery, options, recorder) : attemptOnce(delivery, options, recorder)
  )

/**
 * An attempt in a span of the trace of the task's creating request (when the task kept it: the delivery's task is
 * read for its `traceContext`), with the event and delivery ids, the attempt number and the answer's status.
 */
const tracedAttempt = (delivery: Attempting, options: Resolved, recorder: Recorder) =>
  Effect.gen(function*() {
    const tasks = yield* Effect.serviceOption(TaskReads)
    const taskId = taskIdOf(delivery.payload)
    const task = Option.isNone(tasks) || taskId === ""
      ? Option.none()
      : yield* tasks.value.getById(taskId).pipe(Effect.orElseSucceed(() => Option.none()))
    const parent = Option.isSome(task) ? Tracing.parentOf(task.value.traceContext) : undefined
    return yield* attemptOnce(delivery, options, recorder).pipe(Effect.withSpan("Webhooks.attemptDelivery", {
      kind: "client",
      captureStackTrace: false,
      ...(parent === undefined ? {} : { parent }),
      attributes: {
        "mediagate.event_id": delivery.eventId,
        "mediagate.delivery_id": delivery.id,
        "mediagate.attempt": delivery.attempts + 1,
        ...(taskId === "" ? {} : { "mediagate.task_id": taskId })
      }
    }))
  })

const attemptOnce = (delivery: Attempting, options: Resolved, recorder: Recorder) =>
  Effect.gen(function*() {
    const sender = yield* WebhookSender
    let headers: Record<string, string>
    const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (delivery.webhookId !== null) {
      const webhook: Option.Option<Target> = delivery.webhook === undefined
        ? yield* Effect.flatMap(WebhookStore, (store) => store.getWebhookById(delivery.webhookId!))
        : Option.fromNullable(delivery.webhook)
      if (Option.isNone(webhook) || webhook.value.deletedAt !== null || !webhook.value.enabled) {
        const reason = Option.isNone(webhook) || webhook.value.deletedAt !== null
          ? "webhook deleted"
          : "webhook disabled"
        return yield* recorder.settle({ delivery, attempt: undefined, settlement: { status: "failed", reason } })
      }
      headers = configuredHeaders(webhook.value.secret, delivery.eventId, timestamp, delivery.payload)
    } else {
      headers = perJobHeaders(delivery.eventType, taskIdOf(delivery.payload), delivery.eventId, timestamp)
    }
    // the attempt's span travels with the request (W3C Trace Context) while tracing is on
    const traceparent = yield* Tracing.traceparent
    if (traceparent !== undefined) headers = { ...headers, traceparent }
    const result = yield* sender.send({
      url: delivery.url,
      headers,
      body: delivery.payload,
      timeoutMs: options.timeoutMs
    })
    if (traceparent !== undefined) {
      yield* Effect.annotateCurrentSpan(
        result.statusCode === null
          ? { "error.type": result.reason ?? "error" }
          : { "http.response.status_code": result.statusCode }
      )
    }
    const at = yield* recorder.now
    const requests = delivery.attempts + 1
    let settlement: Settlement
    if (isSuccess(result.statusCode)) settlement = { status: "succeeded" }
    else if (result.statusCode === 410) settlement = { status: "failed", disableWebhook: delivery.webhookId !== null }
    else {
      const delay = retryDelayMs(options, requests)
      settlement = delay === undefined ? { status: "failed" } : { status: "pending", nextAttemptAt: at + delay }
    }
    const outcome = settlement.status === "succeeded"
      ? "delivered"
      : settlement.status === "pending"
      ? "retrying"
      : "failed"
    Metrics.webhookDeliveries.record(1, outcome, requests)
    Metrics.webhookDeliveryDuration.record(result.durationMs / 1000, outcome)
    return yield* recorder.settle({
      delivery,
      attempt: {
        statusCode: result.statusCode,
        error: isSuccess(result.statusCode) ? null : result.error ?? `HTTP ${result.statusCode}`,
        durationMs: result.durationMs,
        responseExcerpt: result.responseExcerpt,
        at
      },
      settlement
    })
  })

/** Claims every due delivery (up to `limit`) and sends them concurrently; answers how many were claimed. */
export const deliverDue = (options: DispatcherOptions = {}, limit = 100) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const resolved = resolve(options)
    const now = yield* store.now
    const owner = options.owner ?? "deliverDue"
    const claimed = yield* store.claimDue(
      owner,
      limit,
      Duration.toMillis(options.lease ?? resolved.timeoutMs + 30_000),
      now
    )
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
  Effect.flatMap(WebhookStore, (store) => Effect.map(fanOutPage(batchSize, store.now), (round) => round.consumed))

/**
 * The dispatcher's outbox cursor as this process last wrote or read it: the background loop does not read it
 * again after its own compare-and-set succeeded (a failed one, or a failure, makes it unknown: read again).
 */
interface KnownCursor {
  known: boolean
  value: string | undefined
}

/** What one fan-out round found. */
interface FanOutRound {
  /** Outbox entries fanned out. */
  readonly consumed: number
  /** Look again at once: the page was full, or another dispatcher moved the cursor first. */
  readonly again: boolean
  /** Entries are held back for now (see `OutboxPage.heldBack`): look again shortly. */
  readonly heldBack: boolean
  /** Deliveries created. */
  readonly created: number
  /** The deliveries created and leased to the caller (`WebhookStore.fanOutLeased`): to send now. */
  readonly leased: ReadonlyArray<ClaimedDelivery>
}

const fanOutPage = (
  batchSize: number,
  now: Effect.Effect<number, PersistenceError>,
  known?: KnownCursor,
  lease?: FanOutLease
) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const tasks = yield* TaskOutbox
    const cursor = known?.known === true ? known.value : yield* store.readCursor
    if (known !== undefined) {
      known.known = true
      known.value = cursor
    }
    const page = yield* tasks.readOutbox(cursor, batchSize)
    const heldBack = page.heldBack === true
    const none: FanOutRound = { consumed: 0, again: false, heldBack, created: 0, leased: [] }
    if (page.entries.length === 0 && page.cursor === cursor) return none
    // unknown until the compare-and-set is known to have moved it (a failure may or may not have committed)
    if (known !== undefined) known.known = false
    const done = yield* store.fanOutLeased(cursor, page.cursor, page.entries, yield* now, lease)
    if (known !== undefined && Option.isSome(done)) {
      known.known = true
      known.value = page.cursor
    }
    return Option.isSome(done)
      ? { ...done.value, consumed: page.entries.length, again: page.entries.length >= batchSize, heldBack }
      : { ...none, again: true }
  })

// -----------------------------------------------------------------------------------------------------------------
// the background loops
// -----------------------------------------------------------------------------------------------------------------

/** Runs fan-out and delivery until the scope closes. */
export const run = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    const tasks = yield* TaskOutbox
    // the tasks' reads, when the engine is in context: an attempt's span continues the trace of its task's request
    const reads = yield* Effect.serviceOption(TaskReads)
    const resolved = resolve(options)
    const concurrency = Math.max(1, options.concurrency ?? 16)
    const leaseMs = Duration.toMillis(options.lease ?? resolved.timeoutMs + 30_000)
    const idleMs = Duration.toMillis(options.idle ?? defaultIdle)
    const deliveryIdleMs = Duration.toMillis(options.deliveryIdle ?? "1 second")
    const batchSize = options.batchSize ?? 500
    const owner = options.owner ?? `${hostname()}:${process.pid}:${Ids.ulid()}`
    const pokes = yield* Queue.sliding<void>(1)
    const poke = Queue.offer(pokes, undefined)
    const sends = yield* FiberSet.make<void, never>()
    let running = 0

    // the storage clock, estimated in the process: Effect's clock plus the offset to the storage clock measured
    // when the delivery loop runs out of work (and at the start), instead of a read before every claim and attempt
    let offset = 0
    const measure = Effect.flatMap(store.now, (storage) =>
      Effect.map(Clock.currentTimeMillis, (local) => {
        offset = storage - local
        return storage
      }))
    const storageNow = Effect.map(Clock.currentTimeMillis, (local) => Math.floor(local + offset))
    yield* Effect.ignore(measure)

    /**
     * The earliest retry this process scheduled since the delivery loop last asked the storage (`nextDueAt`):
     * while deliveries keep coming, the loop waits for it (or a poke) without asking.
     */
    let knownDue = Number.POSITIVE_INFINITY
    // attempts settle in batches: the outcomes of the sends that finish while one batch is written go in the next
    const settleBatch = GroupCommit.make(maxSettleBatch, (batch: ReadonlyArray<Settle>) =>
      Effect.flatMap(Effect.exit(store.settleAll(batch)), (exit) =>
        Exit.isSuccess(exit)
          ? Effect.succeed(exit.value.map((recorded) =>
            Exit.succeed(recorded)
          ))
          : batch.length === 1
          ? Effect.succeed([Exit.failCause(exit.cause)])
          // the batch failed as a whole: each on its own, so that one failure fails only its own settle
          : Effect.forEach(
            batch,
            (one) => Effect.exit(Effect.map(store.settleAll([one]), (answers) => answers[0] === true))
          )))
    const settleOne = yield* settleBatch
    const settleAndNote = (settle: Settle) =>
      Effect.tap(settleOne(settle), (recorded) =>
        Effect.suspend(() => {
          if (!recorded || settle.settlement.status !== "pending" || settle.settlement.nextAttemptAt >= knownDue) {
            return Effect.void
          }
          // a retry earlier than the loop knows of: it looks again (and waits for it)
          knownDue = settle.settlement.nextAttemptAt
          return poke
        }))
    /**
     * Outcomes being settled: a send frees its slot once its answer is in, and its settle completes in the
     * background (at most {@link maxSettleBatch} at once: the loop claims no more until they are written). An outcome
     * that could not be recorded is sent again when its lease runs out (at least once).
     */
    let settling = 0
    const recorder: Recorder = {
      now: storageNow,
      settle: (settle) =>
        Effect.suspend(() => {
          settling++
          return FiberSet.run(
            sends,
            settleAndNote(settle).pipe(
              Effect.catchAllCause((cause) =>
                Effect.logError(
                  `delivery ${settle.delivery.id}: the attempt was not recorded (sent again after its lease)`,
                  cause
                )
              ),
              Effect.asVoid,
              Effect.ensuring(Effect.suspend(() => settling-- >= maxSettleBatch ? poke : Effect.void))
            )
          )
        }).pipe(Effect.as(true))
    }
    const provide = <A, E>(effect: Effect.Effect<A, E, WebhookStore | WebhookSender | TaskOutbox>) =>
      effect.pipe(
        Effect.provideService(WebhookStore, store),
        Effect.provideService(WebhookSender, sender),
        Effect.provideService(TaskOutbox, tasks),
        Option.isSome(reads) ? Effect.provideService(TaskReads, reads.value) : (self) => self
      )

    // outbox signals (terminal transitions here, or on PostgreSQL anywhere): one waiting is enough; a signal that
    // arrives while a round reads is kept for the next wait, so none is lost
    const outboxPokes = yield* Queue.sliding<void>(1)
    yield* Effect.forkScoped(Stream.runForEach(tasks.outboxWakeups, () => Queue.offer(outboxPokes, undefined)))
    /**
     * The wait before looking again while entries are held back (PostgreSQL: a transaction older than them still
     * runs, and may not be one that signals when it ends): 5 ms after a round that fanned something out (under
     * load, entries are held back by short transactions all the time), otherwise doubling up to 100 ms (a long
     * transaction: at most ten looks a second).
     */
    let heldBackMs = 0
    const cursor: KnownCursor = { known: false, value: undefined }
    /** The delivery loop waits for a free slot (a fan-out that reserved slots and used fewer pokes it). */
    let deliveryWaitsForSlot = false
    /** Send slots free now: below the concurrency, and below the most outcomes being settled. */
    const freeSlots = () => Math.min(concurrency - running, maxSettleBatch - settling)
    /**
     * Runs `effect` (a fan-out round or a claim) with `slots` send slots reserved, so that the two loops never
     * lease more than the concurrency between them; the slots it did not fill (`used`) are freed when it ends.
     */
    const reserving = <A, E>(slots: number, effect: Effect.Effect<A, E>, used: (done: A) => number) => {
      running += slots
      return Effect.onExit(effect, (exit) =>
        Effect.sync(() => {
          running -= slots - (Exit.isSuccess(exit) ? used(exit.value) : 0)
        }))
    }

    // a failure (storage unavailable) ends the round: the loop backs off (see the fibers below)
    const fanOutLoop = Effect.gen(function*() {
      // the deliveries a round creates are leased to this dispatcher as they are inserted, as many as it has free
      // slots (reserved for the round), and sent at once: no claim, no wake-up of the delivery loop
      const free = Math.max(0, freeSlots())
      const round = yield* reserving(
        free,
        provide(fanOutPage(batchSize, storageNow, cursor, free > 0 ? { owner, leaseMs, limit: free } : undefined)),
        (done) => done.leased.length
      )
      for (const delivery of round.leased) yield* FiberSet.run(sends, send(delivery))
      // the rest of the new deliveries are due now (the delivery loop claims them at once), and slots reserved
      // but not used may be what a full delivery loop waits for
      if (round.created > round.leased.length || (free > round.leased.length && deliveryWaitsForSlot)) yield* poke
      if (round.again) return
      if (round.heldBack) {
        heldBackMs = round.consumed > 0 ? 5 : Math.min(100, Math.max(5, heldBackMs * 2))
        return yield* Effect.race(Queue.take(outboxPokes), Effect.sleep(Duration.millis(Math.min(heldBackMs, idleMs))))
      }
      heldBackMs = 0
      // the poll is only the backstop of a lost signal
      yield* Effect.race(Queue.take(outboxPokes), Effect.sleep(Duration.millis(idleMs)))
    })

    // a send that frees a slot pokes the delivery loop if it waits for one (a full dispatcher; slots reserved by a
    // fan-out round count as taken)
    const send = (delivery: ClaimedDelivery) =>
      provide(attemptWith(delivery, resolved, recorder)).pipe(
        Effect.catchAllCause((cause) => Effect.logError(`delivery ${delivery.id} failed`, cause)),
        Effect.asVoid,
        Effect.ensuring(Effect.suspend(() => {
          running--
          return deliveryWaitsForSlot ? poke : Effect.void
        }))
      )

    const deliverLoop = Effect.gen(function*() {
      const free = freeSlots()
      if (free <= 0) {
        deliveryWaitsForSlot = true
        return yield* Effect.ensuring(
          Queue.take(pokes),
          Effect.sync(() => {
            deliveryWaitsForSlot = false
          })
        )
      }
      const now = yield* storageNow
      const claimed = yield* reserving(free, store.claimDue(owner, free, leaseMs, now), (done) => done.length)
      for (const delivery of claimed) yield* FiberSet.run(sends, send(delivery))
      // the claim took what was due (a full claim: the loop looks again at once)
      if (knownDue <= now) knownDue = Number.POSITIVE_INFINITY
      if (claimed.length >= free) return
      let wait: number
      if (claimed.length === 0) {
        // nothing due: the storage tells when something is (a retry of any process, a lease that runs out), and
        // the clock's offset is measured again
        const at = yield* measure
        const due = yield* store.nextDueAt
        knownDue = Number.POSITIVE_INFINITY
        wait = Option.match(due, {
          onNone: () => deliveryIdleMs,
          onSome: (dueAt) => Math.min(deliveryIdleMs, Math.max(0, dueAt - at))
        })
      } else {
        wait = Math.min(deliveryIdleMs, Math.max(0, knownDue - now))
      }
      if (wait > 0) yield* Effect.race(Queue.take(pokes), Effect.sleep(Duration.millis(wait)))
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
): Layer.Layer<never, never, WebhookStore | WebhookSender | TaskOutbox> => Layer.scopedDiscard(run(options))

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
): Layer.Layer<never, ConfigError.ConfigError, WebhookStore | TaskOutbox> =>
  Layer.unwrapEffect(
    Effect.map(config, ({ allowPrivate, ...timing }) =>
      layer({ ...timing, ...overrides }).pipe(Layer.provide(layerSender({ allowPrivate }))))
  )
