/**
 * A fake self-hosted ComfyUI server: the HTTP API of `server.py` (every route also under `/api`) and the `/ws`
 * WebSocket of the web UI, with ComfyUI's queue (one prompt at a time unless `parallel` says otherwise), history,
 * `/view` files, `/interrupt`, `/queue` deletion and the `/api/jobs` routes of newer builds.
 *
 * A prompt's behaviour comes from `planOf` (see `common.ts`) applied to `{ prompt, workflow }`, where `prompt` is
 * the first string input named `text` or `prompt` in the graph (so `[fake:fail=boom]` in a CLIPTextEncode text
 * works) and `workflow` is the API-format graph; the model name is `"comfyui"`. The graph is validated like ComfyUI
 * does, without a node registry: any `class_type` is accepted, and the output nodes are `SaveImage`,
 * `PreviewImage`, `SaveVideo`, `SaveAnimatedWEBP` and `VHS_VideoCombine`. Each output node saves the plan's
 * outputs (an output with a `name` is saved under that file name; an output's `url` is ignored, since ComfyUI
 * answers files only through `/view`); a video output node turns the default PNG into an MP4.
 *
 * What is ComfyUI's own behaviour, kept on purpose: `/history/{id}` is `{}` until the prompt is done, a failed or
 * interrupted prompt ends with `status_str: "error"`, an `exception_message` ends with a newline, `progress` and
 * `execution_interrupted` go to every socket when the prompt has no `client_id`, and a `prompt_id` sent by the
 * client must be a lowercase hyphenated UUID (newer builds). Not modelled: uploads, models, `progress_state` and
 * preview-image messages, caching (`execution_cached` is always empty).
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { WebSocket, WebSocketServer } from "ws"
import {
  close,
  countJobs,
  type FakeOutput,
  type FakePlan,
  faultedSubmit,
  listen,
  type LoggedRequest,
  mp4Bytes,
  type Planner,
  planOf,
  pngBytes,
  readBody,
  sendJson,
  type SubmitFault
} from "./common.js"

/** How the fake behaves. */
export interface ComfyFakeOptions {
  /** When set, every request (and the WebSocket upgrade) must carry `Authorization: Bearer <apiKey>`, else 401. */
  readonly apiKey?: string
  /** Plans each prompt (given `{ prompt, workflow }` and `"comfyui"`), before the prompt's directives. */
  readonly plan?: Planner
  /** How many prompts run at once (default 1, like ComfyUI). */
  readonly parallel?: number
  /** The port to listen on (default: a free one). */
  readonly port?: number
}

/** A prompt the fake accepted. */
export interface ComfyJob {
  /** The prompt id. */
  readonly id: string
  /** Its queue number (lower runs first). */
  readonly number: number
  /** The API-format workflow. */
  readonly graph: Record<string, unknown>
  /** The `client_id` it was sent with. */
  readonly clientId: string | undefined
  readonly plan: FakePlan
  state: "pending" | "running" | "success" | "error" | "interrupted" | "deleted"
}

/** A running fake. */
export interface ComfyFake {
  /** Base URL, `http://127.0.0.1:<port>` (the WebSocket is `ws://127.0.0.1:<port>/ws`). */
  readonly url: string
  /** Every accepted prompt by id. */
  readonly jobs: ReadonlyMap<string, ComfyJob>
  /** The requests received (WebSocket upgrades included), the last 100,000. */
  readonly requests: ReadonlyArray<LoggedRequest>
  /** How many requests reached each route (after the `down` and key checks). */
  readonly counts: () => { prompt: number; history: number; view: number; interrupt: number; queueDelete: number }
  /** While true, every HTTP request (and WebSocket upgrade) answers 503. */
  down: boolean
  /** Faults for the next `POST /prompt`s, one each, taken from the front (`common.ts`). */
  readonly submitFaults: Array<SubmitFault>
  /** How many prompts mention `text` (a task id) in their graph or `extra_data`. */
  readonly jobCount: (text: string) => number
  /** Stops the prompts, closes the sockets and the server. */
  readonly close: () => Promise<void>
}

/**
 * A minimal valid text-to-image API-format workflow (CheckpointLoaderSimple, CLIPTextEncode ×2, EmptyLatentImage,
 * KSampler, VAEDecode, SaveImage), for tests and docs. The positive prompt is node "6"'s `text`; clone it to edit.
 */
