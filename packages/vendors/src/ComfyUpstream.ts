/**
 * The `comfyui` transport: a self-hosted ComfyUI server (docs/channels.md, "ComfyUI").
 *
 * - The channel stores API-format workflows (`settings.workflows`, by name); a model's mapping `target` names one
 *   (default: the model id). submit copies the workflow's graph, puts the (mapped) input's fields into node inputs —
 *   a field named `<node id>.<input name>` goes there, any other field where the workflow's `inputs` binds it, the
 *   rest is left out — and `POST /prompt { prompt, client_id, extra_data: { mediagate_submit: <task>.<channel> } }`.
 *   A graph ComfyUI refuses (400, `node_errors`) fails the task with ComfyUI's message. The job id is the
 *   `prompt_id`.
 * - find (after an uncertain submit): the prompt whose `extra_data` holds the task's key, in `GET /queue`, else in
 *   `GET /history?max_items=256`; none: submitting again is safe.
 * - poll: `GET /history/{id}`: absent while queued or running (`GET /queue` tells which; a running prompt's progress
 *   comes from ComfyUI's `/ws` messages where the socket opens: {@link progressSocket}); done with `status_str:
 *   "success"` → the files of its output nodes (`images`, `gifs`, `videos`: each fetched from `/view?filename=&
 *   subfolder=&type=`; an output mapping sees the outputs with a `url` on each file) are copied; `error` → failed
 *   with the node's exception message. A prompt neither in the queue nor in the history (the server restarted)
 *   fails the task.
 * - cancel: `POST /interrupt { prompt_id }` (when running) and `POST /queue { delete: [id] }` (when pending).
 * - An API key, when set, is sent as `Authorization: Bearer` for the proxy in front of ComfyUI (it has none itself).
 * - `ws` is loaded when a progress socket first opens: importing this module costs nothing.
 *
 * @since 0.1.0
 */
import type { Channel } from "@mediagate/contract"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { type FindResult, type JobState, submitKey, Upstream, type UpstreamError } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { createRequire } from "node:module"
import type WebSocket from "ws"
import {
  call,
  elapsedProgress,
  field,
  mappedInput,
  refused,
  stringField,
  type Transport,
  type TransportContext
} from "./internal/upstreamHttp.js"
import * as Mapping from "./Mapping.js"
import * as ResultCopy from "./ResultCopy.js"

const who = "comfyui"

/**
 * The `extra_data` field that holds a prompt's submit key (the task and channel: `Upstream.submitKey`).
 *
 * @since 0.1.0
 * @category constants
 */
export const submitTag = "mediagate_submit"

/** How many of the last finished prompts a lookup after an uncertain submit reads. */
const historyLookback = 256

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Why a stored workflow cannot run, or `undefined`: nodes with a `class_type` and `inputs`; bindings to its nodes.
 *
 * @since 0.1.0
 * @category utils
 */
export const workflowProblem = (workflow: Channel.ComfyWorkflow): string | undefined => {
  const nodes = Object.entries(workflow.graph)
  if (nodes.length === 0) return "graph: must hold at least one node"
  for (const [id, node] of nodes) {
    if (!isRecord(node) || typeof node["class_type"] !== "string" || !isRecord(node["inputs"])) {
      return `graph.${id}: must be an API-format node { class_type, inputs } (export the workflow with "Export (API)")`
    }
  }
  for (const [name, place] of Object.entries(workflow.inputs ?? {})) {
    const dot = place.indexOf(".")
    if (dot <= 0 || dot === place.length - 1) return `inputs.${name}: must be <node id>.<input name>`
    if (workflow.graph[place.slice(0, dot)] === undefined) {
      return `inputs.${name}: no node ${place.slice(0, dot)} in the graph`
    }
  }
  return undefined
}

/**
 * The workflow's graph with the fields of `input` placed into its node inputs (see the module's comment).
 *
 * @since 0.1.0
 * @category utils
 */
export const placeInputs = (workflow: Channel.ComfyWorkflow, input: Readonly<Record<string, unknown>>) => {
  const graph = structuredClone(workflow.graph) as Record<string, { inputs: Record<string, unknown> }>
  const place = (at: string, value: unknown) => {
    const dot = at.indexOf(".")
    const node = dot > 0 ? graph[at.slice(0, dot)] : undefined
    if (node === undefined || !isRecord(node.inputs)) return false
    node.inputs[at.slice(dot + 1)] = value
    return true
  }
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue
    if (!place(name, value)) {
      const bound = workflow.inputs?.[name]
      if (bound !== undefined) place(bound, value)
    }
  }
  return graph
}

/** The output files of a history entry, each with the URL it is fetched from. */
const outputsWithUrls = (baseUrl: string, outputs: unknown): unknown => {
  if (!isRecord(outputs)) return {}
  const withUrl = (file: unknown) => {
    if (!isRecord(file) || typeof file["filename"] !== "string") return file
    const query = new URLSearchParams({
      filename: file["filename"],
      subfolder: typeof file["subfolder"] === "string" ? file["subfolder"] : "",
      type: typeof file["type"] === "string" ? file["type"] : "output"
    })
    return { ...file, url: `${baseUrl}/view?${query}` }
  }
  return Object.fromEntries(
    Object.entries(outputs).map(([node, output]) => [
      node,
      isRecord(output)
        ? Object.fromEntries(
          Object.entries(output).map(([key, files]) => [key, Array.isArray(files) ? files.map(withUrl) : files])
        )
        : output
    ])
  )
}

