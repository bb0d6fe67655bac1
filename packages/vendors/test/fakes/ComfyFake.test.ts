/**
 * The fake ComfyUI server (`@mediagate/testing/fakes/comfyui`) against what a real one does: `/prompt` validation
 * and its error shapes, the one-at-a-time queue seen through `/queue` and `/api/jobs`, history entries (success,
 * failure, interruption), `/view` files, `POST /queue {delete}`, `/interrupt`, the WebSocket messages of a client's
 * prompt, video output nodes, the API key and the `down` switch.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ComfyFake, startComfyFake, textToImageWorkflow } from "@mediagate/testing/fakes/comfyui"
import { pngBytes } from "@mediagate/testing/fakes/common"
import { randomUUID } from "node:crypto"
import { WebSocket } from "ws"

type Json = Record<string, unknown>

interface HistoryEntry {
  readonly prompt: [number, string, Json, Json, Array<string>]
  readonly outputs: Record<string, Json>
  readonly status: { status_str: string; completed: boolean; messages: Array<[string, Json]> }
}

/** The example workflow with another positive prompt (node "6"). */
const workflow = (text = "a lighthouse", edit?: (graph: Record<string, Json>) => void) => {
  const graph = structuredClone(textToImageWorkflow) as Record<string, Json>
  ;(graph["6"]!["inputs"] as Json)["text"] = text
  edit?.(graph)
  return graph
}

