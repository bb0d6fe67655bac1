/**
 * A Replicate prediction's timeline, computed from its timestamps on every read: how and when it ends, its
 * tqdm-like log lines, and its JSON as the API answers it at a given moment. Also the fake's ids.
 */
import { createHash, randomBytes } from "node:crypto"
import {
  alphabet,
  type Ending,
  type Mutable,
  progressSteps,
  type ReplicatePrediction,
  type ReplicatePredictionJson,
  type ReplicateStatus
} from "./types.js"

/** The deterministic 64-hex version id the fake gives a model's latest version. */
export const replicateVersionOf = (model: string): string =>
  createHash("sha256").update(`mediagate-fake-replicate:${model}`).digest("hex")

/** A random string of `length` characters from `[a-z0-9]`. */
export const randomId = (length: number) => {
  const bytes = randomBytes(length)
  let id = ""
  for (const byte of bytes) id += alphabet[byte % alphabet.length]
  return id
}

/** When and how a prediction ends (natural end, cancel or deadline, whichever first). */
export const ending = (p: ReplicatePrediction): Ending => {
  const canceled = p.canceledAt ?? Infinity
  const deadline = p.deadlineAt ?? Infinity
  if (p.completesAt <= canceled && p.completesAt <= deadline) {
    return { at: p.completesAt, status: p.plan.fail === undefined ? "succeeded" : "failed" }
  }
  if (canceled <= deadline) return { at: canceled, status: "canceled" }
  return { at: deadline, status: deadline < p.startsAt ? "aborted" : "canceled" }
}

/** When log line `n` appears (`undefined` past the progress lines). */
export const lineTime = (p: ReplicatePrediction, n: number): number | undefined => {
  if (n === 0) return p.startsAt
  if (n > progressSteps) return undefined
  return p.startsAt + ((p.completesAt - p.startsAt) * n) / (progressSteps + 1)
}

/** How many log lines have appeared at `t` (before the natural end). */
export const lineCount = (p: ReplicatePrediction, t: number) => {
  let count = 0
  for (let n = 0; n <= progressSteps; n++) {
    const at = lineTime(p, n)
    if (at === undefined || at > t) break
    count++
  }
  return count
}

const progressLine = (p: ReplicatePrediction, k: number) => {
  const elapsed = (((p.completesAt - p.startsAt) * k) / (progressSteps + 1) / 1000).toFixed(2)
  const bar = "█".repeat(k) + " ".repeat(progressSteps - k)
  return `${String((k * 100) / progressSteps).padStart(3)}%|${bar}| ${k}/${progressSteps} [${elapsed}s]`
}

/** The logs at `t` (clamped to the end by the caller); `final` adds the natural end's line. */
const logsAt = (p: ReplicatePrediction, t: number, final: boolean) => {
  const count = lineCount(p, t)
  const lines: Array<string> = []
  for (let n = 0; n < count; n++) lines.push(n === 0 ? `Running ${p.model}` : progressLine(p, n))
  if (final) {
    lines.push(
      p.plan.fail === undefined
        ? `Prediction completed in ${((p.completesAt - p.startsAt) / 1000).toFixed(2)}s`
        : `Error: ${p.plan.fail}`
    )
  }
  return lines.join("\n")
}

const iso = (ms: number) => new Date(ms).toISOString()
const seconds = (ms: number) => Math.round(ms) / 1000

/**
 * The prediction's JSON at `now`. `outputEvent` answers the moment output appears before the natural end: still
 * `processing`, with its output (what an `output` webhook carries).
 */
export const viewOf = (
  p: ReplicatePrediction,
  base: string,
  now: number,
  outputEvent = false
): ReplicatePredictionJson => {
  const end = ending(p)
  const terminal = !outputEvent && now >= end.at
  const t = outputEvent ? p.completesAt : Math.min(now, end.at)
  const status: ReplicateStatus = terminal ? end.status : t >= p.startsAt ? "processing" : "starting"
  const natural = terminal && (end.status === "succeeded" || end.status === "failed")
  const succeeded = (terminal && end.status === "succeeded") || outputEvent
  const output = !succeeded ? null : p.outputUrls.length === 1 ? p.outputUrls[0]! : p.outputUrls
  const started = t >= p.startsAt
  const metrics: Mutable<ReplicatePredictionJson["metrics"]> = {}
  if (terminal) {
    metrics.total_time = seconds(end.at - p.createdAt)
    if (end.status === "succeeded") metrics.predict_time = p.plan.seconds ?? p.plan.durationMs / 1000
    else if (started) metrics.predict_time = seconds(end.at - p.startsAt)
  }
  const urls = {
    get: `${base}/v1/predictions/${p.id}`,
    cancel: `${base}/v1/predictions/${p.id}/cancel`,
    stream: `${base}/v1/streams/${p.id}`,
    web: `https://replicate.com/p/${p.id}`
  }
  return {
    id: p.id,
    model: p.model,
    version: p.version,
    input: p.input,
    logs: logsAt(p, t, natural),
    output,
    data_removed: false,
    error: terminal && end.status === "failed" ? p.plan.fail ?? "the model failed" : null,
    status,
    source: "api",
    created_at: iso(p.createdAt),
    started_at: started ? iso(p.startsAt) : null,
    completed_at: terminal ? iso(end.at) : null,
    ...(p.deadlineAt === undefined ? {} : { deadline: iso(p.deadlineAt) }),
    ...(p.deployment === undefined ? {} : { deployment: p.deployment }),
    urls,
    metrics
  }
}