/** The files of the output nodes (images, gifs, videos; not previews or temporary files). */
const defaultFiles = (outputs: unknown): ReadonlyArray<Mapping.ResultSource> => {
  if (!isRecord(outputs)) return []
  return Object.values(outputs).flatMap((output) =>
    isRecord(output)
      ? ["images", "gifs", "videos", "audio"].flatMap((key) => {
        const files = output[key]
        return Array.isArray(files)
          ? files.filter((file) => isRecord(file) && typeof file["url"] === "string" && file["type"] !== "temp")
            .map((file) => ({ url: (file as { url: string }).url }))
          : []
      })
      : []
  )
}

/** The message of a failed prompt's history entry. */
const failureOf = (entry: unknown): string => {
  const messages = field(field(entry, "status"), "messages")
  if (Array.isArray(messages)) {
    for (const message of messages) {
      if (Array.isArray(message) && (message[0] === "execution_error" || message[0] === "execution_interrupted")) {
        const data = message[1]
        if (message[0] === "execution_interrupted") return "the prompt was interrupted"
        const node = stringField(data, "node_type") ?? stringField(data, "node_id")
        return `${node === undefined ? "" : `${node}: `}${
          stringField(data, "exception_message")?.trim() ?? "execution failed"
        }`
      }
    }
  }
  return "the prompt failed"
}

let wsModule: typeof WebSocket | undefined
/** `ws`'s WebSocket, loaded on first use (a CommonJS module: `require` loads it synchronously, as `open` needs). */
const loadWebSocket = () => (wsModule ??= createRequire(import.meta.url)("ws") as typeof WebSocket)

/** How long the progress socket stays open without a poll asking for progress. */
const socketIdleMs = 60_000

/**
 * A channel's view of ComfyUI's `/ws` progress messages for its prompts (sent with `client_id` `clientId`): the last
 * `progress { value, max }` of each running prompt, as a percentage. The socket opens when a poll first asks, closes
 * after a minute without one, and opens again on the next; where it cannot open (an older server, a proxy that
 * refuses WebSockets), progress comes from the time the prompt ran.
 *
 * @since 0.1.0
 * @category utils
 */
export const progressSocket = (baseUrl: string, clientId: string, headers: Readonly<Record<string, string>>) => {
  const progress = new Map<string, number>()
  let socket: WebSocket | undefined
  let lastAsked = 0
  let idle: NodeJS.Timeout | undefined
  const open = () => {
    const url = `${baseUrl.replace(/^http/, "ws")}/ws?clientId=${encodeURIComponent(clientId)}`
    const opened = new (loadWebSocket())(url, { headers: { ...headers } })
    socket = opened
    opened.on("message", (data, binary) => {
      // binary frames are previews
      if (binary) return
      let message: unknown
      try {
        message = JSON.parse(String(data))
      } catch {
        return
      }
      const type = stringField(message, "type")
      const body = field(message, "data")
      const prompt = stringField(body, "prompt_id")
      if (prompt === undefined) return
      if (type === "progress") {
        const value = Number(field(body, "value"))
        const max = Number(field(body, "max"))
        if (Number.isFinite(value) && Number.isFinite(max) && max > 0) {
          progress.set(prompt, Math.max(1, Math.min(99, Math.round((value / max) * 100))))
        }
      } else if (type === "execution_success" || type === "execution_error" || type === "execution_interrupted") {
        progress.delete(prompt)
      }
    })
    const gone = () => {
      if (socket === opened) socket = undefined
      progress.clear()
    }
    opened.on("close", gone)
    opened.on("error", gone)
  }
  const closeIfIdle = () => {
    if (Date.now() - lastAsked < socketIdleMs) {
      idle = setTimeout(closeIfIdle, socketIdleMs).unref()
      return
    }
    idle = undefined
    socket?.close()
    socket = undefined
  }
  return {
    /** A running prompt's progress (0–99) as ComfyUI last reported it; undefined when it did not. */
    of: (promptId: string): number | undefined => {
      lastAsked = Date.now()
      if (socket === undefined) open()
      if (idle === undefined) idle = setTimeout(closeIfIdle, socketIdleMs).unref()
      return progress.get(promptId)
    }
  }
}

