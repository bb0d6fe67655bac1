/**
 * Test helpers: principals, store backends, a scripted sender and local HTTP receivers.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Security, Webhook } from "@mediagate/contract"
import type { OutboxEntry } from "@mediagate/engine/TaskStorage"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { type OutboundRequest, type PostResult, WebhookSender } from "../src/Outbound.js"
import * as SqlWebhookStore from "../src/SqlWebhookStore.js"
import * as WebhookStore from "../src/WebhookStore.js"
import { postgres, runPostgres, sqlite } from "./databases.js"

/** A principal of an account. */
export const principal = (accountId = "acct_a"): Security.Principal =>
  Fixtures.principal({ accountId, keyId: `key_${accountId}` })

/** A store backend: a fresh store per test, following the Effect `Clock` (so `TestClock` drives it). */
export type Backend = () => Layer.Layer<WebhookStore.WebhookStore, unknown>

/** A fresh SQL store on a database layer. */
export const sqlStore = (database: () => Layer.Layer<SqlClient.SqlClient, unknown>): Backend => () =>
  SqlWebhookStore.layer({ time: "clock" }).pipe(Layer.provide(database()))

/** Every backend that runs here: memory, SQLite, and PostgreSQL when it runs (always under CI=true). */
export const backends: ReadonlyArray<readonly [string, Backend]> = [
  ["memory", () => WebhookStore.layerMemory],
  ["sqlite", sqlStore(sqlite)],
  ...(runPostgres ? [["postgres", sqlStore(postgres)] as const] : [])
]

/**
 * The service's options for names that do not resolve, without asking DNS: a registration under the address rules
 * resolves the target's name, and a real lookup (a libuv thread of the busy test process, up to the 5 s deadline)
 * would make a test depend on the machine's DNS.
 */
export const noDns = { lookup: () => Promise.reject(new Error("ENOTFOUND (no DNS in the tests)")) } as const

/** A sender that records requests and answers from a script (the last answer repeats). */
export const scriptedSender = (answers: ReadonlyArray<number | null>) => {
  const requests: Array<OutboundRequest> = []
  const layer = Layer.succeed(WebhookSender, {
    send: (request) =>
      Effect.sync((): PostResult => {
        requests.push(request)
        const status = answers[Math.min(requests.length - 1, answers.length - 1)] ?? null
        return {
          statusCode: status,
          reason: status === null ? "timeout" : null,
          error: status === null ? "no answer within 10 s" : status >= 200 && status < 300 ? null : `HTTP ${status}`,
          durationMs: 3,
          responseExcerpt: status === null ? null : "ok"
        }
      })
  })
  return { requests, layer }
}

/** A request a local receiver got. */
export interface Received {
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  readonly url: string
}

/** What a local receiver does with a request. */
export type Behaviour = "ok" | "fail" | "gone" | "slow" | "hang" | "close"

/** A local receiver on 127.0.0.1 whose behaviour the test switches. */
export const receiver = Effect.acquireRelease(
  Effect.async<
    { url: string; port: number; received: Array<Received>; setBehaviour: (b: Behaviour) => void; server: http.Server }
  >((resume) => {
    const received: Array<Received> = []
    let behaviour: Behaviour = "ok"
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), url: req.url ?? "" })
        switch (behaviour) {
          case "ok":
            return res.writeHead(200, { "content-type": "text/plain" }).end("thanks")
          case "fail":
            return res.writeHead(500).end("x".repeat(5000))
          case "gone":
            return res.writeHead(410).end("gone")
          case "slow":
            return void setTimeout(() => res.writeHead(204).end(), 150)
          case "hang":
            return
          case "close":
            return req.socket.destroy()
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resume(Effect.succeed({
        url: `http://127.0.0.1:${port}/hook`,
        port,
        received,
        setBehaviour: (b: Behaviour) => void (behaviour = b),
        server
      }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

/** A port nothing listens on. */
export const closedPort = Effect.async<number>((resume) => {
  const server = http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** An outbox entry of a terminal task. */
export const entry = (
  accountId: string,
  type: "task.completed" | "task.failed" | "task.expired" | "task.cancelled",
  webhookUrl: string | null = null,
  seq = 1,
  environment: "live" | "test" = "live"
): OutboxEntry & { readonly decoded: Webhook.WebhookEvent } => {
  const id = `evt_01JX0000000000000000000${seq.toString().padStart(3, "0")}`
  const event: Webhook.WebhookEvent = {
    id,
    type,
    created_at: "2026-11-21T12:00:00.000Z",
    data: {
      task: {
        id: `task_01JX0000000000000000000${seq.toString().padStart(3, "0")}`,
        type: "video",
        status: type === "task.completed"
          ? "succeeded"
          : type === "task.failed"
          ? "failed"
          : type === "task.expired"
          ? "expired"
          : "cancelled",
        provider: "vendor3",
        model: "vendor3-3",
        created_at: "2026-11-21T11:59:00.000Z",
        completed_at: "2026-11-21T12:00:00.000Z"
      }
    }
  }
  return {
    seq,
    accountId,
    environment,
    taskId: `task_01JX0000000000000000000${seq.toString().padStart(3, "0")}`,
    webhookUrl,
    eventId: id,
    eventType: type,
    event: Effect.succeed(event),
    decoded: event
  }
}
