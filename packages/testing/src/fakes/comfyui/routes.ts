/**
 * The ComfyUI fake's HTTP routes (each also under `/api`): `POST /prompt` with ComfyUI's checks, `/queue`,
 * `/history`, `/view`, `/interrupt`, the informational routes, and the jobs API of newer builds (under `/api` only).
 */
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { faultedSubmit, planOf, sendJson } from "../common.js"
import { readJson, sendEmpty, sendText } from "./http.js"
import type { JobsApi } from "./jobs.js"
import { fileKey, type Queue } from "./queue.js"
import { authorized, type ComfyState, type Messages, record } from "./state.js"
import { type ComfyFake, isObject, type Job, type Json, type Node, uuidPattern } from "./types.js"
import { executionOrder, promptTextOf, validatePrompt } from "./validation.js"

/** The request handler of one fake; `fakeOf` answers the fake itself, for its `down` and `submitFaults`. */
export const makeRoutes = (
  state: ComfyState,
  messages: Messages,
  queue: Queue,
  jobsApi: JobsApi,
  fakeOf: () => ComfyFake
) => {
  const { counts, files, history, jobs, options, pending, running } = state
  const { queueInfo, queueUpdated } = messages
  const { cancel, dequeue, enqueue, interrupt, queueItem } = queue
  const { jobView, listJobs } = jobsApi

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
      jobNumber = json["front"] === true ? -state.number : state.number
      state.number++
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
      seq: state.seq++,
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

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    record(state, request)
    if (fakeOf().down) return sendJson(response, 503, { error: "Service Unavailable" })
    if (!authorized(state, request)) {
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
        return faultedSubmit(fakeOf().submitFaults, response, (answer) => postPrompt(request, response, answer))
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

  return handle
}