/**
 * Builds the ComfyUI transport of a channel.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (context: TransportContext): Transport => {
  const apiKey = context.channel.credentials.apiKey
  const auth: Record<string, string> = apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(apiKey)}` }
  const api = call(context, who, auth)
  const workflows = context.channel.settings.workflows ?? {}
  const copyPolicy = context.policy
  const clientId = `mediagate-${context.channel.id}`
  const sockets = progressSocket(context.baseUrl, clientId, auth)

  const submit = (task: TaskRecord) =>
    Effect.gen(function*() {
      const compiled = context.mapping(task.model)
      const workflow = workflows[compiled.target]
      if (workflow === undefined) {
        return yield* refused(`${who}: no workflow named ${compiled.target} (model ${task.model}) on the channel`)
      }
      const input = yield* mappedInput(who, compiled, task)
      const answer = yield* api({
        method: "POST",
        path: "/prompt",
        json: {
          prompt: placeInputs(workflow, input),
          client_id: clientId,
          extra_data: { [submitTag]: submitKey(task) }
        },
        creates: true
      })
      const id = stringField(answer.json, "prompt_id")
      if (id === undefined) return yield* refused(`${who}: the /prompt answer has no prompt_id`)
      return { jobId: id }
    })

  /** Where a prompt without history is: running, pending, or unknown to the server. */
  const inQueue = (jobId: string) =>
    Effect.map(api({ path: "/queue" }), (answer) => {
      const holds = (list: unknown) =>
        Array.isArray(list) && list.some((item) => Array.isArray(item) && item[1] === jobId)
      return holds(field(answer.json, "queue_running"))
        ? "running" as const
        : holds(field(answer.json, "queue_pending"))
        ? "pending" as const
        : "unknown" as const
    })

  /**
   * The prompt an uncertain submit of the task made, by the task's key in its `extra_data`: in the queue (running or
   * pending), else among the last {@link historyLookback} prompts of the history; none found: submitting again is safe.
   */
  const find = (task: TaskRecord): Effect.Effect<FindResult, UpstreamError> =>
    Effect.gen(function*() {
      const key = submitKey(task)
      // a queue item and a history entry's `prompt` are [number, prompt_id, graph, extra_data, outputs to execute]
      const tagged = (item: unknown): string | undefined =>
        Array.isArray(item) && stringField(item[3], submitTag) === key && typeof item[1] === "string"
          ? item[1]
          : undefined
      const queue = (yield* api({ path: "/queue" })).json
      const queued = [field(queue, "queue_running"), field(queue, "queue_pending")]
        .flatMap((list) => Array.isArray(list) ? list : [])
        .map(tagged)
        .find((id) => id !== undefined)
      if (queued !== undefined) return { _tag: "Found", jobId: queued } as const
      const history = (yield* api({ path: `/history?max_items=${historyLookback}` })).json
      const done = isRecord(history)
        ? Object.values(history).map((entry) => tagged(field(entry, "prompt"))).find((id) => id !== undefined)
        : undefined
      return done === undefined ? { _tag: "NotFound" } as const : { _tag: "Found", jobId: done } as const
    })

  const history = (jobId: string) =>
    Effect.map(api({ path: `/history/${encodeURIComponent(jobId)}` }), (answer) => field(answer.json, jobId))

  const poll = (task: TaskRecord, jobId: string): Effect.Effect<JobState, UpstreamError> =>
    Effect.gen(function*() {
      let entry = yield* history(jobId)
      if (entry === undefined) {
        const where = yield* inQueue(jobId)
        if (where === "pending") return { _tag: "Queued" } as const
        if (where === "running") {
          const reported = sockets.of(jobId)
          return {
            _tag: "Running",
            progress: reported ?? elapsedProgress(task, yield* Clock.currentTimeMillis)
          } as const
        }
        // it may have ended between the two reads
        entry = yield* history(jobId)
        if (entry === undefined) {
          return {
            _tag: "Failed",
            code: "PROVIDER_ERROR",
            message: `${who}: the server no longer knows prompt ${jobId} (it restarted, or the prompt was deleted)`
          } as const
        }
      }
      const status = field(entry, "status")
      if (stringField(status, "status_str") === "error") {
        return { _tag: "Failed", code: "PROVIDER_ERROR", message: `${who}: ${failureOf(entry)}` } as const
      }
      if (status !== undefined && field(status, "completed") === false) {
        return { _tag: "Running", progress: elapsedProgress(task, yield* Clock.currentTimeMillis) } as const
      }
      const outputs = outputsWithUrls(context.baseUrl, field(entry, "outputs"))
      const compiled = context.mapping(task.model)
      const sources = compiled.output === undefined
        ? defaultFiles(outputs)
        : yield* Mapping.mapOutput(compiled, task.model, outputs)
      // files come from the channel's own host, with its key
      const withAuth = sources.map((source) => ({ ...source, headers: auth }))
      const state = yield* context.copier.collect(task, jobId, withAuth, copyPolicy)
      return ResultCopy.jobState(state)
    })

  const cancel = (_task: TaskRecord, jobId: string) =>
    Effect.all([
      api({ method: "POST", path: "/queue", json: { delete: [jobId] }, accept: () => true, repeatable: true }),
      Effect.flatMap(inQueue(jobId), (where) =>
        where === "running"
          ? api({
            method: "POST",
            path: "/interrupt",
            json: { prompt_id: jobId },
            accept: () => true,
            repeatable: true
          })
          : Effect.void)
    ], { discard: true }).pipe(Effect.ignore)

  return {
    upstream: Upstream.of({ submit, find, poll, cancel, changes: Stream.empty, notifiesChanges: false })
  }
}
