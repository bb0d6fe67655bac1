/**
 * What the chaos tests (`chaos.test.ts`, `chaos-transports.test.ts`) share: statements on the test database, a
 * database "restart" that leaves the cluster alone, bounded requests that record how they ended, the load of
 * clients that retry as the docs tell them to, and the checks of the answers and of the money afterwards.
 *
 * @since 0.1.0
 */
import { expect } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { createServer, type IncomingMessage, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import { psql } from "./server.js"

/** The statuses a task ends in. */
export const terminalStatuses = ["succeeded", "failed", "cancelled", "expired"]
/** The same, as an SQL list. */
export const terminalList = terminalStatuses.map((status) => `'${status}'`).join(", ")

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** One statement on the test database; answers psql's unaligned output (`|`-separated, one row a line). */
export const query = (database: string, sql: string): string => {
  const result = spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", database, "-Atqc", sql], {
    encoding: "utf8"
  })
  if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`)
  return result.stdout.trim()
}

/** Kills every connection to the database (`pg_terminate_backend`). */
export const terminateAll = (database: string) =>
  psql(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`
  )

/**
 * What clients see of a database restart, without restarting the cluster (other suites of `npm test` use it at the
 * same time): new connections refused (`ALLOW_CONNECTIONS false`) and every backend terminated, for `ms`.
 */
export const restartDatabase = async (database: string, ms: number) => {
  expect(psql(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`)).toBe(0)
  terminateAll(database)
  await sleep(ms)
  expect(psql(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`)).toBe(0)
}

export type Node = "a" | "b"

/** How one request ended. */
export interface Answer {
  readonly node: Node
  readonly what: string
  readonly at: number
  readonly ms: number
  readonly status?: number
  readonly code?: string
  readonly error?: string
  readonly body?: unknown
}

/**
 * One request, bounded at 20 s, on a connection of its own (`Connection: close`): a kept-alive connection can be
 * closed by the server's idle timeout just as a client whose event loop was busy (the synchronous `psql` calls here)
 * reuses it, and that drop would be the client's, not the server's. Answers how it ended: the status and body, or the
 * connection error's code (`timeout` for no answer).
 */
export const call = (
  node: Node,
  base: string,
  what: string,
  path: string,
  init: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: string } = {}
): Promise<Answer> => {
  const at = Date.now()
  return new Promise((resolve) => {
    const done = (answer: Omit<Answer, "node" | "what" | "at" | "ms">) =>
      resolve({ node, what, at, ms: Date.now() - at, ...answer })
    const sent = httpRequest(new URL(path, base), {
      method: init.method ?? "GET",
      headers: { ...init.headers, connection: "close" },
      agent: false,
      timeout: 20_000
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("error", (error: NodeJS.ErrnoException) => done({ error: error.code ?? error.message }))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
        const code = (body as { error?: { code?: string } } | undefined)?.error?.code
        done({ status: response.statusCode!, ...(code === undefined ? {} : { code }), body })
      })
    })
    sent.on("timeout", () => sent.destroy(Object.assign(new Error("timeout"), { code: "timeout" })))
    sent.on("error", (error: NodeJS.ErrnoException) => done({ error: error.code ?? error.message }))
    sent.end(init.body)
  })
}

/** A generation request: its path and JSON body. */
export interface Generation {
  readonly path: string
  readonly body: unknown
}

/**
 * `n` logical requests, one started every `paceMs` from `began` by `clients` concurrent clients, each sent with
 * `Idempotency-Key: <keyPrefix>-<i>` and retried (same key, the other node next) on a 503 or a dropped connection
 * until it has its task or `deadline` passes; each task got is read back from the other node. Answers every answer
 * and the task of each request.
 */
