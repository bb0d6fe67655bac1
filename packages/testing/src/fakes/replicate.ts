/**
 * A fake of Replicate's predictions HTTP API (https://replicate.com/docs/reference/http), faithful enough for the
 * official `replicate` SDK: predictions created on a model (`/v1/models/{owner}/{name}/predictions`), a deployment
 * or a version (`/v1/predictions`), read, canceled and listed (cursor pages, newest first); `Prefer: wait` holds the
 * answer, `Cancel-After` sets a deadline (`aborted` before the start, `canceled` after); webhooks signed the Standard
 * Webhooks way with the secret of `/v1/webhooks/default/secret`; server-sent events on `urls.stream`; output files
 * served under `/fake-files/`.
 *
 * A prediction's state is computed from its timestamps on every read (`starting` for the first 20% of the plan's
 * duration, then `processing` with tqdm-like log lines, then `succeeded` or `failed`), so tens of thousands of
 * concurrent predictions cost no timers; timers exist only for webhooks and held answers.
 *
 * The parts live under `replicate/`: the types, a prediction's timeline and JSON, the shared state, the webhooks,
 * the create handler and the other routes; this module assembles them and is the fake's public entry.
 */
import { createServer } from "node:http"
import { close, countJobs, listen } from "./common.js"
import { makeCreate } from "./replicate/create.js"
import { problem } from "./replicate/http.js"
import { viewOf } from "./replicate/prediction.js"
import { makeRoutes } from "./replicate/routes.js"
import { makeState, wake } from "./replicate/state.js"
import { logLimit, type ReplicateFake, type ReplicateFakeOptions } from "./replicate/types.js"
import { makeWebhooks } from "./replicate/webhooks.js"

export { replicateVersionOf } from "./replicate/prediction.js"
export type {
  ReplicateFake,
  ReplicateFakeOptions,
  ReplicatePrediction,
  ReplicatePredictionJson,
  ReplicateStatus,
  ReplicateWebhookDelivery,
  ReplicateWebhookEvent
} from "./replicate/types.js"

/** Starts the fake on 127.0.0.1 (a free port unless `port` is given). */
export const startReplicateFake = async (options: ReplicateFakeOptions = {}): Promise<ReplicateFake> => {
  const state = makeState(options)
  const { counts, entries, predictions, submitFaults, token, webhookSecret } = state
  const webhooks = makeWebhooks(state)
  const handle = makeRoutes(state, webhooks, makeCreate(state, webhooks), () => fake)

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) response.destroy()
      else problem(response, 500, "Internal Server Error", String(error))
    })
  })
  state.base = await listen(server, options.port)

  const fake: ReplicateFake = {
    url: state.base,
    token,
    webhookSecret,
    predictions,
    get requests() {
      return state.log.length > logLimit ? state.log.slice(-logLimit) : state.log
    },
    get webhooks() {
      return state.deliveries.length > logLimit ? state.deliveries.slice(-logLimit) : state.deliveries
    },
    counts: () => ({ ...counts }),
    submitFaults,
    jobCount: (text) => countJobs(predictions.values(), text, (p) => [p.input, p.webhook]),
    view: (id) => {
      const entry = entries.get(id)
      return entry === undefined ? undefined : viewOf(entry.p, state.base, Date.now())
    },
    down: false,
    close: async () => {
      state.closed = true
      for (const entry of entries.values()) {
        if (entry.hook !== undefined) clearTimeout(entry.hook.timer)
        wake(entry)
      }
      await close(server)
    }
  }
  return fake
}
