/**
 * The Replicate fake's webhooks, signed the Standard Webhooks way: `start` at creation, `logs` while it runs and
 * `output` at the end (both throttled to one per 500 ms), and `completed`, as the prediction's events filter allows;
 * one timer per prediction, armed for its next event, and the sends of a prediction in order.
 */
import { createHmac } from "node:crypto"
import { postCallback } from "../common.js"
import { ending, lineCount, lineTime, randomId, viewOf } from "./prediction.js"
import type { ReplicateState } from "./state.js"
import {
  type Entry,
  type Hook,
  logLimit,
  type ReplicatePredictionJson,
  type ReplicateWebhookEvent,
  throttleMs
} from "./types.js"

/** What creates and cancels use of the webhooks. */
export interface Webhooks {
  /** Sends one webhook of the prediction, after the ones before it. */
  readonly send: (entry: Entry, hook: Hook, event: ReplicateWebhookEvent, body: ReplicatePredictionJson) => void
  /** Arms the timer for the prediction's next webhook event. */
  readonly schedule: (entry: Entry) => void
}

export const makeWebhooks = (state: ReplicateState): Webhooks => {
  const { counts, secretBytes } = state

  const send = (entry: Entry, hook: Hook, event: ReplicateWebhookEvent, body: ReplicatePredictionJson) => {
    const url = entry.p.webhook
    if (url === undefined) return
    const text = JSON.stringify(body)
    const messageId = `msg_${randomId(27)}`
    const timestamp = String(Math.floor(Date.now() / 1000))
    const signature = createHmac("sha256", secretBytes).update(`${messageId}.${timestamp}.${text}`).digest("base64")
    const headers = {
      "webhook-id": messageId,
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1,${signature}`,
      "user-agent": "Replicate-Webhooks/fake"
    }
    counts.webhooks++
    hook.queue = hook.queue.then(async () => {
      if (state.closed) return
      const status = await postCallback(url, text, headers)
      state.deliveries.push({ predictionId: entry.p.id, event, messageId, status, at: Date.now() })
      if (state.deliveries.length >= 2 * logLimit) state.deliveries = state.deliveries.slice(-logLimit)
    })
  }

  /** Arms the timer for the prediction's next webhook event. */
  const schedule = (entry: Entry) => {
    const hook = entry.hook
    if (hook === undefined || hook.done || state.closed) return
    clearTimeout(hook.timer)
    const p = entry.p
    const end = ending(p)
    let next = end.at
    if (p.filter.includes("logs")) {
      const lineAt = lineTime(p, hook.sentLines)
      if (lineAt !== undefined && lineAt < end.at) {
        next = Math.min(next, Math.max(lineAt, hook.lastThrottled + throttleMs))
      }
    }
    hook.timer = setTimeout(() => fire(entry), Math.max(0, next - Date.now()))
  }

  /** Sends what is due: `logs` (throttled) while it runs; at the end `output` (throttled) and `completed`. */
  const fire = (entry: Entry) => {
    const hook = entry.hook
    if (hook === undefined || hook.done || state.closed) return
    const p = entry.p
    const now = Date.now()
    const end = ending(p)
    if (now >= end.at) {
      hook.done = true
      hook.timer = undefined
      if (p.filter.includes("output") && end.status === "succeeded" && end.at - hook.lastThrottled >= throttleMs) {
        send(entry, hook, "output", viewOf(p, state.base, end.at, true))
      }
      if (p.filter.includes("completed")) send(entry, hook, "completed", viewOf(p, state.base, end.at))
      return
    }
    const count = lineCount(p, now)
    if (p.filter.includes("logs") && count > hook.sentLines && now - hook.lastThrottled >= throttleMs) {
      hook.sentLines = count
      hook.lastThrottled = now
      send(entry, hook, "logs", viewOf(p, state.base, now))
    }
    schedule(entry)
  }

  return { send, schedule }
}
