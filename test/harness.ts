/**
 * What the end-to-end suites that drive built server processes over HTTP share (`channels.ts`,
 * `transports.test.ts`): JSON requests and envelopes, the operator API, paged lists, a bounded pool, polling with a
 * deadline, scenarios that keep their servers' logs when they fail, accounts made through the admin API, a fresh
 * database per gateway (SQLite data dir or PostgreSQL database), a server's common environment, and reads of
 * tasks, channels and metrics.
 *
 * @since 0.1.0
 */
import { expect } from "@effect/vitest"
import type { Admin, Channel, Ledger } from "@mediagate/contract"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, psql, type RunningServer } from "./server.js"

/** The operator token the servers are started with (`MEDIAGATE_ADMIN_TOKEN`). */
export const adminToken = "channels-admin-token-0123456789abcdef"
/** The gateway's key for channel credentials at rest (64 hex characters). */
export const channelKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
/** The servers' file-signing secret (`MEDIAGATE_FILE_SECRET`). */
export const fileSecret = "channels-file-secret-0123456789abcdef"
/** The statuses a task ends in. */
export const terminal = new Set(["succeeded", "failed", "cancelled", "expired"])

export type ChannelView = typeof Channel.Channel.Encoded
export type ChannelCreate = typeof Channel.ChannelCreate.Encoded
export type TaskView = typeof Admin.AdminTask.Encoded
export type SystemView = typeof Admin.SystemStatus.Encoded
export type LedgerEntry = typeof Ledger.LedgerEntry.Encoded

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
export const range = (n: number) => Array.from({ length: n }, (_, i) => i)

// -----------------------------------------------------------------------------------------------------------------
// HTTP
// -----------------------------------------------------------------------------------------------------------------

export interface Envelope<A> {
  readonly success: boolean
  readonly data: A
  readonly pagination?: { readonly cursor: string | null; readonly hasMore: boolean; readonly total: number }
  readonly error?: { readonly code: string; readonly message: string }
}

export interface Reply<A> {
  readonly status: number
  readonly body: A
  readonly text: string
}

/** How long a request waits for its answer. */
const requestTimeoutMs = 30_000
/** Attempts of a request that may be sent again (see {@link http}). */
const attempts = 3

/**
 * One request; JSON in and out (a body that is not JSON is kept as text). A request that may be sent again — a `GET`,
 * or one with an `Idempotency-Key` — is sent again, as a client would (at most 3 times), when no answer came within
 * 30 s (while the whole suite runs, a server on this 2-core machine can be starved that long: load average 14), or
 * when its kept-alive connection was closed under it (the server's idle timeout ran out while this process was busy
 * and had not yet seen the close), or after its `Retry-After` (at most 2 s) when the answer was a 503 (a database
 * that could not give a connection within its timeout while every suite runs).
 */
export const http = async <A>(
  base: string,
  path: string,
  options: {
    readonly method?: string
    readonly token?: string
    readonly json?: unknown
    readonly headers?: Readonly<Record<string, string>>
  } = {}
): Promise<Reply<A>> => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
  if (options.json !== undefined) headers["content-type"] = "application/json"
  const method = options.method ?? (options.json === undefined ? "GET" : "POST")
  const repeatable = method === "GET" ||
    Object.keys(headers).some((name) => name.toLowerCase() === "idempotency-key")
  const send = async (attempt: number): Promise<Response> => {
    const response = await fetched(attempt)
    if (response.status !== 503 || !repeatable || attempt >= attempts) return response
    // a server short of its database for a moment (a busy machine): after its Retry-After, as clients are told
    const pause = Math.min(2, Number(response.headers.get("retry-after") ?? "1") || 1)
    console.warn(`${method} ${path}: 503 ${(await response.text()).slice(0, 200)}, sent again in ${pause} s`)
    await sleep(pause * 1000)
    return send(attempt + 1)
  }
  const fetched = async (attempt: number): Promise<Response> => {
    try {
      return await fetch(`${base}${path}`, {
        method,
        headers,
        ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) }),
        signal: AbortSignal.timeout(requestTimeoutMs)
      })
    } catch (error) {
      const timedOut = error instanceof Error && error.name === "TimeoutError"
      const cause = String((error as { cause?: { code?: unknown } }).cause?.code)
      const closed = ["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"].includes(cause)
      if (!(timedOut || closed) || !repeatable || attempt >= attempts) throw error
      const why = timedOut ? `no answer in ${requestTimeoutMs / 1000} s` : `connection closed (${cause})`
      console.warn(`${method} ${path}: ${why}, sent again (attempt ${attempt + 1})`)
      return send(attempt + 1)
    }
  }
  const response = await send(1)
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body: body as A, text }
}