export const textToImageWorkflow: Record<string, unknown> = {
  "3": {
    class_type: "KSampler",
    inputs: {
      seed: 156680208700286,
      steps: 20,
      cfg: 8,
      sampler_name: "euler",
      scheduler: "normal",
      denoise: 1,
      model: ["4", 0],
      positive: ["6", 0],
      negative: ["7", 0],
      latent_image: ["5", 0]
    },
    _meta: { title: "KSampler" }
  },
  "4": {
    class_type: "CheckpointLoaderSimple",
    inputs: { ckpt_name: "v1-5-pruned-emaonly.safetensors" },
    _meta: { title: "Load Checkpoint" }
  },
  "5": {
    class_type: "EmptyLatentImage",
    inputs: { width: 512, height: 512, batch_size: 1 },
    _meta: { title: "Empty Latent Image" }
  },
  "6": {
    class_type: "CLIPTextEncode",
    inputs: { text: "a lighthouse on a cliff at dawn", clip: ["4", 1] },
    _meta: { title: "CLIP Text Encode (Positive Prompt)" }
  },
  "7": {
    class_type: "CLIPTextEncode",
    inputs: { text: "blurry, low quality", clip: ["4", 1] },
    _meta: { title: "CLIP Text Encode (Negative Prompt)" }
  },
  "8": {
    class_type: "VAEDecode",
    inputs: { samples: ["3", 0], vae: ["4", 2] },
    _meta: { title: "VAE Decode" }
  },
  "9": {
    class_type: "SaveImage",
    inputs: { filename_prefix: "ComfyUI", images: ["8", 0] },
    _meta: { title: "Save Image" }
  }
}

type Json = Record<string, unknown>
type Message = [string, Json]

interface ValidationError {
  readonly type: string
  readonly message: string
  readonly details: string
  readonly extra_info: Json
}

interface NodeErrors {
  errors: Array<ValidationError>
  dependent_outputs: Array<string>
  class_type: string
}

interface Node {
  readonly class_type: string
  readonly inputs: Json
}

interface Job extends ComfyJob {
  readonly seq: number
  readonly nodes: Readonly<Record<string, Node>>
  readonly extraData: Json
  readonly outputNodes: ReadonlyArray<string>
  /** The nodes to run, in order. */
  readonly order: ReadonlyArray<string>
  /** Whether the plan chose the outputs (a video output node leaves them alone then). */
  readonly explicitOutputs: boolean
  readonly createdAt: number
  abort: AbortController | undefined
  currentNode: string | undefined
}

interface HistoryEntry {
  readonly prompt: [number, string, Json, Json, Array<string>]
  readonly outputs: Record<string, Json>
  readonly status: { status_str: "success" | "error"; completed: boolean; messages: Array<Message> }
  readonly meta: Record<string, Json>
}

interface StoredFile {
  readonly bytes: Uint8Array
  readonly contentType: string
}

const outputClasses = new Set(["SaveImage", "PreviewImage", "SaveVideo", "SaveAnimatedWEBP", "VHS_VideoCombine"])
const videoClasses = new Set(["SaveVideo", "VHS_VideoCombine"])
const sensitiveExtraData = ["auth_token_comfy_org", "api_key_comfy_org"]
const maxRequests = 100_000
const maxHistory = 10_000
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const jobStatuses = ["pending", "in_progress", "completed", "failed", "cancelled"]
const extensions: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/gif": "gif",
  "video/mp4": "mp4",
  "video/webm": "webm"
}

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener("abort", done)
  })

const sendEmpty = (response: ServerResponse, status: number) => {
  response.writeHead(status, { "content-length": 0 })
  response.end()
}

/** aiohttp's plain-text error pages (`404: Not Found`). */
const sendText = (response: ServerResponse, status: number) => {
  const text = `${status}: ${STATUS_CODES[status] ?? ""}`
  response.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) })
  response.end(text)
}

const readJson = async (request: IncomingMessage): Promise<{ readonly value: unknown } | undefined> => {
  const text = await readBody(request)
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}

/** The first string input named `text` or `prompt` in the graph. */
const promptTextOf = (nodes: Record<string, Node>): string | undefined => {
  for (const node of Object.values(nodes)) {
    for (const [name, value] of Object.entries(node.inputs)) {
      if ((name === "text" || name === "prompt") && typeof value === "string") return value
    }
  }
  return undefined
}

/** Thrown where ComfyUI's `prompt[o_id]` raises a `KeyError`: a link to a node that is not in the graph. */
class MissingNode {
  constructor(readonly id: unknown) {}
  get text() {
    return typeof this.id === "string" ? `'${this.id}'` : String(this.id)
  }
}

type Validation =
  | { readonly ok: true; readonly outputs: Array<string>; readonly nodeErrors: Record<string, NodeErrors> }
  | { readonly ok: false; readonly error: ValidationError; readonly nodeErrors: Record<string, NodeErrors> }

const invalid = (type: string, message: string, details = ""): Validation => ({
  ok: false,
  error: { type, message, details, extra_info: {} },
  nodeErrors: {}
})