const withFake = async (
  run: (fake: ComfyFake) => Promise<void>,
  options: Parameters<typeof startComfyFake>[0] = {}
) => {
  const fake = await startComfyFake(options)
  try {
    await run(fake)
  } finally {
    await fake.close()
  }
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

const getJson = async (url: string) => (await fetch(url)).json() as Promise<Json>

const submit = async (fake: ComfyFake, body: Json, path = "/prompt") => {
  const response = await post(`${fake.url}${path}`, body)
  expect(response.status).toBe(200)
  return (await response.json()) as { prompt_id: string; number: number; node_errors: Json }
}

const historyOf = async (fake: ComfyFake, id: string) =>
  (await getJson(`${fake.url}/history/${id}`))[id] as
    | HistoryEntry
    | undefined

/** Polls `/history/{id}` until the prompt is there. */
const waitForHistory = async (fake: ComfyFake, id: string, timeoutMs = 3000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const entry = await historyOf(fake, id)
    if (entry !== undefined) return entry
    if (Date.now() > deadline) throw new Error(`no history for ${id}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const queueOf = async (fake: ComfyFake) =>
  (await getJson(`${fake.url}/queue`)) as { queue_running: Array<Array<unknown>>; queue_pending: Array<Array<unknown>> }

const eventsOf = (entry: HistoryEntry) => entry.status.messages.map(([event]) => event)

/** Opens a WebSocket and collects its JSON messages. */
const connect = (fake: ComfyFake, clientId: string, headers: Record<string, string> = {}) =>
  new Promise<{ socket: WebSocket; messages: Array<{ type: string; data: Json }> }>((resolve, reject) => {
    const socket = new WebSocket(`${fake.url.replace("http", "ws")}/ws?clientId=${clientId}`, { headers })
    const messages: Array<{ type: string; data: Json }> = []
    socket.on("message", (data) => messages.push(JSON.parse(String(data)) as { type: string; data: Json }))
    socket.once("open", () => resolve({ socket, messages }))
    socket.once("error", reject)
  })

const until = async (check: () => boolean, timeoutMs = 3000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out")
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe("ComfyUI fake: prompts and history", () => {
  it("runs the example workflow: empty history while it runs, then the saved image, served by /view", () =>
    withFake(async (fake) => {
      const text = "a lighthouse [fake:delay=120]"
      const { node_errors, number, prompt_id } = await submit(fake, { prompt: workflow(text) })
      expect(prompt_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(number).toBe(0)
      expect(node_errors).toEqual({})
      expect(await getJson(`${fake.url}/history/${prompt_id}`)).toEqual({})

      const entry = await waitForHistory(fake, prompt_id)
      expect(entry.status.status_str).toBe("success")
      expect(entry.status.completed).toBe(true)
      expect(eventsOf(entry)).toEqual(["execution_start", "execution_cached", "execution_success"])
      expect(entry.prompt[0]).toBe(0)
      expect(entry.prompt[1]).toBe(prompt_id)
      expect(entry.prompt[2]).toEqual(workflow(text))
      expect(entry.prompt[4]).toEqual(["9"])
      expect(entry.outputs).toEqual({
        "9": { images: [{ filename: "ComfyUI_00001_.png", subfolder: "", type: "output" }] }
      })
      expect(fake.jobs.get(prompt_id)?.state).toBe("success")

      const view = await fetch(`${fake.url}/view?filename=ComfyUI_00001_.png&subfolder=&type=output`)
      expect(view.status).toBe(200)
      expect(view.headers.get("content-type")).toBe("image/png")
      expect(Buffer.from(await view.arrayBuffer()).equals(Buffer.from(pngBytes))).toBe(true)
      expect((await fetch(`${fake.url}/view?filename=nope.png&type=output`)).status).toBe(404)
      expect((await fetch(`${fake.url}/view?filename=ComfyUI_00001_.png&type=temp`)).status).toBe(404)

      const counts = fake.counts()
      expect(counts.prompt).toBe(1)
      expect(counts.view).toBe(3)
      expect(counts.history).toBeGreaterThanOrEqual(2)
    }))

  it("answers under /api too, keeps a given prompt_id, and numbers prompts in order", () =>
    withFake(async (fake) => {
      const first = await submit(fake, { prompt: workflow() })
      const id = randomUUID()
      const second = await submit(fake, { prompt: workflow("[fake:delay=10]"), prompt_id: id }, "/api/prompt")
      expect(second).toEqual({ prompt_id: id, number: 1, node_errors: {} })
      expect(first.number).toBe(0)
      await waitForHistory(fake, id)
      const viaApi = (await getJson(`${fake.url}/api/history/${id}`))[id] as HistoryEntry
      expect(viaApi.status.status_str).toBe("success")
      expect(viaApi.outputs["9"]).toEqual({
        images: [{ filename: "ComfyUI_00002_.png", subfolder: "", type: "output" }]
      })
      const all = await getJson(`${fake.url}/api/history?max_items=1`)
      expect(Object.keys(all)).toEqual([id])
      expect((await fetch(`${fake.url}/api/view?filename=ComfyUI_00002_.png`)).status).toBe(200)
      const stats = await getJson(`${fake.url}/api/system_stats`)
      expect((stats["system"] as Json)["comfyui_version"]).toBeTypeOf("string")
      expect(await getJson(`${fake.url}/object_info`)).toEqual({})
      expect((await fetch(`${fake.url}/nope`)).status).toBe(404)
      expect((await fetch(`${fake.url}/interrupt`)).status).toBe(405)
    }))

  it("rejects an invalid graph with ComfyUI's error shapes", () =>
    withFake(async (fake) => {
      const dangling = await post(`${fake.url}/prompt`, {
        prompt: workflow("x", (graph) => {
          ;(graph["8"]!["inputs"] as Json)["samples"] = ["99", 0]
        })
      })
      expect(dangling.status).toBe(400)
      const danglingBody = (await dangling.json()) as { error: Json; node_errors: Record<string, Json> }
      expect(danglingBody.error).toMatchObject({ type: "prompt_outputs_failed_validation", extra_info: {} })
      // As in ComfyUI, the error sits on the node whose link dangles; the output itself has no reason of its own.
      expect(danglingBody.error["details"]).toBe("")
      expect(Object.keys(danglingBody.node_errors)).toEqual(["8"])
      expect(danglingBody.node_errors["8"]).toMatchObject({ class_type: "VAEDecode", dependent_outputs: ["9"] })
      const [error] = danglingBody.node_errors["8"]!["errors"] as Array<Json>
      expect(error).toMatchObject({
        type: "exception_during_inner_validation",
        details: "'99'",
        extra_info: { input_name: "images", linked_node: ["8", 0] }
      })

      const noOutput = await post(`${fake.url}/prompt`, {
        prompt: workflow("x", (graph) => {
          delete graph["9"]
        })
      })
      expect(noOutput.status).toBe(400)
      expect(await noOutput.json()).toEqual({
        error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} },
        node_errors: {}
      })

      const noClass = await post(`${fake.url}/prompt`, { prompt: { "1": { inputs: {} } } })
      expect(noClass.status).toBe(400)
      expect(((await noClass.json()) as { error: Json }).error["type"]).toBe("invalid_prompt")

      const noPrompt = await post(`${fake.url}/prompt`, { client_id: "x" })
      expect(((await noPrompt.json()) as { error: Json }).error["type"]).toBe("no_prompt")

      const badId = await post(`${fake.url}/prompt`, { prompt: workflow(), prompt_id: "job-1" })
      expect(badId.status).toBe(400)
      expect(((await badId.json()) as { error: Json }).error["type"]).toBe("invalid_prompt_id")

      expect(fake.jobs.size).toBe(0)
    }))

  it("ends a failing prompt with status_str error and the execution_error message", () =>
    withFake(async (fake) => {
      const { prompt_id } = await submit(fake, { prompt: workflow("a storm [fake:fail=boom] [fake:delay=20]") })
      const entry = await waitForHistory(fake, prompt_id)
      expect(entry.status.status_str).toBe("error")
      expect(entry.status.completed).toBe(false)
      expect(entry.outputs).toEqual({})
      const error = entry.status.messages.find(([event]) => event === "execution_error")?.[1]
      expect(error).toMatchObject({ prompt_id, node_id: "3", node_type: "KSampler", traceback: [] })
      expect(String(error?.["exception_message"]).trim()).toBe("boom")
      expect(fake.jobs.get(prompt_id)?.state).toBe("error")
      const job = await getJson(`${fake.url}/api/jobs/${prompt_id}`)
      expect(job).toMatchObject({ id: prompt_id, status: "failed", outputs_count: 0 })
    }))

  it("makes a video for a SaveVideo or VHS_VideoCombine output node", () =>
    withFake(async (fake) => {
      const saveVideo = await submit(fake, {
        prompt: workflow("[fake:delay=10]", (graph) => {
          graph["9"] = { class_type: "SaveVideo", inputs: { video: ["8", 0], filename_prefix: "video/ComfyUI" } }
        })
      })
      const entry = await waitForHistory(fake, saveVideo.prompt_id)
      expect(entry.outputs["9"]).toEqual({
        images: [{ filename: "ComfyUI_00001_.mp4", subfolder: "video", type: "output" }],
        animated: [true]
      })
      const view = await fetch(`${fake.url}/view?filename=ComfyUI_00001_.mp4&subfolder=video&type=output`)
      expect(view.headers.get("content-type")).toBe("video/mp4")
      expect(Buffer.from(await view.arrayBuffer()).subarray(4, 8).toString("latin1")).toBe("ftyp")

      const vhs = await submit(fake, {
        prompt: workflow("[fake:delay=10]", (graph) => {
          graph["9"] = {
            class_type: "VHS_VideoCombine",
            inputs: { images: ["8", 0], frame_rate: 24, filename_prefix: "clip", format: "video/h264-mp4" }
          }
        })
      })
      const gifs = (await waitForHistory(fake, vhs.prompt_id)).outputs["9"]!["gifs"] as Array<Json>
      expect(gifs).toHaveLength(1)
      expect(gifs[0]).toMatchObject({
        filename: "clip_00001.mp4",
        subfolder: "",
        type: "output",
        format: "video/h264-mp4",
        frame_rate: 24
      })
      expect((await fetch(`${fake.url}/view?filename=clip_00001.mp4&type=output`)).status).toBe(200)
    }))
})

describe("ComfyUI fake: the queue", () => {
  it("runs prompts one at a time", () =>
    withFake(async (fake) => {
      const first = await submit(fake, { prompt: workflow("one [fake:delay=250]") })
      const second = await submit(fake, { prompt: workflow("two [fake:delay=30]") })
      const queue = await queueOf(fake)
      expect(queue.queue_running.map((item) => item[1])).toEqual([first.prompt_id])
      expect(queue.queue_pending.map((item) => item[1])).toEqual([second.prompt_id])
      expect(queue.queue_pending[0]![0]).toBe(second.number)
      expect(fake.jobs.get(second.prompt_id)?.state).toBe("pending")
      expect(await getJson(`${fake.url}/api/jobs/${first.prompt_id}`)).toMatchObject({ status: "in_progress" })
      expect(await getJson(`${fake.url}/api/jobs/${second.prompt_id}`)).toMatchObject({ status: "pending" })
      expect(await getJson(`${fake.url}/prompt`)).toEqual({ exec_info: { queue_remaining: 2 } })

      const one = await waitForHistory(fake, first.prompt_id)
      const two = await waitForHistory(fake, second.prompt_id)
      const at = (entry: HistoryEntry, event: string) =>
        entry.status.messages.find(([name]) => name === event)![1]["timestamp"] as number
      expect(at(two, "execution_start")).toBeGreaterThanOrEqual(at(one, "execution_success"))
      expect(await queueOf(fake)).toEqual({ queue_running: [], queue_pending: [] })
      expect(await getJson(`${fake.url}/api/jobs/${second.prompt_id}`)).toMatchObject({ status: "completed" })
    }))

  it("runs more at once with parallel", () =>
    withFake(async (fake) => {
      await submit(fake, { prompt: workflow("[fake:delay=100]") })
      await submit(fake, { prompt: workflow("[fake:delay=100]") })
      expect((await queueOf(fake)).queue_running).toHaveLength(2)
    }, { parallel: 2 }))

  it("removes a pending prompt with POST /queue {delete}: it never runs", () =>
    withFake(async (fake) => {
      const first = await submit(fake, { prompt: workflow("[fake:delay=200]") })
      const second = await submit(fake, { prompt: workflow("[fake:delay=10]") })
      const removed = await post(`${fake.url}/queue`, { delete: [second.prompt_id] })
      expect(removed.status).toBe(200)
      const queue = await queueOf(fake)
      expect(queue.queue_pending).toEqual([])
      expect(queue.queue_running.map((item) => item[1])).toEqual([first.prompt_id])
      expect(fake.jobs.get(second.prompt_id)?.state).toBe("deleted")
      await waitForHistory(fake, first.prompt_id)
      await new Promise((resolve) => setTimeout(resolve, 40))
      expect(await getJson(`${fake.url}/history/${second.prompt_id}`)).toEqual({})
      expect((await fetch(`${fake.url}/api/jobs/${second.prompt_id}`)).status).toBe(404)
      expect(fake.counts().queueDelete).toBe(1)
    }))

  it("interrupts the running prompt with POST /interrupt; the next one then runs", () =>
    withFake(async (fake) => {
      const first = await submit(fake, { prompt: workflow("[fake:delay=5000]") })
      const second = await submit(fake, { prompt: workflow("[fake:delay=10]") })
      const other = await post(`${fake.url}/interrupt`, { prompt_id: second.prompt_id })
      expect(other.status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(fake.jobs.get(first.prompt_id)?.state).toBe("running")

      const started = Date.now()
      expect((await post(`${fake.url}/interrupt`, {})).status).toBe(200)
      const entry = await waitForHistory(fake, first.prompt_id)
      expect(Date.now() - started).toBeLessThan(1000)
      expect(entry.status.status_str).toBe("error")
      expect(entry.status.completed).toBe(false)
      expect(eventsOf(entry)).toEqual(["execution_start", "execution_cached", "execution_interrupted"])
      expect(entry.status.messages[2]![1]).toMatchObject({ prompt_id: first.prompt_id })
      expect(fake.jobs.get(first.prompt_id)?.state).toBe("interrupted")
      expect(await getJson(`${fake.url}/api/jobs/${first.prompt_id}`)).toMatchObject({ status: "cancelled" })
      expect((await waitForHistory(fake, second.prompt_id)).status.status_str).toBe("success")
      expect(fake.counts().interrupt).toBe(2)
    }))

  it("cancels through /api/jobs/{id}/cancel, running or pending", () =>
    withFake(async (fake) => {
      const first = await submit(fake, { prompt: workflow("[fake:delay=5000]") })
      const second = await submit(fake, { prompt: workflow("[fake:delay=5000]") })
      const cancel = (id: string) => post(`${fake.url}/api/jobs/${id}/cancel`, {}).then((r) => r.json())
      expect(await cancel(second.prompt_id)).toEqual({ cancelled: true })
      expect(await cancel(first.prompt_id)).toEqual({ cancelled: true })
      expect((await waitForHistory(fake, first.prompt_id)).status.status_str).toBe("error")
      expect(await cancel(first.prompt_id)).toEqual({ cancelled: false })
      expect(fake.jobs.get(second.prompt_id)?.state).toBe("deleted")
    }))
})

describe("ComfyUI fake: the WebSocket", () => {
  it("sends the client's prompt progress, executed outputs and the final executing null", () =>
    withFake(async (fake) => {
      const clientId = randomUUID().replaceAll("-", "")
      const client = await connect(fake, clientId)
      const bystander = await connect(fake, "someone-else")
      try {
        await until(() => client.messages.length > 0)
        expect(client.messages[0]).toEqual({
          type: "status",
          data: { status: { exec_info: { queue_remaining: 0 } }, sid: clientId }
        })

        const { prompt_id } = await submit(fake, { prompt: workflow("[fake:delay=60]"), client_id: clientId })
        await until(() => client.messages.some((m) => m.type === "executing" && m.data["node"] === null))
        const mine = client.messages.filter((m) => m.data["prompt_id"] === prompt_id)
        const types = mine.map((m) => m.type)
        expect(types[0]).toBe("execution_start")
        expect(types.at(-1)).toBe("executing")
        expect(mine.at(-1)!.data).toEqual({ node: null, prompt_id })
        expect(types.indexOf("execution_success")).toBe(types.length - 2)

        const executing = mine.filter((m) => m.type === "executing" && m.data["node"] !== null)
        expect(executing.map((m) => m.data["node"])).toEqual(["4", "5", "6", "7", "3", "8", "9"])
        const progress = mine.filter((m) => m.type === "progress")
        expect(progress.length).toBeGreaterThan(1)
        expect(progress.at(-1)!.data).toEqual({ value: 20, max: 20, prompt_id, node: "3" })
        const executed = mine.filter((m) => m.type === "executed")
        expect(executed).toHaveLength(1)
        expect(executed[0]!.data).toMatchObject({
          node: "9",
          prompt_id,
          output: { images: [{ filename: "ComfyUI_00001_.png", subfolder: "", type: "output" }] }
        })
        expect(types.indexOf("executed")).toBeGreaterThan(types.lastIndexOf("progress"))
        expect(await historyOf(fake, prompt_id)).toBeDefined()

        // Status broadcasts reach everyone; the prompt's own messages only its client.
        expect(bystander.messages.filter((m) => m.type === "status").length).toBeGreaterThan(1)
        expect(bystander.messages.some((m) => m.data["prompt_id"] === prompt_id)).toBe(false)
      } finally {
        client.socket.close()
        bystander.socket.close()
      }
    }))

  it("sends execution_error to the client of a failing prompt", () =>
    withFake(async (fake) => {
      const client = await connect(fake, "c1")
      try {
        const body = { prompt: workflow("[fake:fail=boom] [fake:delay=10]"), client_id: "c1" }
        const { prompt_id } = await submit(fake, body)
        await until(() => client.messages.some((m) => m.type === "executing" && m.data["node"] === null))
        const error = client.messages.find((m) => m.type === "execution_error")
        expect(error?.data).toMatchObject({ prompt_id, node_type: "KSampler" })
        expect(String(error?.data["exception_message"])).toContain("boom")
        expect(client.messages.some((m) => m.type === "execution_success")).toBe(false)
      } finally {
        client.socket.close()
      }
    }))
})

describe("ComfyUI fake: access", () => {
  it("enforces the API key on HTTP and on the WebSocket upgrade", () =>
    withFake(async (fake) => {
      expect((await fetch(`${fake.url}/queue`)).status).toBe(401)
      expect((await post(`${fake.url}/prompt`, { prompt: workflow() })).status).toBe(401)
      expect((await fetch(`${fake.url}/queue`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401)
      const body = { prompt: workflow("[fake:delay=10]") }
      const ok = await post(`${fake.url}/prompt`, body, { authorization: "Bearer k1" })
      expect(ok.status).toBe(200)
      expect(fake.jobs.size).toBe(1)

      const refused = await new Promise<number>((resolve) => {
        const socket = new WebSocket(`${fake.url.replace("http", "ws")}/ws?clientId=x`)
        socket.on("unexpected-response", (_request, response) => {
          resolve(response.statusCode ?? 0)
          socket.terminate()
        })
        socket.on("open", () => resolve(101))
        socket.on("error", () => undefined)
      })
      expect(refused).toBe(401)
      const client = await connect(fake, "x", { authorization: "Bearer k1" })
      client.socket.close()
    }, { apiKey: "k1" }))

  it("answers 503 while down, and logs every request", () =>
    withFake(async (fake) => {
      fake.down = true
      expect((await fetch(`${fake.url}/queue`)).status).toBe(503)
      fake.down = false
      expect((await fetch(`${fake.url}/queue`)).status).toBe(200)
      expect(fake.requests.map((request) => `${request.method} ${request.url}`)).toEqual([
        "GET /queue",
        "GET /queue"
      ])
    }))

  it("plans prompts with the plan option", () =>
    withFake(async (fake) => {
      const { prompt_id } = await submit(fake, { prompt: workflow("hello") })
      const entry = await waitForHistory(fake, prompt_id)
      expect(entry.outputs["9"]!["images"]).toEqual([
        { filename: "first.png", subfolder: "", type: "output" },
        { filename: "ComfyUI_00001_.png", subfolder: "", type: "output" }
      ])
      expect(fake.jobs.get(prompt_id)?.plan.durationMs).toBe(5)
    }, {
      plan: (input) => ({
        durationMs: input["prompt"] === "hello" && typeof input["workflow"] === "object" ? 5 : 1000,
        outputs: [{ name: "first.png", contentType: "image/png" }, { contentType: "image/png" }]
      })
    }))
})