export const runLoad = async (options: {
  readonly n: number
  readonly bases: Readonly<Record<Node, string>>
  readonly key: string
  readonly keyPrefix: string
  readonly began: number
  readonly paceMs: number
  readonly deadline: number
  readonly clients: number
  readonly request: (i: number) => Generation
}) => {
  const { bases, deadline } = options
  const auth = { authorization: `Bearer ${options.key}` }
  const answers: Array<Answer> = []
  const taskOf = new Map<number, string>()
  let next = 0
  const client = async () => {
    for (let i = next++; i < options.n; i = next++) {
      await sleep(Math.max(0, options.began + i * options.paceMs - Date.now()))
      const { body, path } = options.request(i)
      for (let attempt = 0; !taskOf.has(i) && Date.now() < deadline; attempt++) {
        const node: Node = (i + attempt) % 2 === 0 ? "a" : "b"
        const answer = await call(node, bases[node], "POST", path, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json", "idempotency-key": `${options.keyPrefix}-${i}` },
          body: JSON.stringify(body)
        })
        answers.push(answer)
        if (answer.status !== undefined && answer.status >= 200 && answer.status < 300) {
          const id = (answer.body as { data: { id: string } }).data.id
          taskOf.set(i, id)
          const other: Node = node === "a" ? "b" : "a"
          answers.push(await call(other, bases[other], "GET", `/api/v1/tasks/${id}`, { headers: auth }))
        } else if (answer.status === 503 || answer.error !== undefined) {
          await sleep(200)
        } else {
          break // anything else fails the test (see unexpectedAnswers)
        }
      }
    }
  }
  await Promise.all(Array.from({ length: options.clients }, client))
  return { answers, taskOf }
}

/**
 * The answers a client must not see: anything but a 2xx or a 503 `SERVICE_UNAVAILABLE` (a 500 among them), a
 * timeout (a hang), or a dropped connection from another node than `killed`.
 */
export const unexpectedAnswers = (answers: ReadonlyArray<Answer>, killed: Node) =>
  answers.filter((a) =>
    a.error !== undefined
      ? a.node !== killed || a.error === "timeout"
      : a.status! >= 300 && !(a.status === 503 && a.code === "SERVICE_UNAVAILABLE")
  )

/** Waits until `check` holds, at most until `until` (epoch ms); answers whether it held. */
export const settled = async (until: number, check: () => boolean): Promise<boolean> => {
  for (;;) {
    if (check()) return true
    if (Date.now() > until) return false
    await sleep(250)
  }
}

/** Tasks of the database that have not ended. */
export const activeTasks = (database: string) =>
  Number(query(database, `SELECT count(*) FROM mediagate_tasks WHERE status NOT IN (${terminalList})`))

/**
 * The money after the run: one charge per task (`n` tasks), at most one refund per task and never of one that
 * succeeded, and every account's balance equal to the sum of its ledger.
 */
export const expectBilledOnce = (database: string, n: number) => {
  const ledger = "mediagate_billing_ledger"
  expect(query(database, `SELECT count(*), count(DISTINCT task_id) FROM ${ledger} WHERE kind = 'charge'`), "charges")
    .toBe(`${n}|${n}`)
  expect(query(database, `SELECT count(*) - count(DISTINCT task_id) FROM ${ledger} WHERE kind = 'refund'`), "refunds")
    .toBe("0")
  expect(
    query(
      database,
      `SELECT count(*) FROM ${ledger} l JOIN mediagate_tasks t ON t.id = l.task_id
       WHERE l.kind = 'refund' AND t.status = 'succeeded'`
    ),
    "refunds of succeeded tasks"
  ).toBe("0")
  expect(
    query(
      database,
      `SELECT count(*) FROM mediagate_billing_accounts a
       WHERE a.balance_micros <>
         (SELECT COALESCE(sum(l.amount_micros), 0) FROM ${ledger} l WHERE l.account_id = a.account_id)`
    ),
    "accounts whose ledger is not their balance"
  ).toBe("0")
}

/** A running {@link startBalancer}. */
export interface Balancer {
  /** Its base URL (`http://127.0.0.1:<port>`). */
  readonly url: string
  readonly close: () => Promise<void>
}

/**
 * The one public address of several nodes (docs/operations.md: every node has the same `MEDIAGATE_PUBLIC_BASE_URL`),
 * as a load balancer gives it: each request (its body read whole) goes to the nodes of `targets()` in turn, starting
 * at the next one, and on to the following one when a node refuses or drops the connection before answering. So an
 * upstream's callback for a job a killed node submitted reaches a live node.
 */
export const startBalancer = async (targets: () => ReadonlyArray<string>): Promise<Balancer> => {
  let next = 0
  const forward = (target: string, request: IncomingMessage, body: Buffer) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const out = httpRequest(new URL(request.url ?? "/", target), {
        method: request.method,
        headers: { ...request.headers, host: new URL(target).host }
      }, resolve)
      out.on("error", reject)
      out.end(body)
    })
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", async () => {
      const body = Buffer.concat(chunks)
      const nodes = targets()
      const first = next++
      for (let i = 0; i < nodes.length; i++) {
        try {
          const answer = await forward(nodes[(first + i) % nodes.length]!, request, body)
          response.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(response)
          return
        } catch {
          // that node is down: the next one
        }
      }
      response.writeHead(502)
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