/** ComfyUI's `validate_prompt`, minus the node registry (no input types, no required inputs, no value lists). */
const validatePrompt = (prompt: unknown, targets: unknown): Validation => {
  if (!isObject(prompt)) return invalid("invalid_prompt", "The prompt must be a JSON object of nodes", "")
  const nodes: Record<string, Node> = {}
  const outputs: Array<string> = []
  for (const [id, node] of Object.entries(prompt)) {
    if (!isObject(node) || typeof node["class_type"] !== "string") {
      return invalid(
        "invalid_prompt",
        "Cannot execute because a node is missing the class_type property.",
        `Node ID '#${id}'`
      )
    }
    if (!isObject(node["inputs"])) {
      const message = `Cannot execute because node ${node["class_type"]} has no inputs.`
      return invalid("invalid_prompt", message, `Node ID '#${id}'`)
    }
    nodes[id] = { class_type: node["class_type"], inputs: node["inputs"] }
    const targeted = !Array.isArray(targets) || targets.includes(id)
    if (outputClasses.has(node["class_type"]) && targeted) outputs.push(id)
  }
  if (outputs.length === 0) return invalid("prompt_no_outputs", "Prompt has no outputs")

  const validated = new Map<string, { valid: boolean; reasons: Array<ValidationError> }>()
  const validate = (id: string, visiting: Array<string>): { valid: boolean; reasons: Array<ValidationError> } => {
    const known = validated.get(id)
    if (known !== undefined) return known
    if (visiting.includes(id)) {
      const cycle = [...visiting.slice(visiting.indexOf(id)), id]
      const path = cycle.map((node) => `${node} (${nodes[node]!.class_type})`).join(" -> ")
      for (const node of new Set(cycle)) {
        validated.set(node, {
          valid: false,
          reasons: [{
            type: "dependency_cycle",
            message: "Dependency cycle detected",
            details: path,
            extra_info: { node_id: node, cycle_nodes: [...new Set(cycle)] }
          }]
        })
      }
      return validated.get(id)!
    }
    const errors: Array<ValidationError> = []
    let valid = true
    for (const [name, value] of Object.entries(nodes[id]!.inputs)) {
      if (!Array.isArray(value)) continue
      if (value.length !== 2) {
        errors.push({
          type: "bad_linked_input",
          message: "Bad linked input, must be a length-2 list of [node_id, slot_index]",
          details: name,
          extra_info: { input_name: name, input_config: null, received_value: value }
        })
        continue
      }
      const target: unknown = value[0]
      if (typeof target !== "string" || !(target in nodes)) throw new MissingNode(target)
      try {
        if (!validate(target, [...visiting, id]).valid) valid = false
      } catch (error) {
        if (!(error instanceof MissingNode)) throw error
        valid = false
        validated.set(target, {
          valid: false,
          reasons: [{
            type: "exception_during_inner_validation",
            message: "Exception when validating inner node",
            details: error.text,
            extra_info: {
              input_name: name,
              input_config: null,
              exception_message: error.text,
              exception_type: "KeyError",
              traceback: [],
              linked_node: value
            }
          }]
        })
      }
    }
    const prior = validated.get(id) ?? { valid: true, reasons: [] }
    const result = { valid: prior.valid && valid && errors.length === 0, reasons: [...prior.reasons, ...errors] }
    validated.set(id, result)
    return result
  }

  const good: Array<string> = []
  const failed: Array<ValidationError> = []
  const nodeErrors: Record<string, NodeErrors> = {}
  for (const output of outputs) {
    let result: { valid: boolean; reasons: Array<ValidationError> }
    try {
      result = validate(output, [])
    } catch (error) {
      if (!(error instanceof MissingNode)) throw error
      result = {
        valid: false,
        reasons: [{
          type: "exception_during_validation",
          message: "Exception when validating node",
          details: error.text,
          extra_info: { exception_type: "KeyError", traceback: [] }
        }]
      }
      validated.set(output, result)
    }
    if (result.valid) {
      good.push(output)
      continue
    }
    for (const reason of result.reasons) failed.push(reason)
    for (const [id, { reasons, valid }] of validated) {
      if (valid || reasons.length === 0) continue
      const entry = nodeErrors[id] ??= { errors: reasons, dependent_outputs: [], class_type: nodes[id]!.class_type }
      entry.dependent_outputs.push(output)
    }
  }
  if (good.length === 0) {
    return {
      ok: false,
      error: {
        type: "prompt_outputs_failed_validation",
        message: "Prompt outputs failed validation",
        details: failed.map((error) => `${error.message}: ${error.details}`).join("\n"),
        extra_info: {}
      },
      nodeErrors
    }
  }
  return { ok: true, outputs: good, nodeErrors }
}

