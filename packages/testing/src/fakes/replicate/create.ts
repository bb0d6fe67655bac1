/**
 * Creating a Replicate prediction: on a version (`/v1/predictions`, `version` as `owner/name:id`, a bare version id
 * or `owner/name`), a model or a deployment; the body's checks as Replicate answers them (422 with the invalid
 * fields), the `Cancel-After` deadline, the output files, the first webhook, and the answer held by `Prefer: wait`.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { planOf, readBody, sendJson } from "../common.js"
import { extensionOf, isRecord, parseDuration, preferWait, problem } from "./http.js"
import { randomId, replicateVersionOf, viewOf } from "./prediction.js"
import { type ReplicateState, settle } from "./state.js"
import {
  type Entry,
  events,
  type Hook,
  type InvalidField,
  modelPattern,
  type Mutable,
  type ReplicatePrediction,
  type ReplicateWebhookEvent,
  type Target,
  versionPattern
} from "./types.js"
import type { Webhooks } from "./webhooks.js"

/** The create handler of one fake. */
export const makeCreate = (state: ReplicateState, webhooks: Webhooks) => {
  const { counts, entries, files, options, order, predictions, versions } = state
  const { schedule, send } = webhooks

  /** Checks a create and makes its prediction, answering it when `answer`; true when a prediction was made. */
  const create = async (
    request: IncomingMessage,
    response: ServerResponse,
    target: Target,
    answer = true
  ): Promise<boolean | void> => {
    counts.create++
    const text = await readBody(request)
    let body: unknown
    try {
      body = text.trim() === "" ? {} : JSON.parse(text)
    } catch {
      return problem(response, 400, "Bad Request", "The request body is not valid JSON.")
    }
    if (!isRecord(body)) return problem(response, 400, "Bad Request", "The request body must be a JSON object.")
    const invalid: Array<InvalidField> = []
    const input = body["input"]
    if (input === undefined) invalid.push({ type: "required", field: "input", description: "input is required" })
    else if (!isRecord(input)) {
      invalid.push({ type: "invalid_type", field: "input", description: "input: Invalid type. Expected: object" })
    }
    let model = ""
    let version = ""
    let deployment: string | undefined
    if (target._tag === "version") {
      const asked = body["version"]
      if (asked === undefined) {
        invalid.push({ type: "required", field: "version", description: "version is required" })
      } else if (typeof asked !== "string") {
        invalid.push({ type: "invalid_type", field: "version", description: "version: Invalid type. Expected: string" })
      } else {
        const [name, id] = asked.split(":", 2) as [string, string | undefined]
        if (id !== undefined && modelPattern.test(name) && versionPattern.test(id)) {
          model = name
          version = id
          versions.set(id, name)
        } else if (id === undefined && versionPattern.test(name)) {
          version = name
          model = versions.get(name) ?? name
        } else if (id === undefined && modelPattern.test(name)) {
          model = name
          version = replicateVersionOf(name)
        } else {
          invalid.push({ type: "format", field: "version", description: "Invalid version or not permitted" })
        }
      }
    } else if (target._tag === "model") {
      model = target.model
      version = replicateVersionOf(model)
    } else {
      deployment = target.deployment
      model = target.deployment
      version = replicateVersionOf(model)
    }
    const webhook = body["webhook"]
    if (webhook !== undefined && webhook !== null) {
      let valid = typeof webhook === "string"
      if (typeof webhook === "string") {
        try {
          valid = ["http:", "https:"].includes(new URL(webhook).protocol)
        } catch {
          valid = false
        }
      }
      if (!valid) {
        invalid.push({ type: "format", field: "webhook", description: "webhook: Does not match format 'uri'" })
      }
    }
    const filterAsked = body["webhook_events_filter"]
    let filter: ReadonlyArray<ReplicateWebhookEvent> = events
    if (filterAsked !== undefined && filterAsked !== null) {
      const known = (value: unknown): value is ReplicateWebhookEvent =>
        typeof value === "string" && (events as ReadonlyArray<string>).includes(value)
      if (Array.isArray(filterAsked) && filterAsked.every(known)) filter = filterAsked
      else {
        invalid.push({
          type: "enum",
          field: "webhook_events_filter",
          description: `webhook_events_filter: each item must be one of ${events.map((e) => `"${e}"`).join(", ")}`
        })
      }
    }
    const cancelAfter = request.headers["cancel-after"]
    const deadlineMs = typeof cancelAfter === "string" ? parseDuration(cancelAfter) : undefined
    if (typeof cancelAfter === "string" && deadlineMs === undefined) {
      return problem(response, 400, "Bad Request", `Invalid Cancel-After header: ${cancelAfter}`)
    }
    if (invalid.length > 0 || !isRecord(input)) {
      return problem(response, 422, "Input validation failed", invalid.map((f) => `- ${f.description}`).join("\n"), {
        invalid_fields: invalid
      })
    }

    const id = randomId(26)
    const plan = planOf(input, model, options.plan)
    const durationMs = Math.max(0, plan.durationMs)
    const createdAt = Date.now()
    const outputUrls = plan.outputs.map((output, n) => {
      if (output.url !== undefined) return output.url
      const name = output.name ?? `out-${id}-${n}.${extensionOf(output.contentType)}`
      files.set(name, output.contentType)
      return `${state.base}/fake-files/${encodeURIComponent(name)}`
    })
    const p: Mutable<ReplicatePrediction> = {
      id,
      seq: order.length,
      model,
      version,
      deployment,
      input,
      plan: { ...plan, durationMs },
      createdAt,
      startsAt: createdAt + durationMs * 0.2,
      completesAt: createdAt + durationMs,
      deadlineAt: deadlineMs === undefined ? undefined : createdAt + deadlineMs,
      canceledAt: undefined,
      webhook: typeof webhook === "string" ? webhook : undefined,
      filter,
      outputUrls
    }
    const entry: Entry = { p, waiters: new Set(), hook: undefined }
    entries.set(id, entry)
    predictions.set(id, p)
    order.push(entry)
    if (p.webhook !== undefined) {
      const hook: Hook = {
        timer: undefined,
        lastThrottled: -Infinity,
        sentLines: 0,
        done: false,
        queue: Promise.resolve()
      }
      entry.hook = hook
      if (filter.includes("start")) send(entry, hook, "start", viewOf(p, state.base, createdAt))
      schedule(entry)
    }
    const prefer = request.headers["prefer"]
    const wait = preferWait(Array.isArray(prefer) ? prefer.join(", ") : prefer)
    if (!answer) return true
    if (wait !== undefined) await settle(state, entry, wait * 1000)
    if (response.destroyed) return true
    // without `Prefer: wait` the answer is the prediction as created (`starting`), as Replicate answers, however long
    // this process took to write it
    const at = wait === undefined ? createdAt : Date.now()
    sendJson(response, 201, viewOf(p, state.base, at), { location: `${state.base}/v1/predictions/${id}` })
    return true
  }

  return create
}