/** The `data` of a 2xx envelope; fails the test with the answer otherwise. */
export const ok = <A>(reply: Reply<Envelope<A>>, what: string): A => {
  expect(reply.status, `${what}: ${reply.status} ${reply.text.slice(0, 500)}`).toBeGreaterThanOrEqual(200)
  expect(reply.status, `${what}: ${reply.status} ${reply.text.slice(0, 500)}`).toBeLessThan(300)
  return reply.body.data
}

/** An operator request (`MEDIAGATE_ADMIN_TOKEN`). */
export const admin = async <A>(base: string, path: string, method?: string, json?: unknown): Promise<A> =>
  ok(
    await http<Envelope<A>>(base, path, {
      token: adminToken,
      ...(method === undefined ? {} : { method }),
      ...(json === undefined ? {} : { json })
    }),
    `${method ?? "GET"} ${path}`
  )

/** Every item of a paged list (`limit=100`, following `pagination.cursor`). */
export const allPages = async <A>(base: string, path: string, token: string): Promise<Array<A>> => {
  const items: Array<A> = []
  for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
    const separator = path.includes("?") ? "&" : "?"
    const page = `${path}${separator}limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
    const reply: Reply<Envelope<Array<A>>> = await http<Envelope<Array<A>>>(base, page, { token })
    for (const item of ok(reply, `GET ${page}`)) items.push(item)
    cursor = reply.body.pagination?.hasMore === true ? reply.body.pagination.cursor : null
  }
  return items
}

/** Runs `f` over `items`, at most `concurrency` at once; answers the results in order. */
export const pool = async <A, B>(
  items: ReadonlyArray<A>,
  concurrency: number,
  f: (item: A, i: number) => Promise<B>
) => {
  const results = new Array<B>(items.length)
  let next = 0
  await Promise.all(
    range(Math.min(concurrency, items.length)).map(async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await f(items[i]!, i)
    })
  )
  return results
}

/** Waits until `check` answers something (checked every `every` ms), at most `timeoutMs`. */
export const waitFor = async <A>(
  what: string,
  timeoutMs: number,
  check: () => Promise<A | undefined>,
  every = 200
): Promise<A> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(every)
  }
}

// -----------------------------------------------------------------------------------------------------------------
// Processes
// -----------------------------------------------------------------------------------------------------------------

/** An account and its live key. */
export interface Keys {
  readonly account: string
  readonly live: string
}

/** What a scenario started, released at its end (servers SIGKILLed, then the cleanups in reverse order). */
export interface Scope {
  readonly server: (name: string, server: RunningServer) => RunningServer
  readonly defer: (cleanup: () => unknown) => void
}

/** A named server whose log is kept when a scenario fails. */
export type NamedServer = readonly [string, RunningServer]

/** A {@link Scope} opened by hand (for servers shared by several tests): its servers, and how to release it. */
export interface OpenScope extends Scope {
  readonly servers: ReadonlyArray<NamedServer>
  /** SIGKILLs the servers, then runs the cleanups in reverse order. */
  readonly close: () => Promise<void>
}

/**
 * Opens a scope; {@link OpenScope.close} releases it. What is added after the close (a start that was still under
 * way when a timed-out hook or test closed the scope) is released at once, so that no server outlives its test.
 */
export const openScope = (): OpenScope => {
  const servers: Array<NamedServer> = []
  const cleanups: Array<() => unknown> = []
  let closed = false
  return {
    servers,
    server: (name, server) => {
      servers.push([name, server])
      if (closed) server.child.kill("SIGKILL")
      return server
    },
    defer: (cleanup) => {
      if (closed) void Promise.resolve().then(cleanup)
      else cleanups.push(cleanup)
    },
    close: async () => {
      closed = true
      await Promise.all(servers.map(([, server]) =>
        new Promise<void>((resolve) => {
          if (server.child.exitCode !== null || server.child.signalCode !== null) return resolve()
          server.child.once("exit", () => resolve())
          server.child.kill("SIGKILL")
        })
      ))
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    }
  }
}

/** Writes the servers' logs to a new temporary directory `<prefix>logs-…` and says where. */
export const keepLogs = (label: string, servers: ReadonlyArray<NamedServer>, prefix = "mg-channels-") => {
  if (servers.length === 0) return
  const dir = mkdtempSync(join(tmpdir(), `${prefix}logs-`))
  for (const [name, server] of servers) writeFileSync(join(dir, `${name}.log`), server.output())
  console.warn(`${label}: the servers' logs are in ${dir}`)
}

