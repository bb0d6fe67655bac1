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
import type { TaskOutbox } from "@mediagate/engine/TaskOutbox"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { config } from "./internal/dispatcher/config.js"
import { run } from "./internal/dispatcher/loops.js"
import { type DispatcherOptions } from "./internal/dispatcher/options.js"
import { layerSender, type WebhookSender } from "./Outbound.js"
import type { WebhookStore } from "./WebhookStore.js"

export {
  /**
   * Sends one claimed delivery and records the attempt (fenced): succeeded on 2xx; on a failure the next retry, or
   * `failed` after the last; `410 Gone` fails it and disables its webhook. A delivery whose webhook was deleted or
   * disabled is failed without a request. Answers whether the outcome was recorded (the fence still held).
   *
   * @since 0.1.0
   * @category utils
   */
  attemptDelivery,
  /**
   * A delivery to attempt: a claimed row, with its configured webhook as the claim read it (`webhook`, see
   * `ClaimedDelivery`), or without it (then the attempt reads the webhook).
   *
   * @since 0.1.0
   * @category models
   */
  type Attempting,
  /**
   * Claims every due delivery (up to `limit`) and sends them concurrently; answers how many were claimed.
   *
   * @since 0.1.0
   * @category utils
   */
  deliverDue,
  /**
   * The delay before the next retry after `requests` requests, or undefined when none is left.
   *
   * @since 0.1.0
   * @category utils
   */
  retryDelayMs
} from "./internal/dispatcher/attempt.js"
export {
  /**
   * `MEDIAGATE_WEBHOOK_RETRY_SCHEDULE` (default `1m,5m,30m`), `MEDIAGATE_WEBHOOK_TIMEOUT` (default `10s`),
   * `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE` (default false).
   *
   * @since 0.1.0
   * @category config
   */
  config,
  /**
   * Parses `500ms`, `2s`, `1m`, `1h` (decisions.md §10) into ms, or undefined.
   *
   * @since 0.1.0
   * @category encoding
   */
  parseDurationMs,
  /**
   * Parses a comma-separated retry schedule (`1m,5m,30m`; empty for no retries).
   *
   * @since 0.1.0
   * @category encoding
   */
  parseSchedule,
  /**
   * Webhook settings from the environment.
   *
   * @since 0.1.0
   * @category models
   */
  type WebhookSettings
} from "./internal/dispatcher/config.js"
export {
  /**
   * Fans out one page of the outbox after the durable cursor; answers how many outbox entries it consumed (0 when there
   * were none, or when another dispatcher moved the cursor first).
   *
   * @since 0.1.0
   * @category utils
   */
  fanOutOnce
} from "./internal/dispatcher/fanOut.js"
export {
  /**
   * Headers of a configured-webhook delivery: the spec's, signed with `sign`, plus Standard Webhooks headers.
   *
   * @since 0.1.0
   * @category utils
   */
  configuredHeaders,
  /**
   * Headers of a per-job (`webhookUrl`) delivery: no signature.
   *
   * @since 0.1.0
   * @category utils
   */
  perJobHeaders
} from "./internal/dispatcher/headers.js"
export {
  /**
   * Runs fan-out and delivery until the scope closes.
   *
   * @since 0.1.0
   * @category utils
   */
  run
} from "./internal/dispatcher/loops.js"
export {
  /**
   * Default fan-out backstop ({@link DispatcherOptions.idle}): 5 s.
   *
   * @since 0.1.0
   * @category constants
   */
  defaultIdle,
  /**
   * Default jitter: each retry delay is lengthened by up to this fraction.
   *
   * @since 0.1.0
   * @category constants
   */
  defaultJitter,
  /**
   * Default delays of the retries: 1, 5 and 30 minutes.
   *
   * @since 0.1.0
   * @category constants
   */
  defaultRetryScheduleMs,
  /**
   * Default time limit of one attempt: 10 s.
   *
   * @since 0.1.0
   * @category constants
   */
  defaultTimeoutMs,
  /**
   * Dispatcher settings.
   *
   * @since 0.1.0
   * @category models
   */
  type DispatcherOptions,
  /**
   * Applies the defaults.
   *
   * @since 0.1.0
   * @category utils
   */
  resolve,
  /**
   * Settings with defaults applied, in ms.
   *
   * @since 0.1.0
   * @category models
   */
  type Resolved
} from "./internal/dispatcher/options.js"

/**
 * The dispatcher as a layer: it runs while the layer is alive.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: DispatcherOptions = {}
): Layer.Layer<never, never, WebhookStore | WebhookSender | TaskOutbox> => Layer.scopedDiscard(run(options))

/**
 * The dispatcher with the real sender, its settings from Effect `Config` (overrides win).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  overrides: DispatcherOptions = {}
): Layer.Layer<never, ConfigError.ConfigError, WebhookStore | TaskOutbox> =>
  Layer.unwrapEffect(
    Effect.map(config, ({ allowPrivate, ...timing }) =>
      layer({ ...timing, ...overrides }).pipe(Layer.provide(layerSender({ allowPrivate }))))
  )
