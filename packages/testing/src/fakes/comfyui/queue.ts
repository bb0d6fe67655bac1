/**
 * The ComfyUI fake's queue: prompts wait in queue-number order and run `parallel` at a time, node by node like
 * `PromptExecutor.execute`, sending ComfyUI's WebSocket messages; output nodes save the plan's files for `/view`;
 * a finished prompt goes into the history. Also deletion from the queue, `/interrupt` and the jobs API's cancel.
 */
import { type FakeOutput, mp4Bytes, pngBytes } from "../common.js"
import { sleep } from "./http.js"
import type { ComfyState, Messages } from "./state.js"
import { extensions, type Job, type Json, maxHistory, type Message, sensitiveExtraData, videoClasses } from "./types.js"

/** The key of a saved file: its type (`output`, `temp`), subfolder and name. */
export const fileKey = (type: string, subfolder: string, filename: string) =>
  `${type}\u0000${subfolder}\u0000${filename}`

/** What the routes use of the queue. */
export interface Queue {
  readonly enqueue: (job: Job) => void
  readonly dequeue: (id: string) => boolean
  /** Interrupts the running prompt `id`, or every running prompt; true when one was running. */
  readonly interrupt: (id?: string) => boolean
  /** The jobs API's cancel: interrupts a running prompt, dequeues a pending one. */
  readonly cancel: (id: string) => boolean
  /** An item of `/queue`'s `queue_running` and `queue_pending`. */
  readonly queueItem: (job: Job) => Array<unknown>
  /** `extra_data` without the Comfy.org credentials. */
  readonly publicExtra: (extra: Json) => Json
}

export const makeQueue = (state: ComfyState, messages: Messages): Queue => {
  const { counters, files, history, jobs, parallel, pending, running } = state
  const { queueUpdated, sendSync } = messages

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
      if (state.closed) return
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
    if (state.closed) return

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
    while (!state.closed && running.size < parallel && pending.length > 0) void run(pending.shift()!)
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

  const cancel = (id: string) => {
    const job = jobs.get(id)
    if (job?.state === "running") return interrupt(id)
    if (job?.state === "pending") return dequeue(id)
    return false
  }

  return { enqueue, dequeue, interrupt, cancel, queueItem, publicExtra }
}