/** Runs a scenario; when it fails, its servers' logs are written to a temporary directory. */
export const scenario = async (
  label: string,
  body: (scope: Scope) => Promise<void>,
  logPrefix = "mg-channels-"
): Promise<void> => {
  const scope = openScope()
  let passed = false
  try {
    await body(scope)
    passed = true
  } finally {
    if (!passed) keepLogs(label, scope.servers, logPrefix)
    await scope.close()
  }
}

/** Runs `body` on servers started before it (shared by several tests); when it fails, their logs are kept. */
export const withLogs = async <A>(
  label: string,
  servers: ReadonlyArray<NamedServer>,
  body: () => Promise<A>,
  logPrefix = "mg-channels-"
): Promise<A> => {
  try {
    return await body()
  } catch (error) {
    keepLogs(label, servers, logPrefix)
    throw error
  }
}

/**
 * An account credited with `amount` USD and a live key, made through the server's admin API (a server started
 * with an admin token prints no bootstrap keys).
 */
export const makeAccount = async (base: string, name: string, amount: number): Promise<Keys> => {
  const account = await admin<{ readonly id: string }>(base, "/admin/v1/accounts", "POST", { name })
  await admin<unknown>(base, `/admin/v1/accounts/${account.id}/credits`, "POST", { amount })
  const key = await admin<{ readonly key: string }>(base, `/admin/v1/accounts/${account.id}/api-keys`, "POST", {
    name,
    environment: "live"
  })
  return { account: account.id, live: key.key }
}

/**
 * A fresh database for a gateway: its environment (SQLite data dir, or a new PostgreSQL database dropped when the
 * scope ends). `prefix` names the data dir (`mg-<prefix>-gw-…`) and the database (`mg_<prefix>_…`).
 */
export const freshDatabase = (scope: Scope, postgres: boolean, prefix = "channels"): Record<string, string> => {
  const dataDir = mkdtempSync(join(tmpdir(), `mg-${prefix}-gw-`))
  if (!postgres) return { MEDIAGATE_DATA_DIR: dataDir }
  const name = `mg_${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  expect(psql(`CREATE DATABASE ${name}`)).toBe(0)
  scope.defer(() => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  return { MEDIAGATE_DATA_DIR: dataDir, DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}` }
}

/** A server's common environment on a free port (its public base URL on that port, no access log). */
export const serverEnv = async (extra: Record<string, string>): Promise<Record<string, string>> => {
  const port = await freePort()
  return {
    PORT: port,
    MEDIAGATE_ADMIN_TOKEN: adminToken,
    MEDIAGATE_FILE_SECRET: fileSecret,
    MEDIAGATE_PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    MEDIAGATE_ACCESS_LOG: "false",
    ...extra
  }
}

// -----------------------------------------------------------------------------------------------------------------
// Channels, tasks, metrics
// -----------------------------------------------------------------------------------------------------------------

export const createChannel = (gateway: string, channel: ChannelCreate) =>
  admin<ChannelView>(gateway, "/admin/v1/channels", "POST", channel)

export const readChannel = (gateway: string, id: string) => admin<ChannelView>(gateway, `/admin/v1/channels/${id}`)

export const readTask = (gateway: string, id: string) => admin<TaskView>(gateway, `/admin/v1/tasks/${id}`)
export const readTasks = (gateway: string, ids: ReadonlyArray<string>) => pool(ids, 20, (id) => readTask(gateway, id))

/** Tasks pending, queued or running on a server (its `GET /admin/v1/system`). */
export const inFlight = async (base: string): Promise<number> => {
  const byStatus = (await admin<SystemView>(base, "/admin/v1/system")).tasks.by_status
  return byStatus.pending + byStatus.queued + byStatus.running
}

/** Waits until no task of the server is active. */
export const settle = (base: string, timeoutMs: number) =>
  waitFor(`every task of ${base} to finish`, timeoutMs, async () => {
    return (await inFlight(base)) === 0 ? true : undefined
  }, 250)

/** The tasks that did not succeed, with their error. */
export const unsucceeded = (tasks: ReadonlyArray<TaskView>) =>
  tasks.filter((task) => task.status !== "succeeded").map((task) =>
    `${task.id}: ${task.status} ${task.error?.code ?? ""} ${task.error?.message ?? ""}`
  )

/** The sum of a metric's samples whose labels include `labels` (Prometheus text format). */
export const metric = (text: string, name: string, labels: Record<string, string>): number => {
  let sum = 0
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = new Map(
      [...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])
    )
    if (Object.entries(labels).every(([key, value]) => found.get(key) === value)) sum += Number(match[3])
  }
  return sum
}

/** A server's `/metrics` text. */
export const metrics = async (base: string) => {
  const reply = await http<string>(base, "/metrics", { token: adminToken })
  expect(reply.status, reply.text.slice(0, 300)).toBe(200)
  return reply.text
}
