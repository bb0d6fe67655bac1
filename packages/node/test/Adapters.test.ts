/**
 * `Mediagate.make` as a plain Node app uses it: an Express app with Mediagate's middleware mounted under a prefix
 * after `express.json()` and at the root before it; the client address reaching IP whitelists; programmatic
 * bootstrap and admin calls; 503 with Retry-After while the stack is not (yet, or any more) there; a failed
 * start retried; a start that cannot succeed reported.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlError from "@effect/sql/SqlError"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import express from "express"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Mediagate from "../src/Mediagate.js"
import * as NodeAdapters from "../src/NodeAdapters.js"

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  )
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()))

const json = async (response: Response) => ({ status: response.status, body: await response.json() as any })

const post = (url: string, key: string, body: unknown) =>
  fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const cleanups: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

/** An Express app on a free port; `setup` mounts what the test wants. */
const expressApp = async (setup: (app: express.Express, base: string) => void) => {
  const server = createServer()
  const base = await listen(server)
  cleanups.push(() => close(server))
  const app = express()
  setup(app, base)
  server.on("request", app)
  return base
}

const dataDir = () => mkdtempSync(join(tmpdir(), "mg-adapters-"))

describe("Mediagate.make in an Express app", () => {
  it("mounted under a prefix after express.json(): a sandbox task to a downloadable file, the app's own routes", async () => {
    let mediagate!: Mediagate.Handle
    const base = await expressApp((app, base) => {
      mediagate = Mediagate.make({
        dataDir: dataDir(),
        fileSecret: "adapters-test",
        settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01" },
        publicBaseUrl: `${base}/media`
      })
      app.use(express.json())
      app.get("/hello", (_req, res) => void res.json({ hello: "world" }))
      app.post("/echo", (req, res) => void res.json(req.body))
      app.use("/media", mediagate.middleware)
    })
    cleanups.push(() => mediagate.close())
    await mediagate.ready
    const keys = (await mediagate.bootstrap())!
    expect(keys.test.key).toMatch(/^mg_test_/)
    expect(await mediagate.bootstrap()).toBeUndefined()

    // the app's own routes, its JSON parsing included
    expect(await json(await fetch(`${base}/hello`))).toEqual({ status: 200, body: { hello: "world" } })
    expect(await json(await post(`${base}/echo`, "x", { a: 1 }))).toEqual({ status: 200, body: { a: 1 } })
    // a path below the mount point that is not Mediagate's goes on to the app (Express' own 404)
    const other = await fetch(`${base}/media/elsewhere`)
    expect(other.status).toBe(404)
    expect(other.headers.get("content-type")).not.toContain("application/json")

    // a body express.json() already parsed is still validated by Mediagate
    const invalid = await json(
      await post(`${base}/media/api/v1/vendor3/text-to-video`, keys.test.key, {
        model: "vendor3-3_fast",
        input: {}
      })
    )
    expect(invalid.status).toBe(400)
    expect(invalid.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" } })

    const ack = await json(
      await post(`${base}/media/api/v1/vendor4/text-to-image`, keys.test.key, {
        model: "vendor4-4-0",
        input: { prompt: "a red kite", size: "1K" }
      })
    )
    expect(ack.status).toBe(201)
    let task: any
    for (let i = 0; i < 200; i++) {
      task = (await json(
        await fetch(`${base}/media/api/v1/tasks/${ack.body.data.id}`, {
          headers: { authorization: `Bearer ${keys.test.key}` }
        })
      )).body.data
      if (task.status === "succeeded" || task.status === "failed") break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(task.status).toBe("succeeded")
    const url: string = task.result[0].url
    expect(url.startsWith(`${base}/media/files/`)).toBe(true)
    const file = await fetch(url)
    expect(file.status).toBe(200)
    expect(file.headers.get("content-type")).toBe("image/png")
    expect((await file.arrayBuffer()).byteLength).toBe(task.result[0].size_bytes)
  })

  it("mounted at the root before express.json(): raw bodies, client addresses, admin calls in code", async () => {
    const mediagate = Mediagate.make({
      database: { sqlite: ":memory:" },
      dataDir: dataDir(),
      adminToken: "admin-secret"
    })
    cleanups.push(() => mediagate.close())
    const base = await expressApp((app) => {
      app.use(mediagate.middleware)
      app.use(express.json())
      app.post("/echo", (req, res) => void res.json(req.body))
    })
    await mediagate.ready
    // the host's JSON route after Mediagate still gets its body
    expect(await json(await post(`${base}/echo`, "x", { b: 2 }))).toEqual({ status: 200, body: { b: 2 } })
    // broken JSON is answered by Mediagate's envelope, not by a parser of the app
    const broken = await fetch(`${base}/admin/v1/accounts`, {
      method: "POST",
      headers: { authorization: "Bearer admin-secret", "content-type": "application/json" },
      body: "{\"name\":"
    })
    expect(await json(broken)).toMatchObject({ status: 400, body: { error: { code: "VALIDATION_ERROR" } } })

    // accounts and keys from code, with the JSON of /admin/v1
    const account = await mediagate.admin.createAccount({ name: "Acme", balance: 5 })
    expect(account).toMatchObject({ name: "Acme", balance: 5 })
    expect(await mediagate.admin.credit(account.id, { amount: 2.5 })).toMatchObject({ balance: 7.5 })
    expect(await mediagate.admin.getAccount(account.id)).toMatchObject({ id: account.id, balance: 7.5 })
    await expect(mediagate.admin.createAccount({ name: "" })).rejects.toThrow(/invalid input/)
    await expect(mediagate.admin.getAccount("acct_missing")).rejects.toMatchObject({ code: "ACCOUNT_NOT_FOUND" })

    // IP whitelists see the socket address the middleware passes on
    const local = await mediagate.admin.createKey(account.id, { name: "local", ipWhitelist: ["127.0.0.1"] })
    const remote = await mediagate.admin.createKey(account.id, { name: "remote", ipWhitelist: ["203.0.113.0/24"] })
    const balance = (key: string) => fetch(`${base}/api/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
    expect(await json(await balance(local.key))).toMatchObject({ status: 200, body: { data: { balance: 7.5 } } })
    expect(await json(await balance(remote.key))).toMatchObject({
      status: 403,
      body: { error: { code: "KEY_PERMISSION_DENIED" } }
    })
  })
})

describe("NodeAdapters.urlBelow: Mediagate's URL for hosts that pass the full URL on", () => {
  it("strips the prefix from Mediagate's paths, keeps the query, and leaves every other URL to the host", () => {
    const cases: ReadonlyArray<readonly [string, string, string | undefined]> = [
      ["/media", "/media/api/v1/tasks?limit=5", "/api/v1/tasks?limit=5"],
      ["/media/", "/media/dashboard", "/dashboard"],
      ["/media", "/media/dashboard/", "/dashboard/"],
      ["/media", "/media/dashboard/tasks/task_1?status=failed", "/dashboard/tasks/task_1?status=failed"],
      ["/media", "/media/files/tasks/a.png?expires=1", "/files/tasks/a.png?expires=1"],
      ["/media", "/media", undefined],
      ["/media", "/media?x=1", undefined],
      ["/media", "/media/", undefined],
      ["/media", "/media/nope", undefined],
      ["/media", "/mediagate/api/v1/tasks", undefined],
      ["/media", "/api/v1/tasks", undefined],
      ["/media", "/media/dashboards", undefined],
      ["", "/api/v1/tasks", "/api/v1/tasks"],
      ["/", "/healthz", "/healthz"],
      ["", "/", undefined]
    ]
    expect(cases.map(([prefix, url]) => NodeAdapters.urlBelow(prefix, url))).toEqual(cases.map(([, , below]) => below))
  })
})

describe("Mediagate.make while starting and after closing", () => {
  it("answers 503 with Retry-After until a failing database comes up, then serves; 503 again after close", async () => {
    let attempts = 0
    let up = false
    const flaky = Layer.unwrapEffect(Effect.suspend(() => {
      attempts++
      return up
        ? Effect.succeed(SqliteClient.layer({ filename: ":memory:" }))
        : Effect.fail(new Error("connection refused"))
    }))
    const mediagate = Mediagate.make({
      database: { layer: flaky },
      dataDir: dataDir(),
      retry: Schedule.spaced("20 millis")
    })
    const server = createServer(mediagate.handler)
    const base = await listen(server)
    try {
      const early = await fetch(`${base}/api/v1/balance`)
      expect(early.status).toBe(503)
      expect(early.headers.get("retry-after")).toBe("1")
      expect(await early.json()).toEqual({
        success: false,
        error: { code: "SERVICE_UNAVAILABLE", message: "Mediagate is starting" }
      })
      await new Promise((r) => setTimeout(r, 100))
      expect((await fetch(`${base}/readyz`)).status).toBe(503)
      up = true
      await mediagate.ready
      expect(attempts).toBeGreaterThan(2)
      expect((await fetch(`${base}/readyz`)).status).toBe(200)
      expect((await fetch(`${base}/api/v1/balance`)).status).toBe(401)
      await mediagate.close()
      const late = await fetch(`${base}/readyz`)
      expect(late.status).toBe(503)
      expect(((await late.json()) as any).error.message).toBe("Mediagate is shutting down")
    } finally {
      await close(server)
      await mediagate.close()
    }
  })

  it("reports a start that retrying cannot fix, and serves 503 meanwhile", async () => {
    const mediagate = Mediagate.make({
      database: { sqlite: ":memory:" },
      dataDir: dataDir(),
      tablePrefix: "Bad-Prefix"
    })
    await expect(mediagate.ready).rejects.toMatchObject({ _tag: "StartError", retryable: false })
    await expect(mediagate.ready).rejects.toThrow(/MEDIAGATE_TABLE_PREFIX/)
    const server = createServer(mediagate.handler)
    const base = await listen(server)
    try {
      const answer = await fetch(`${base}/api/v1/tasks`)
      expect(answer.status).toBe(503)
      expect(((await answer.json()) as any).error.message).toBe("Mediagate failed to start")
    } finally {
      await close(server)
      await mediagate.close()
    }
  })

  it("tries again after a connection dropped while starting (a defect of @effect/sql); a bug still ends the start", async () => {
    // @effect/sql makes a defect of a failed ROLLBACK or COMMIT and of a failed migration
    let attempts = 0
    const dropped = Layer.unwrapEffect(Effect.suspend(() =>
      ++attempts === 1
        ? Effect.die(new SqlError.SqlError({ message: "Failed to execute statement", cause: new Error("terminated") }))
        : Effect.succeed(SqliteClient.layer({ filename: ":memory:" }))
    ))
    const mediagate = Mediagate.make({
      database: { layer: dropped },
      dataDir: dataDir(),
      retry: Schedule.spaced("20 millis")
    })
    await mediagate.ready
    expect(attempts).toBe(2)
    await mediagate.close()

    let bugs = 0
    const bug = Layer.unwrapEffect(Effect.suspend(() => {
      bugs++
      return Effect.as(
        Effect.die(new TypeError("undefined is not a function")),
        SqliteClient.layer({ filename: ":memory:" })
      )
    }))
    const broken = Mediagate.make({ database: { layer: bug }, dataDir: dataDir(), retry: Schedule.spaced("20 millis") })
    await expect(broken.ready).rejects.toThrow(/undefined is not a function/)
    expect(bugs).toBe(1)
    await broken.close()
  })

  it("closing before the start finished rejects ready", async () => {
    // a database that never answers
    const never = Layer.unwrapEffect(Effect.as(Effect.never, SqliteClient.layer({ filename: ":memory:" })))
    const mediagate = Mediagate.make({ database: { layer: never }, dataDir: dataDir() })
    await mediagate.close()
    await expect(mediagate.ready).rejects.toThrow(/closed before it started/)
  })
})
