/**
 * The jobs API of newer ComfyUI builds (`comfy_execution/jobs.py`), served under `/api/jobs` by the fake: a job's
 * summary from the queue or the history, one job in full, and the filtered, sorted, paged list.
 */
import type { ServerResponse } from "node:http"
import { sendJson } from "../common.js"
import type { ComfyState } from "./state.js"
import { type HistoryEntry, isObject, type Job, jobStatuses, type Json } from "./types.js"

/** What the routes use of the jobs API. */
export interface JobsApi {
  /** One job in full, from the history or the queue; undefined when unknown or deleted. */
  readonly jobView: (id: string) => Json | undefined
  /** `GET /api/jobs`. */
  readonly listJobs: (url: URL, response: ServerResponse) => void
}

export const makeJobsApi = (state: ComfyState): JobsApi => {
  const { history, jobs, pending, running } = state

  const prune = (record: Json) => Object.fromEntries(Object.entries(record).filter(([, value]) => value != null))

  const queuedJob = (job: Job, status: "pending" | "in_progress") =>
    prune({
      id: job.id,
      status,
      priority: job.number,
      create_time: job.extraData["create_time"],
      outputs_count: 0,
      previewable_outputs_count: 0
    })

  const historyJob = (id: string, entry: HistoryEntry, full: boolean) => {
    let start: unknown
    let endTime: unknown
    let executionError: Json | undefined
    let interrupted = false
    for (const [event, data] of entry.status.messages) {
      if (event === "execution_start") start = data["timestamp"]
      if (event === "execution_success" || event === "execution_error" || event === "execution_interrupted") {
        endTime = data["timestamp"]
      }
      if (event === "execution_error") executionError = data
      if (event === "execution_interrupted") interrupted = true
    }
    let count = 0
    let preview: Json | undefined
    for (const [nodeId, output] of Object.entries(entry.outputs)) {
      for (const [mediaType, items] of Object.entries(output)) {
        if (mediaType === "animated" || !Array.isArray(items)) continue
        for (const item of items) {
          count++
          if (preview !== undefined || !isObject(item) || item["type"] !== "output") continue
          preview = { ...item, nodeId, mediaType }
        }
      }
    }
    const success = entry.status.status_str === "success"
    const job = prune({
      id,
      status: success ? "completed" : interrupted ? "cancelled" : "failed",
      priority: entry.prompt[0],
      create_time: entry.prompt[3]["create_time"],
      execution_start_time: start,
      execution_end_time: endTime,
      execution_error: executionError,
      completion_status: success ? "success" : undefined,
      has_errors: executionError !== undefined,
      execution_error_count: executionError !== undefined ? 1 : 0,
      outputs_count: count,
      previewable_outputs_count: count,
      preview_output: preview
    })
    if (!full) return job
    return {
      ...job,
      outputs: entry.outputs,
      execution_status: entry.status,
      execution_errors: [],
      workflow: { prompt: entry.prompt[2], extra_data: entry.prompt[3] }
    }
  }

  const jobView = (id: string) => {
    const entry = history.get(id)
    if (entry !== undefined) return historyJob(id, entry, true)
    const job = jobs.get(id)
    if (job?.state === "running") return queuedJob(job, "in_progress")
    if (job?.state === "pending") return queuedJob(job, "pending")
    return undefined
  }

  const listJobs = (url: URL, response: ServerResponse) => {
    const statusParam = url.searchParams.get("status")
    const statuses = statusParam === null
      ? jobStatuses
      : statusParam.split(",").map((status) => status.trim().toLowerCase()).filter((status) => status !== "")
    const wrong = statuses.filter((status) => !jobStatuses.includes(status))
    if (wrong.length > 0) {
      return sendJson(response, 400, {
        error: `Invalid status value(s): ${wrong.join(", ")}. Valid values: ${jobStatuses.join(", ")}`
      })
    }
    const order = (url.searchParams.get("sort_order") ?? "desc").toLowerCase()
    if (order !== "asc" && order !== "desc") {
      return sendJson(response, 400, { error: "sort_order must be 'asc' or 'desc'" })
    }
    const limitParam = url.searchParams.get("limit")
    const limit = limitParam === null ? undefined : Number(limitParam)
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) {
      return sendJson(response, 400, { error: "limit must be a positive integer" })
    }
    const offset = Math.max(0, Number(url.searchParams.get("offset") ?? 0) || 0)
    const all: Array<Json> = [
      ...[...running].map((job) => queuedJob(job, "in_progress")),
      ...pending.map((job) => queuedJob(job, "pending")),
      ...[...history].map(([id, entry]) => historyJob(id, entry, false))
    ].filter((job) => statuses.includes(String(job["status"])))
    const time = (job: Json) => (typeof job["create_time"] === "number" ? job["create_time"] : 0)
    all.sort((a, b) => (order === "desc" ? time(b) - time(a) : time(a) - time(b)))
    const page = all.slice(offset, limit === undefined ? undefined : offset + limit)
    sendJson(response, 200, {
      jobs: page,
      pagination: { offset, limit: limit ?? null, total: all.length, has_more: offset + page.length < all.length }
    })
  }

  return { jobView, listJobs }
}
