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
 *
 * The parts live under `comfyui/`: the types, the prompt checks, the queue and its execution, the HTTP routes, the
 * jobs API and the WebSocket; this module assembles them and is the fake's public entry.
 */
import { createServer } from "node:http"
import { makeJobsApi } from "./comfyui/jobs.js"
import { makeQueue } from "./comfyui/queue.js"
import { makeRoutes } from "./comfyui/routes.js"
import { makeMessages, makeState } from "./comfyui/state.js"
import { type ComfyFake, type ComfyFakeOptions, maxRequests } from "./comfyui/types.js"
import { attachWebSocket } from "./comfyui/websocket.js"
import { close, countJobs, listen, sendJson } from "./common.js"

export type { ComfyFake, ComfyFakeOptions, ComfyJob } from "./comfyui/types.js"
export { textToImageWorkflow } from "./comfyui/workflow.js"

/** Starts a fake ComfyUI server on 127.0.0.1. */
export const startComfyFake = async (options: ComfyFakeOptions = {}): Promise<ComfyFake> => {
  const state = makeState(options)
  const { jobs, log, running } = state
  const messages = makeMessages(state)
  const handle = makeRoutes(state, messages, makeQueue(state, messages), makeJobsApi(state), () => fake)

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) response.destroy()
      else sendJson(response, 500, { error: String(error) })
    })
  })
  const wss = attachWebSocket(server, state, messages, () => fake)

  const url = await listen(server, options.port)
  const fake: ComfyFake = {
    url,
    jobs,
    get requests() {
      if (log.length > maxRequests) log.splice(0, log.length - maxRequests)
      return log
    },
    counts: () => ({ ...state.counts }),
    submitFaults: [],
    jobCount: (text) => countJobs(jobs.values(), text, (job) => [job.graph, job.extraData]),
    down: false,
    close: async () => {
      if (state.closed) return
      state.closed = true
      for (const job of running) job.abort?.abort()
      for (const ws of wss.clients) ws.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
      await close(server)
    }
  }
  return fake
}