/** The nodes the outputs need, each after the nodes it links to (graph order otherwise). */
const executionOrder = (nodes: Record<string, Node>, outputs: ReadonlyArray<string>): Array<string> => {
  const linksOf = (id: string) =>
    Object.values(nodes[id]!.inputs).flatMap((value) =>
      Array.isArray(value) && typeof value[0] === "string" && value[0] in nodes ? [value[0]] : []
    )
  const needed = new Set<string>()
  const visit = (id: string) => {
    if (needed.has(id)) return
    needed.add(id)
    linksOf(id).forEach(visit)
  }
  outputs.forEach(visit)
  const order: Array<string> = []
  const done = new Set<string>()
  const remaining = Object.keys(nodes).filter((id) => needed.has(id))
  while (remaining.length > 0) {
    const index = remaining.findIndex((id) => linksOf(id).every((link) => done.has(link)))
    const [next] = remaining.splice(index === -1 ? 0 : index, 1)
    order.push(next!)
    done.add(next!)
  }
  return order
}

/** Starts a fake ComfyUI server on 127.0.0.1. */
export const startComfyFake = async (options: ComfyFakeOptions = {}): Promise<ComfyFake> => {
  const parallel = Math.max(1, options.parallel ?? 1)
  const log: Array<LoggedRequest> = []
  const jobs = new Map<string, Job>()
  const pending: Array<Job> = []
  const running = new Set<Job>()
  const history = new Map<string, HistoryEntry>()
  const files = new Map<string, StoredFile>()
  const counters = new Map<string, number>()
  const sockets = new Map<string, WebSocket>()
  const counts = { prompt: 0, history: 0, view: 0, interrupt: 0, queueDelete: 0 }
  let number = 0
  let seq = 0
  let closed = false

  // WebSocket messages

  const send = (socket: WebSocket | undefined, type: string, data: unknown) => {
    if (socket !== undefined && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type, data }))
  }
  /** `send_sync(event, data, sid)`: to one socket, or to all when `sid` is None. */
  const sendSync = (sid: string | undefined, type: string, data: unknown) => {
    if (sid !== undefined) send(sockets.get(sid), type, data)
    else for (const socket of sockets.values()) send(socket, type, data)
  }
  const queueInfo = () => ({ exec_info: { queue_remaining: pending.length + running.size } })
  const queueUpdated = () => sendSync(undefined, "status", { status: queueInfo() })

  // The queue

  const fileKey = (type: string, subfolder: string, filename: string) => `${type}\u0000${subfolder}\u0000${filename}`

  const nextCounter = (key: string) => {
    const next = (counters.get(key) ?? 0) + 1
    counters.set(key, next)
    return next
  }

  /** What an output node saves and answers as its UI output (the `outputs` entry of the history). */
  const save = (job: Job, nodeId: string): Json => {
    const node = job.nodes[nodeId]!
    const video = videoClasses.has(node.class_type)
    const vhs = node.class_type === "VHS_VideoCombine"
    const preview = node.class_type === "PreviewImage" || (vhs && node.inputs["save_output"] === false)
    const defaultPrefix = node.class_type === "SaveVideo" ? "video/ComfyUI" : vhs ? "AnimateDiff" : "ComfyUI"
    const prefixInput = node.inputs["filename_prefix"]
    const prefix = (typeof prefixInput === "string" && prefixInput !== "" ? prefixInput : defaultPrefix)
      .split("/")
      .filter((part) => part !== "" && part !== "." && part !== "..")
    const base = node.class_type === "PreviewImage"
      ? `ComfyUI_temp_${Math.random().toString(36).slice(2, 7).padEnd(5, "x")}`
      : prefix.pop() ?? "ComfyUI"
    const planned: ReadonlyArray<FakeOutput> = video && !job.explicitOutputs
      ? job.plan.outputs.map((output) => ({ ...output, contentType: "video/mp4" }))
      : job.plan.outputs
    const entries = planned.map((output) => {
      const type = preview ? "temp" : "output"
      const extension = extensions[output.contentType] ?? (output.contentType.startsWith("video/") ? "mp4" : "png")
      const subfolder = output.name !== undefined || node.class_type === "PreviewImage" ? "" : prefix.join("/")
      const counter = () => String(nextCounter(`${subfolder}/${base}`)).padStart(5, "0")
      const filename = output.name ?? (vhs ? `${base}_${counter()}.${extension}` : `${base}_${counter()}_.${extension}`)
      const bytes = output.contentType.startsWith("video/") ? mp4Bytes : pngBytes
      files.set(fileKey(type, subfolder, filename), { bytes, contentType: output.contentType })
      if (!vhs) return { filename, subfolder, type }
      const frameRate = node.inputs["frame_rate"]
      const format = node.inputs["format"]
      return {
        filename,
        subfolder,
        type,
        format: output.contentType.startsWith("video/")
          ? typeof format === "string" && format.startsWith("video/") ? format : "video/h264-mp4"
          : output.contentType,
        frame_rate: typeof frameRate === "number" ? frameRate : 8,
        workflow: filename.replace(/\.[^.]+$/, ".png"),
        fullpath: `/ComfyUI/${type}/${subfolder === "" ? "" : `${subfolder}/`}${filename}`
      }
    })
    if (vhs) return { gifs: entries }
    if (node.class_type === "SaveVideo" || node.class_type === "SaveAnimatedWEBP") {
      return { images: entries, animated: [true] }
    }
    return { images: entries }
  }

  /** Runs one prompt like `PromptExecutor.execute` and `prompt_worker`: node by node, then into the history. */
  const run = async (job: Job) => {
    const abort = new AbortController()
    job.state = "running"
    job.abort = abort
    running.add(job)
    queueUpdated()
    const messages: Array<Message> = []
    const addMessage = (event: string, data: Json, broadcast: boolean) => {
      const stamped = { ...data, timestamp: Date.now() }
      messages.push([event, stamped])
      if (job.clientId !== undefined || broadcast) sendSync(job.clientId, event, stamped)
    }
    const toClient = (event: string, data: Json) => {
      if (job.clientId !== undefined) sendSync(job.clientId, event, data)
    }
    addMessage("execution_start", { prompt_id: job.id }, false)
    addMessage("execution_cached", { nodes: [], prompt_id: job.id }, false)

    const order = job.order
    const busy = order.find((id) => /Sampler/i.test(job.nodes[id]!.class_type))
      ?? [...order].reverse().find((id) => !job.outputNodes.includes(id))
      ?? order[0]
    const busyMs = order.length === 1 ? job.plan.durationMs : job.plan.durationMs / 2
    const otherMs = order.length === 1 ? 0 : job.plan.durationMs / 2 / (order.length - 1)
    const outputs: Record<string, Json> = {}
    const meta: Record<string, Json> = {}
    const executed: Array<string> = []
    let end: { kind: "success" } | { kind: "error" | "interrupted"; node: string } = { kind: "success" }

    for (const id of order) {
      if (abort.signal.aborted) {
        end = { kind: "interrupted", node: id }
        break
      }
      job.currentNode = id
      toClient("executing", { node: id, display_node: id, prompt_id: job.id })
      if (id === busy && job.plan.fail === undefined) {
        const steps = job.nodes[id]!.inputs["steps"]
        const max = typeof steps === "number" && Number.isInteger(steps) && steps > 0 ? steps : 20
        const ticks = Math.min(max, 4)
        for (let tick = 1; tick <= ticks && !abort.signal.aborted; tick++) {
          await sleep(busyMs / ticks, abort.signal)
          if (abort.signal.aborted) break
          const value = Math.round((max * tick) / ticks)
          sendSync(job.clientId, "progress", { value, max, prompt_id: job.id, node: id })
        }
      } else {
        await sleep(id === busy ? busyMs : otherMs, abort.signal)
      }
      if (closed) return
      if (abort.signal.aborted) {
        end = { kind: "interrupted", node: id }
        break
      }
      if (id === busy && job.plan.fail !== undefined) {
        end = { kind: "error", node: id }
        break
      }
      if (job.outputNodes.includes(id)) {
        const output = save(job, id)
        outputs[id] = output
        meta[id] = { node_id: id, display_node: id, parent_node: null, real_node_id: id }
        toClient("executed", { node: id, display_node: id, output, prompt_id: job.id })
      }
      executed.push(id)
    }
    if (closed) return

    if (end.kind === "success") {
      addMessage("execution_success", { prompt_id: job.id }, false)
    } else {
      const common = { prompt_id: job.id, node_id: end.node, node_type: job.nodes[end.node]!.class_type, executed }
      if (end.kind === "interrupted") {
        addMessage("execution_interrupted", common, true)
      } else {
        addMessage("execution_error", {
          ...common,
          exception_message: `${job.plan.fail}\n`,
          exception_type: "Exception",
          traceback: [],
          current_inputs: {},
          current_outputs: []
        }, false)
      }
    }
    job.state = end.kind
    job.abort = undefined
    job.currentNode = undefined
    running.delete(job)
    if (history.size >= maxHistory) history.delete(history.keys().next().value!)
    history.set(job.id, {
      prompt: [job.number, job.id, job.graph, publicExtra(job.extraData), [...job.outputNodes]],
      outputs,
      status: { status_str: end.kind === "success" ? "success" : "error", completed: end.kind === "success", messages },
      meta
    })
    queueUpdated()
    toClient("executing", { node: null, prompt_id: job.id })
    pump()
  }

  const pump = () => {
    while (!closed && running.size < parallel && pending.length > 0) void run(pending.shift()!)
  }

  const enqueue = (job: Job) => {
    const index = pending.findIndex((other) => other.number > job.number)
    pending.splice(index === -1 ? pending.length : index, 0, job)
    queueUpdated()
    pump()
  }

  const dequeue = (id: string) => {
    const index = pending.findIndex((job) => job.id === id)
    if (index === -1) return false
    const [job] = pending.splice(index, 1)
    job!.state = "deleted"
    queueUpdated()
    return true
  }

  const interrupt = (id?: string) => {
    let hit = false
    for (const job of running) {
      if (id === undefined || job.id === id) {
        job.abort?.abort()
        hit = true
      }
    }
    return hit
  }

  const publicExtra = (extra: Json) =>
    Object.fromEntries(Object.entries(extra).filter(([key]) => !sensitiveExtraData.includes(key)))
  const queueItem = (job: Job) => [job.number, job.id, job.graph, publicExtra(job.extraData), [...job.outputNodes]]

  // The jobs API of newer builds (`comfy_execution/jobs.py`)

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

  const cancel = (id: string) => {
    const job = jobs.get(id)
    if (job?.state === "running") return interrupt(id)
    if (job?.state === "pending") return dequeue(id)
    return false
  }

  // HTTP routes

  /** Checks a prompt and queues it, answering it when `answer`; true when a prompt was queued. */
  const postPrompt = async (
    request: IncomingMessage,
    response: ServerResponse,
    answer = true
  ): Promise<boolean | void> => {
    const body = await readJson(request)
    if (body === undefined || !isObject(body.value)) {
      return sendJson(response, 400, {
        error: { type: "invalid_prompt", message: "The body must be a JSON object", details: "", extra_info: {} },
        node_errors: {}
      })
    }
    const json = body.value
    let jobNumber: number
    if (typeof json["number"] === "number") {
      jobNumber = json["number"]
    } else {
      jobNumber = json["front"] === true ? -number : number
      number++
    }
    if (!("prompt" in json)) {
      return sendJson(response, 400, {
        error: { type: "no_prompt", message: "No prompt provided", details: "No prompt provided", extra_info: {} },
        node_errors: {}
      })
    }
    const given = json["prompt_id"]
    if (given != null && (typeof given !== "string" || !uuidPattern.test(given))) {
      return sendJson(response, 400, {
        error: {
          type: "invalid_prompt_id",
          message: "prompt_id must be a valid UUID",
          details: "prompt_id must be a UUID string in canonical lowercase hyphenated form; " +
            "omit it to let the server generate one",
          extra_info: {}
        },
        node_errors: {}
      })
    }
    const validation = validatePrompt(json["prompt"], json["partial_execution_targets"])
    if (!validation.ok) return sendJson(response, 400, { error: validation.error, node_errors: validation.nodeErrors })

    const id = typeof given === "string" ? given : randomUUID()
    const graph = json["prompt"] as Json
    const nodes = Object.fromEntries(
      Object.entries(graph).map(([key, node]) => {
        const { class_type, inputs } = node as Node
        return [key, { class_type, inputs }]
      })
    )
    const extraData: Json = { ...(isObject(json["extra_data"]) ? json["extra_data"] : {}) }
    const clientId = json["client_id"]
    if ("client_id" in json) extraData["client_id"] = clientId
    extraData["create_time"] = Date.now()
    const text = promptTextOf(nodes)
    let explicitOutputs = text !== undefined && /\[fake:(video|output=[^\]]+)\]/.test(text)
    const planner = options.plan
    const plan = planOf(
      text === undefined ? { workflow: graph } : { prompt: text, workflow: graph },
      "comfyui",
      planner === undefined ? undefined : (input, model) => {
        const partial = planner(input, model)
        if (partial.outputs !== undefined) explicitOutputs = true
        return partial
      }
    )
    const job: Job = {
      id,
      number: jobNumber,
      graph,
      clientId: typeof clientId === "string" ? clientId : undefined,
      plan,
      state: "pending",
      seq: seq++,
      nodes,
      extraData,
      outputNodes: validation.outputs,
      order: executionOrder(nodes, validation.outputs),
      explicitOutputs,
      createdAt: Date.now(),
      abort: undefined,
      currentNode: undefined
    }
    jobs.set(id, job)
    if (answer) sendJson(response, 200, { prompt_id: id, number: jobNumber, node_errors: validation.nodeErrors })
    enqueue(job)
    return true
  }

  const getHistory = (url: URL) => {
    const entries = [...history.entries()]
    const maxItems = url.searchParams.has("max_items") ? Number(url.searchParams.get("max_items")) : undefined
    const offsetParam = url.searchParams.has("offset") ? Number(url.searchParams.get("offset")) : -1
    const offset = offsetParam < 0 && maxItems !== undefined ? entries.length - maxItems : offsetParam
    const out: Json = {}
    let index = 0
    for (const [id, entry] of entries) {
      if (index >= offset) {
        out[id] = entry
        if (maxItems !== undefined && Object.keys(out).length >= maxItems) break
      }
      index++
    }
    return out
  }

  const view = (url: URL, response: ServerResponse) => {
    let filename = url.searchParams.get("filename")
    if (filename === null) return sendText(response, 404)
    let type = url.searchParams.get("type") ?? "output"
    const annotated = /^(.*) \[(output|input|temp)\]$/.exec(filename)
    if (annotated !== null) {
      filename = annotated[1]!
      type = annotated[2]!
    }
    if (filename === "" || filename.startsWith("/") || filename.includes("..")) return sendText(response, 400)
    const subfolder = url.searchParams.get("subfolder") ?? ""
    if (subfolder.split("/").includes("..")) return sendText(response, 403)
    const file = files.get(fileKey(type, subfolder.replace(/^\/+|\/+$/g, ""), filename.split("/").pop()!))
    if (file === undefined) return sendText(response, 404)
    response.writeHead(200, {
      "content-type": file.contentType,
      "content-length": file.bytes.byteLength,
      "content-disposition": `filename="${filename}"`
    })
    response.end(file.bytes)
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

  const authorized = (request: IncomingMessage) =>
    options.apiKey === undefined || request.headers.authorization === `Bearer ${options.apiKey}`

  const record = (request: IncomingMessage) => {
    log.push({ method: request.method ?? "GET", url: request.url ?? "/", at: Date.now(), headers: request.headers })
    if (log.length > 2 * maxRequests) log.splice(0, log.length - maxRequests)
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    record(request)
    if (fake.down) return sendJson(response, 503, { error: "Service Unavailable" })
    if (!authorized(request)) {
      return sendJson(response, 401, { error: "Unauthorized" }, { "www-authenticate": "Bearer" })
    }
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    const method = request.method ?? "GET"
    const api = url.pathname.startsWith("/api/")
    const path = api ? url.pathname.slice(4) : url.pathname
    const only = (allowed: string) => {
      if (method === allowed) return true
      sendText(response, 405)
      return false
    }

    if (path === "/prompt") {
      if (method === "POST") {
        counts.prompt++
        return faultedSubmit(fake.submitFaults, response, (answer) => postPrompt(request, response, answer))
      }
      if (only("GET")) sendJson(response, 200, queueInfo())
      return
    }
    if (path === "/queue") {
      if (method === "GET") {
        return sendJson(response, 200, {
          queue_running: [...running].map(queueItem),
          queue_pending: pending.map(queueItem)
        })
      }
      if (!only("POST")) return
      const body = await readJson(request)
      if (body === undefined || !isObject(body.value)) return sendText(response, 400)
      if (body.value["clear"] === true) {
        for (const job of pending.splice(0)) job.state = "deleted"
        queueUpdated()
      }
      const remove = body.value["delete"]
      if (Array.isArray(remove)) {
        counts.queueDelete++
        for (const id of remove) if (typeof id === "string") dequeue(id)
      }
      return sendEmpty(response, 200)
    }
    if (path === "/history") {
      if (method === "GET") {
        counts.history++
        return sendJson(response, 200, getHistory(url))
      }
      if (!only("POST")) return
      const body = await readJson(request)
      if (body === undefined || !isObject(body.value)) return sendText(response, 400)
      if (body.value["clear"] === true) history.clear()
      const remove = body.value["delete"]
      if (Array.isArray(remove)) { for (const id of remove) if (typeof id === "string") history.delete(id) }
      return sendEmpty(response, 200)
    }
    const historyOf = /^\/history\/([^/]+)$/.exec(path)
    if (historyOf !== null) {
      if (!only("GET")) return
      counts.history++
      const id = decodeURIComponent(historyOf[1]!)
      const entry = history.get(id)
      return sendJson(response, 200, entry === undefined ? {} : { [id]: entry })
    }
    if (path === "/view") {
      if (!only("GET")) return
      counts.view++
      return view(url, response)
    }
    if (path === "/interrupt") {
      if (!only("POST")) return
      counts.interrupt++
      const body = await readJson(request)
      const target = body !== undefined && isObject(body.value) ? body.value["prompt_id"] : undefined
      if (typeof target === "string" && target !== "") interrupt(target)
      else interrupt()
      return sendEmpty(response, 200)
    }
    if (path === "/system_stats") {
      if (!only("GET")) return
      return sendJson(response, 200, {
        system: {
          os: "posix",
          ram_total: 68_719_476_736,
          ram_free: 34_359_738_368,
          comfyui_version: "0.3.64",
          python_version: "3.12.3 (main, fake) [GCC 13.2.0]",
          pytorch_version: "2.8.0+cu128",
          embedded_python: false,
          argv: ["main.py", "--listen"]
        },
        devices: []
      })
    }
    if (path === "/object_info" || /^\/object_info\/[^/]+$/.test(path)) {
      if (only("GET")) sendJson(response, 200, {})
      return
    }
    if (path === "/features") {
      if (only("GET")) sendJson(response, 200, { supports_preview_metadata: true, max_upload_size: 104_857_600 })
      return
    }
    // The jobs API exists in newer builds only, and only under /api.
    if (api && path === "/jobs") {
      if (only("GET")) listJobs(url, response)
      return
    }
    if (api && path === "/jobs/cancel" && method === "POST") {
      const body = await readJson(request)
      if (body === undefined) return sendJson(response, 400, { error: "Request body must be valid JSON" })
      const ids = isObject(body.value) ? body.value["job_ids"] : undefined
      if (!Array.isArray(ids)) return sendJson(response, 400, { error: "job_ids must be a list" })
      const wrong = ids.filter((id) => typeof id !== "string" || !uuidPattern.test(id))
      if (wrong.length > 0) {
        return sendJson(response, 400, {
          error: "job_ids contains invalid id(s)",
          invalid_ids: wrong.map((id) => (typeof id === "string" ? id : JSON.stringify(id)))
        })
      }
      let cancelled = false
      for (const id of ids as Array<string>) if (cancel(id)) cancelled = true
      return sendJson(response, 200, { cancelled })
    }
    const jobCancel = /^\/jobs\/([^/]+)\/cancel$/.exec(path)
    if (api && jobCancel !== null) {
      if (only("POST")) sendJson(response, 200, { cancelled: cancel(decodeURIComponent(jobCancel[1]!)) })
      return
    }
    const jobOf = /^\/jobs\/([^/]+)$/.exec(path)
    if (api && jobOf !== null) {
      if (!only("GET")) return
      const job = jobView(decodeURIComponent(jobOf[1]!))
      return job === undefined ? sendJson(response, 404, { error: "Job not found" }) : sendJson(response, 200, job)
    }
    sendText(response, 404)
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) response.destroy()
      else sendJson(response, 500, { error: String(error) })
    })
  })

  // The WebSocket

  const wss = new WebSocketServer({ noServer: true })
  const reject = (socket: Duplex, status: number) => {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
  }
  wss.on("error", () => undefined)
  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => undefined)
    record(request)
    if (fake.down) return reject(socket, 503)
    if (!authorized(request)) return reject(socket, 401)
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    if (url.pathname !== "/ws" && url.pathname !== "/api/ws") return reject(socket, 404)
    wss.handleUpgrade(request, socket, head, (ws) => {
      const given = url.searchParams.get("clientId") ?? ""
      const sid = given !== "" ? given : randomUUID().replaceAll("-", "")
      sockets.set(sid, ws)
      ws.on("error", () => undefined)
      let first = true
      ws.on("message", (data, isBinary) => {
        if (isBinary) return
        try {
          const message: unknown = JSON.parse(String(data))
          if (first && isObject(message) && message["type"] === "feature_flags") {
            send(ws, "feature_flags", { supports_preview_metadata: true, max_upload_size: 104_857_600 })
          }
        } catch {
          // ComfyUI logs and ignores a message that is not JSON
        }
        first = false
      })
      ws.on("close", () => {
        if (sockets.get(sid) === ws) sockets.delete(sid)
      })
      send(ws, "status", { status: queueInfo(), sid })
      for (const job of running) {
        if (job.clientId === sid && job.currentNode !== undefined) send(ws, "executing", { node: job.currentNode })
      }
    })
  })

  const url = await listen(server, options.port)
  const fake: ComfyFake = {
    url,
    jobs,
    get requests() {
      if (log.length > maxRequests) log.splice(0, log.length - maxRequests)
      return log
    },
    counts: () => ({ ...counts }),
    submitFaults: [],
    jobCount: (text) => countJobs(jobs.values(), text, (job) => [job.graph, job.extraData]),
    down: false,
    close: async () => {
      if (closed) return
      closed = true
      for (const job of running) job.abort?.abort()
      for (const ws of wss.clients) ws.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
      await close(server)
    }
  }
  return fake
}
