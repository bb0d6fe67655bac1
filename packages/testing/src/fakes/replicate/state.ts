/**
 * The Replicate fake's shared state (predictions in creation order, output files, request and webhook logs,
 * counters), and the held answers of a prediction: waiting for its end and waking the waiters early.
 */
import { randomBytes } from "node:crypto"
import type { LoggedRequest, SubmitFault } from "../common.js"
import { ending } from "./prediction.js"
import type { Entry, ReplicateFakeOptions, ReplicatePrediction, ReplicateWebhookDelivery } from "./types.js"

/** Everything one running fake keeps. */
export interface ReplicateState {
  readonly options: ReplicateFakeOptions
  readonly token: string
  readonly pageSize: number
  readonly secretBytes: Buffer
  readonly webhookSecret: string
  /** Version id → model (`owner/name`). */
  readonly versions: Map<string, string>
  readonly entries: Map<string, Entry>
  readonly predictions: Map<string, ReplicatePrediction>
  /** The entries in creation order (`seq`). */
  readonly order: Array<Entry>
  /** Output file name → content type. */
  readonly files: Map<string, string>
  log: Array<LoggedRequest>
  deliveries: Array<ReplicateWebhookDelivery>
  readonly counts: { create: number; get: number; cancel: number; list: number; files: number; webhooks: number }
  readonly submitFaults: Array<SubmitFault>
  closed: boolean
  /** The fake's base URL, once it listens. */
  base: string
}

export const makeState = (options: ReplicateFakeOptions): ReplicateState => {
  const secretBytes = randomBytes(24)
  return {
    options,
    token: options.token ?? "r8_test_token",
    pageSize: Math.max(1, options.pageSize ?? 100),
    secretBytes,
    webhookSecret: `whsec_${secretBytes.toString("base64")}`,
    versions: new Map<string, string>(Object.entries(options.versions ?? {})),
    entries: new Map(),
    predictions: new Map(),
    order: [],
    files: new Map(),
    log: [],
    deliveries: [],
    counts: { create: 0, get: 0, cancel: 0, list: 0, files: 0, webhooks: 0 },
    submitFaults: [],
    closed: false,
    base: ""
  }
}

/**
 * Resolves when the prediction ends, is canceled, or `maxMs` passes. A timer can fire a little early by the wall
 * clock (the event loop's cached time), so it re-arms until the moment has really come.
 */
export const settle = (state: ReplicateState, entry: Entry, maxMs: number) =>
  new Promise<void>((resolve) => {
    const until = Date.now() + maxMs
    let timer: ReturnType<typeof setTimeout> | undefined
    const done = () => {
      clearTimeout(timer)
      entry.waiters.delete(done)
      resolve()
    }
    const arm = () => {
      const remaining = Math.min(until, ending(entry.p).at) - Date.now()
      if (remaining <= 0 || state.closed) return done()
      timer = setTimeout(arm, Math.max(1, remaining))
    }
    entry.waiters.add(done)
    arm()
  })

export const wake = (entry: Entry) => {
  for (const waiter of [...entry.waiters]) waiter()
}
