/**
 * The Replicate fake's types and constants: the public options, prediction, webhook delivery and fake shapes, and
 * the internal bookkeeping of a stored prediction (held answers, webhook timers) and of a create request.
 */
import type { FakePlan, LoggedRequest, Planner, SubmitFault } from "../common.js"

/** The events a webhook can be sent on (`webhook_events_filter`). */
export type ReplicateWebhookEvent = "start" | "output" | "logs" | "completed"

/** A prediction's status. */
export type ReplicateStatus = "starting" | "processing" | "succeeded" | "failed" | "canceled" | "aborted"

/** Options of {@link startReplicateFake}. */
export interface ReplicateFakeOptions {
  /** The accepted API token (default `r8_test_token`). */
  readonly token?: string
  /** Plans a prediction from its input and model (`owner/name`, or the version id when its model is unknown). */
  readonly plan?: Planner
  readonly port?: number
  /** Version ids the fake knows, with their model (`owner/name`), for predictions created with a bare version id. */
  readonly versions?: Readonly<Record<string, string>>
  /** Predictions per page of `GET /v1/predictions` (default 100). */
  readonly pageSize?: number
}

/** What the fake stores per prediction; its state follows from these timestamps (epoch milliseconds). */
export interface ReplicatePrediction {
  readonly id: string
  /** Creation order (the list cursor). */
  readonly seq: number
  /** `owner/name`, or the version id when the prediction was created with an unknown bare version id. */
  readonly model: string
  readonly version: string
  /** `owner/name` of the deployment it was created on. */
  readonly deployment: string | undefined
  readonly input: Record<string, unknown>
  readonly plan: FakePlan
  readonly createdAt: number
  /** When it turns `processing` (20% of the plan's duration). */
  readonly startsAt: number
  /** When it succeeds or fails unless canceled before. */
  readonly completesAt: number
  /** From the `Cancel-After` header. */
  readonly deadlineAt: number | undefined
  readonly canceledAt: number | undefined
  readonly webhook: string | undefined
  readonly filter: ReadonlyArray<ReplicateWebhookEvent>
  /** The URLs its output names, in order. */
  readonly outputUrls: ReadonlyArray<string>
}

/** A prediction as the API answers it. */
export interface ReplicatePredictionJson {
  readonly id: string
  readonly model: string
  readonly version: string
  readonly input: Record<string, unknown>
  readonly logs: string
  readonly output: string | ReadonlyArray<string> | null
  readonly data_removed: false
  readonly error: string | null
  readonly status: ReplicateStatus
  readonly source: "api"
  readonly created_at: string
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly deadline?: string
  readonly deployment?: string
  readonly urls: { readonly get: string; readonly cancel: string; readonly stream: string; readonly web: string }
  readonly metrics: { readonly predict_time?: number; readonly total_time?: number }
}

/** One webhook the fake sent. */
export interface ReplicateWebhookDelivery {
  readonly predictionId: string
  readonly event: ReplicateWebhookEvent
  readonly messageId: string
  /** The receiver's answer (`undefined`: it never answered below 500). */
  readonly status: number | undefined
  readonly at: number
}

/** A running fake. */
export interface ReplicateFake {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:PORT`. */
  readonly url: string
  readonly token: string
  /** The webhook signing secret, `whsec_<base64>`. */
  readonly webhookSecret: string
  readonly predictions: ReadonlyMap<string, ReplicatePrediction>
  /** The last 100,000 requests. */
  readonly requests: ReadonlyArray<LoggedRequest>
  /** The last 100,000 webhooks sent, once answered. */
  readonly webhooks: ReadonlyArray<ReplicateWebhookDelivery>
  readonly counts: () => {
    create: number
    get: number
    cancel: number
    list: number
    files: number
    webhooks: number
  }
  /** A prediction as `GET /v1/predictions/{id}` would answer it now. */
  readonly view: (id: string) => ReplicatePredictionJson | undefined
  /** While true every request is answered 503. */
  down: boolean
  /** Faults for the next creates, one each, taken from the front (`common.ts`). */
  readonly submitFaults: Array<SubmitFault>
  /** How many predictions mention `text` (a task id) in their input or webhook URL. */
  readonly jobCount: (text: string) => number
  readonly close: () => Promise<void>
}

export const events: ReadonlyArray<ReplicateWebhookEvent> = ["start", "output", "logs", "completed"]
export const logLimit = 100_000
export const throttleMs = 500
export const progressSteps = 10
export const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
export const modelPattern = /^([A-Za-z0-9][\w.-]*)\/([A-Za-z0-9][\w.-]*)$/
export const versionPattern = /^[0-9a-f]{64}$/

export type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** A stored prediction with the fake's bookkeeping. */
export interface Entry {
  readonly p: Mutable<ReplicatePrediction>
  /** Held answers and streams, woken at the end or on cancel. */
  readonly waiters: Set<() => void>
  hook: Hook | undefined
}

/** Webhook bookkeeping of one prediction. */
export interface Hook {
  timer: ReturnType<typeof setTimeout> | undefined
  /** When the last `logs`/`output` webhook went out. */
  lastThrottled: number
  /** How many log lines the last `logs` webhook carried. */
  sentLines: number
  done: boolean
  /** Sends in order. */
  queue: Promise<unknown>
}

export interface Ending {
  readonly at: number
  readonly status: "succeeded" | "failed" | "canceled" | "aborted"
}

export interface InvalidField {
  readonly type: string
  readonly field: string
  readonly description: string
}

/** Where a create request was sent. */
export type Target =
  | { readonly _tag: "version" }
  | { readonly _tag: "model"; readonly model: string }
  | { readonly _tag: "deployment"; readonly deployment: string }
