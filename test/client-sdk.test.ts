/**
 * The JavaScript client (`@mediagate/client`, issue 16) and the OpenAPI document as third-party generators read it,
 * against the example server as a child process (SQLite; PostgreSQL too when it runs):
 *
 * - the committed generated types are what `npm run client:generate` renders, and the bundle stays in its budget;
 * - the client from its sources: `run` to `succeeded` with progress, download, pages, errors with request ids,
 *   every other endpoint, a webhook delivery verified with `verifyWebhook`; a create and a retry whose first answer
 *   is lost, retried by the client with the same `Idempotency-Key`: one task and one charge each (a live account),
 *   and ten concurrent retries with one key: one task, one charge;
 * - openapi-typescript 7 + openapi-fetch: types generated from the served `/api/v1/openapi.json`, a client program
 *   type-checked under `strict` and run: create with only required fields → get → list with filters and a cursor;
 * - the packed client in a fresh project outside the repository (nothing else installed): a plain-JS app runs a
 *   task to `succeeded` and verifies a webhook; a strict TypeScript file using the client type-checks.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Mediagate, MediagateError, verifyWebhook, type WebhookEvent } from "@mediagate/client"
import { run as runProcess } from "@mediagate/testing/processes"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { budget, measure } from "../scripts/client-size.js"
import { render, target } from "../scripts/client-types.js"
import * as DashboardCatalog from "../scripts/dashboard-catalog.js"
import { awaitBuild } from "./build.js"
import { freshDatabase, makeAccount, scenario, serverEnv } from "./harness.js"
import { bootstrapKeys, freePort, psql, type RunningServer, runPostgres, startServer } from "./server.js"
import { compilers, strictCompilerOptions } from "./typescript.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const tsc = compilers.typescript7
const openapiTypescript = join(root, "node_modules", "openapi-typescript", "bin", "cli.js")
const npm = process.platform === "win32" ? "npm.cmd" : "npm"

/** Runs a command in `cwd` with `env` added to the test's environment. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  runProcess(command, args, { cwd, env: { ...process.env, ...env } })

/** A local webhook receiver keeping the raw bodies and headers. */
const receiver = async () => {
  const received: Array<{ body: string; headers: IncomingHttpHeaders }> = []
  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString()))
    req.on("end", () => {
      received.push({ body, headers: req.headers })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r()))
  }
}

const until = async (done: () => boolean, ms = 15_000) => {
  const deadline = Date.now() + ms
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  return done()
}

/** A prompt the simulated upstream finishes at once. */
const instant = (text: string) => `[sim:delay=0] ${text}`

describe("the client's generated types", () => {
  it("are what `npm run client:generate` renders from the contract", async () => {
    const rendered = await render()
    expect(rendered).toContain("export interface paths")
    expect(rendered).toContain(`"tasks.list": { method: "GET", path: "/api/v1/tasks" }`)
    expect(readFileSync(target, "utf8")).toBe(rendered)
  })

  it("and the dashboard's catalog are what `npm run dashboard:generate` renders from the contract", () => {
    const rendered = DashboardCatalog.render()
    expect(rendered).toContain(`export const taskStatuses = [`)
    expect(readFileSync(DashboardCatalog.target, "utf8")).toBe(rendered)
  })

  it(`bundle into at most ${budget / 1024} KiB minified+gzipped (esbuild)`, async () => {
    const { gzipped, minified } = await measure()
    console.log(`@mediagate/client: ${minified} bytes minified, ${gzipped} bytes minified+gzipped`)
    expect(gzipped).toBeGreaterThan(1_000)
    expect(gzipped).toBeLessThanOrEqual(budget)
  })
})

const backends: Array<{ name: string; env: () => Record<string, string>; cleanup?: () => void }> = [
  { name: "SQLite", env: () => ({ MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-client-")) }) }
]
if (runPostgres) {
  const database = `mg_client_${Date.now()}`
  backends.push({
    name: "PostgreSQL",
    env: () => {
      expect(psql(`CREATE DATABASE ${database}`)).toBe(0)
      return {
        DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
        MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-client-pg-"))
      }
    },
    cleanup: () => void psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  })
} else {
  console.warn("PostgreSQL is not running at 127.0.0.1:5432: the client's PostgreSQL run is skipped")
}

awaitBuild()

for (const postgres of runPostgres ? [false, true] : [false]) {
  const database = postgres ? "PostgreSQL" : "SQLite"
  it(
    `@mediagate/client on ${database}: an answer lost, then the client's own retry: one task, one charge`,
    () =>
      scenario("client retries", async (scope) => {
        const env = await serverEnv(freshDatabase(scope, postgres, "client"))
        const server = scope.server("gateway", await startServer(env))
        const keys = await makeAccount(server.baseUrl, "client retries", 100)
        // while `drop` is set, the next request reaches the server and its answer is lost (a connection reset)
        const keysSent: Array<string | null> = []
        let drop = false
        const lossy: typeof fetch = async (input, init) => {
          keysSent.push(new Headers(init?.headers).get("idempotency-key"))
          const response = await fetch(input, init)
          if (!drop) return response
          drop = false
          await response.arrayBuffer()
          throw new TypeError("fetch failed: other side closed")
        }
        const mg = new Mediagate({ apiKey: keys.live, baseUrl: server.baseUrl, fetch: lossy })
        const charges = async () => (await mg.balance.ledger({ kind: "charge", limit: 100 })).data.map((e) => e.task_id)
        const tasks = async () => (await mg.tasks.list({ limit: 100 })).pagination.total

        drop = true
        const ack = await mg.create("vendor4/text-to-image", {
          model: "vendor4-4-0",
          input: { prompt: "[sim:fail] an answer lost" }
        })
        expect(keysSent).toHaveLength(2)
        expect(keysSent[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        expect(keysSent[1]).toBe(keysSent[0])
        expect(await charges()).toEqual([ack.id])
        expect(await tasks()).toBe(1)
        expect((await mg.waitFor(ack.id, { timeout: 30_000, pollInterval: { min: 50 } })).status).toBe("failed")

        // the retry of the failed task: the same, on the retry route
        drop = true
        keysSent.length = 0
        const retried = await mg.tasks.retry(ack.id)
        expect(retried.original_task_id).toBe(ack.id)
        expect(keysSent).toHaveLength(2)
        expect(keysSent[1]).toBe(keysSent[0])
        expect(await charges()).toEqual([retried.id, ack.id])
        expect(await tasks()).toBe(2)
        // another call is another intent: a new key, a new task, a new charge (the spec's rule)
        const again = await mg.tasks.retry(ack.id)
        expect(again.id).not.toBe(retried.id)
        expect(keysSent.at(-1)).not.toBe(keysSent[0])
        expect(await charges()).toEqual([again.id, retried.id, ack.id])
        // ten retries at once with one key (a user's own repeats): one task, one charge
        const ten = await Promise.all(
          Array.from({ length: 10 }, () => mg.tasks.retry(ack.id, { idempotencyKey: "ten" }))
        )
        expect(new Set(ten.map((each) => each.id)).size).toBe(1)
        expect(await charges()).toEqual([ten[0]!.id, again.id, retried.id, ack.id])
        expect(await tasks()).toBe(4)
      }, "mg-client-"),
    90_000
  )
}

/**
 * The openapi-fetch program compiled against the types openapi-typescript generates from `document` (strict
 * TypeScript, no errors allowed); answers its folder.
 */
const compileOpenapiFetch = async (document: string, name: string): Promise<string> => {
  const dir = join(root, "test", "build", `openapi-fetch-${name}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "openapi.json"), document)
  const generated = await run(process.execPath, [openapiTypescript, "openapi.json", "-o", "schema.d.ts"], dir)
  expect(generated.status, generated.stderr).toBe(0)
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        ...strictCompilerOptions,
        types: ["node"],
        outDir: "out"
      },
      files: ["main.ts"]
    })
  )
  writeFileSync(join(dir, "main.ts"), openapiFetchProgram)
  const compiled = await run(process.execPath, [tsc, "-p", dir], dir)
  expect(compiled.stdout + compiled.stderr).toBe("")
  return dir
}

/** The compiled openapi-fetch programs by the document they were generated from, without its `servers`. */
const openapiFetchPrograms = new Map<string, Promise<string>>()

for (const backend of backends) {
  describe(`the clients against the example server on ${backend.name}`, () => {
    let server: RunningServer
    let key = ""

    beforeAll(async () => {
      const port = await freePort()
      server = await startServer({
        PORT: port,
        MEDIAGATE_PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true",
        MEDIAGATE_FILE_SECRET: "client-secret",
        ...backend.env()
      })
      await until(() => bootstrapKeys(server.output()) !== undefined, 10_000)
      key = bootstrapKeys(server.output())!.test
    }, 90_000)

    afterAll(async () => {
      expect(await server.stop()).toBe(0)
      backend.cleanup?.()
    }, 30_000)

    it("@mediagate/client: run, progress, download, pages, errors, every endpoint, a verified webhook", async () => {
      const hooks = await receiver()
      try {
        const mg = new Mediagate({ apiKey: key, baseUrl: server.baseUrl })
        const hook = await mg.webhooks.create({ url: hooks.url, events: ["task.completed"] })
        expect(hook.secret).toMatch(/^whsec_/)

        // run: only the required fields, resolved once finished, with progress along the way
        const seen: Array<string> = []
        const task = await mg.run("vendor4/text-to-image", {
          model: "vendor4-4-0",
          input: { prompt: instant("a lighthouse") }
        }, { onProgress: (t) => seen.push(t.status), timeout: 30_000, pollInterval: { min: 50 } })
        expect(task.status).toBe("succeeded")
        expect(seen.at(-1)).toBe("succeeded")
        const file = await mg.files.download(task.result![0]!)
        expect([...new Uint8Array(await file.arrayBuffer()).subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47])

        // the signed delivery verifies under both schemes
        expect(await until(() => hooks.received.length > 0)).toBe(true)
        const delivery = hooks.received[0]!
        const event: WebhookEvent = await mg.webhooks.verify(delivery.body, delivery.headers, hook.secret)
        expect(event).toMatchObject({ type: "task.completed", data: { task: { id: task.id, status: "succeeded" } } })
        expect(await verifyWebhook(delivery.body, delivery.headers, hook.secret, { scheme: "standard" })).toEqual(event)
        await expect(verifyWebhook(delivery.body + " ", delivery.headers, hook.secret)).rejects.toMatchObject({
          code: "WEBHOOK_BAD_SIGNATURE"
        })

        // an idempotent creation answers the same task
        const body = { model: "vendor3-3_fast" as const, input: { prompt: instant("a boat") } }
        const first = await mg.create("vendor3/text-to-video", body, { idempotencyKey: `k-${backend.name}` })
        const again = await mg.create("vendor3/text-to-video", body, { idempotencyKey: `k-${backend.name}` })
        expect(again.id).toBe(first.id)
        expect((await mg.waitFor(first.id, { timeout: 30_000 })).status).toBe("succeeded")

        // pages: filters and a cursor, every page once
        const ids: Array<string> = []
        for await (const page of mg.tasks.pages({ status: "succeeded", limit: 1 })) {
          for (const t of page.data) ids.push(t.id)
        }
        expect(ids.sort()).toEqual([task.id, first.id].sort())
        const vendor3 = await mg.tasks.list({ provider: "vendor3" })
        expect(vendor3.data.map((t) => t.id)).toEqual([first.id])

        // errors: one class with the envelope's code, the status and the request id
        const missing = await mg.tasks.get("task_missing").catch((e: unknown) => e)
        expect(missing).toBeInstanceOf(MediagateError)
        expect(missing).toMatchObject({ code: "TASK_NOT_FOUND", status: 404 })
        expect((missing as MediagateError).requestId).toMatch(/\S/)
        await expect(mg.tasks.retry(task.id)).rejects.toMatchObject({ code: "TASK_NOT_RETRYABLE", status: 409 })
        await expect(mg.create("vendor3/text-to-video", { model: "vendor3-3_fast", input: { prompt: "" } }))
          .rejects.toMatchObject({ code: "VALIDATION_ERROR", status: 400 })
        await expect(new Mediagate({ apiKey: "mg_test_wrong", baseUrl: server.baseUrl }).balance.get())
          .rejects.toMatchObject({ status: 401 })

        // the other endpoints
        const queued = await mg.create("vendor3/text-to-video", {
          model: "vendor3-3",
          input: { prompt: "[sim:delay=100000] slow", aspect_ratio: "9:16" }
        })
        const cancelled = await mg.tasks.cancel(queued.id)
        expect(cancelled.status).toBe("cancelled")
        expect((await mg.balance.get()).currency).toBe("USD")
        expect((await mg.balance.ledger()).data).toBeInstanceOf(Array)
        expect((await mg.voices.list({ name: "a" })).voices).toBeInstanceOf(Array)
        const created = await mg.apiKeys.create({ name: "derived" })
        expect((await mg.apiKeys.list()).some((k) => k.id === created.id)).toBe(true)
        expect(await mg.apiKeys.delete(created.id)).toEqual({ id: created.id, deleted: true })
        expect((await mg.webhooks.list()).map((w) => w.id)).toContain(hook.id)
        expect((await mg.webhooks.test(hook.id)).delivered).toBe(true)
        const deliveries = await mg.webhooks.deliveries(hook.id)
        expect(deliveries.data.length).toBeGreaterThanOrEqual(1)
        const pagesOfDeliveries: Array<number> = []
        for await (const page of mg.webhooks.deliveryPages(hook.id)) pagesOfDeliveries.push(page.data.length)
        expect(pagesOfDeliveries.reduce((a, b) => a + b, 0)).toBe(deliveries.pagination.total)
        const replayed = await mg.webhooks.replay(hook.id, deliveries.data[0]!.id)
        expect(replayed.id).not.toBe(deliveries.data[0]!.id)
        expect(await mg.webhooks.delete(hook.id)).toEqual({ id: hook.id, deleted: true })

        // run waits on the task's event stream: one request for the whole wait, no polling
        const urls: Array<string> = []
        const counted = new Mediagate({
          apiKey: key,
          baseUrl: server.baseUrl,
          fetch: (input, init) => {
            urls.push(String(input).replace(server.baseUrl, ""))
            return fetch(input, init)
          }
        })
        const streamed = await counted.run("vendor3/text-to-video", {
          model: "vendor3-3_fast",
          input: { prompt: "[sim:delay=1] a harbour" }
        }, { timeout: 30_000 })
        expect(streamed.status).toBe("succeeded")
        expect(urls).toEqual(["/api/v1/vendor3/text-to-video", `/api/v1/tasks/${streamed.id}/events`])
        // the stream of a finished task: its final state, then the end
        const states: Array<string> = []
        for await (const state of mg.tasks.stream(streamed.id)) states.push(state.status)
        expect(states).toEqual(["succeeded"])
      } finally {
        await hooks.close()
      }
    }, 120_000)

    it(
      "openapi-typescript + openapi-fetch: strict types from /api/v1/openapi.json; create → get → list with filters and a cursor",
      async () => {
        const document = await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).text()
        // a document the other database's server served too (but for its own address in `servers`, which the
        // generated types do not carry) is compiled once: the program is the same
        const { servers: _servers, ...types } = JSON.parse(document) as Record<string, unknown>
        let compiling = openapiFetchPrograms.get(JSON.stringify(types))
        if (compiling === undefined) {
          compiling = compileOpenapiFetch(document, backend.name.toLowerCase())
          openapiFetchPrograms.set(JSON.stringify(types), compiling)
        }
        const dir = await compiling
        const ran = await run(process.execPath, [join(dir, "out", "main.js")], dir, { BASE: server.baseUrl, KEY: key })
        expect(ran.status, ran.stderr).toBe(0)
        const result = JSON.parse(ran.stdout) as {
          created: { id: string; status: string }
          got: { id: string; input: Record<string, unknown> }
          first: { ids: Array<string>; hasMore: boolean; cursor: string | null }
          second: { ids: Array<string> }
        }
        expect(result.created.status).toBe("pending")
        expect(result.got.id).toBe(result.created.id)
        expect(result.got.input).toMatchObject({ prompt: "a minimal request", aspect_ratio: "16:9" })
        expect(result.first.ids).toHaveLength(1)
        expect(result.first.hasMore).toBe(true)
        expect(result.first.cursor).not.toBeNull()
        expect(result.second.ids).toHaveLength(1)
        expect(result.second.ids[0]).not.toBe(result.first.ids[0])
      },
      120_000
    )

    if (backend.name === "SQLite") {
      it(
        "the packed client alone in a fresh project: a JS app runs a task and verifies a webhook; strict TS compiles",
        async () => {
          const work = mkdtempSync(join(tmpdir(), "mg-client-consumer-"))
          const packed = await run(
            npm,
            ["pack", "--json", "--pack-destination", work, "--workspace=@mediagate/client"],
            root
          )
          expect(packed.status, packed.stderr).toBe(0)
          const [entry] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
          const paths = entry!.files.map((f) => f.path)
          expect(paths).toContain("dist/index.js")
          expect(paths).toContain("dist/index.d.ts")
          // the sources ship for the declaration maps (go-to-definition); the tests do not
          expect(paths).toContain("dist/index.d.ts.map")
          expect(paths).toContain("src/index.ts")
          expect(paths.filter((p) => p.startsWith("test/"))).toEqual([])
          const tarball = join(work, entry!.filename.replace(/^@mediagate\//, "mediagate-"))
          const app = join(work, "app")
          mkdirSync(app)
          writeFileSync(
            join(app, "package.json"),
            JSON.stringify({
              name: "client-consumer",
              private: true,
              type: "module",
              dependencies: { "@mediagate/client": `file:${tarball}` }
            })
          )
          const installed = await run(npm, ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error"], app)
          expect(installed.status, installed.stdout + installed.stderr).toBe(0)
          // nothing but the client is installed: no runtime dependencies at all
          expect(readdirSync(join(app, "node_modules")).filter((e) => !e.startsWith("."))).toEqual(["@mediagate"])
          expect(readdirSync(join(app, "node_modules", "@mediagate"))).toEqual(["client"])

          writeFileSync(join(app, "app.mjs"), consumerApp)
          const hooks = await receiver()
          try {
            const ran = await run(process.execPath, ["app.mjs"], app, { BASE: server.baseUrl, KEY: key })
            expect(ran.status, ran.stdout + ran.stderr).toBe(0)
            const result = JSON.parse(ran.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>
            expect(result).toMatchObject({
              status: "succeeded",
              png: true,
              verified: "task.completed",
              tampered: "WEBHOOK_BAD_SIGNATURE"
            })
          } finally {
            await hooks.close()
          }

          writeFileSync(
            join(app, "tsconfig.json"),
            JSON.stringify({
              compilerOptions: {
                ...strictCompilerOptions,
                lib: ["ES2022", "DOM"],
                noEmit: true,
                types: []
              },
              files: ["index.ts"]
            })
          )
          writeFileSync(join(app, "index.ts"), consumerTypes)
          const compiled = await run(process.execPath, [tsc, "-p", app], app)
          expect(compiled.stdout + compiled.stderr).toBe("")
          expect(compiled.status).toBe(0)
          rmSync(work, { recursive: true, force: true })
        },
        300_000
      )
    }
  })
}

/** The openapi-fetch program: what a new user writes from the generated types alone. */
const openapiFetchProgram = `
import createClient from "openapi-fetch"
import type { paths } from "./schema.js"

const client = createClient<paths>({
  baseUrl: process.env["BASE"] ?? "",
  headers: { authorization: \`Bearer \${process.env["KEY"] ?? ""}\` }
})

// only the required fields: aspect_ratio has a server-side default
const body = { model: "vendor3-3_fast" as const, input: { prompt: "a minimal request" } }
const created = await client.POST("/api/v1/vendor3/text-to-video", { body })
if (created.data === undefined) throw new Error(JSON.stringify(created.error))
const another = await client.POST("/api/v1/vendor3/text-to-video", { body, params: { header: { "idempotency-key": "second" } } })
if (another.data === undefined) throw new Error(JSON.stringify(another.error))

const got = await client.GET("/api/v1/tasks/{id}", { params: { path: { id: created.data.data.id } } })
if (got.data === undefined) throw new Error(JSON.stringify(got.error))

const first = await client.GET("/api/v1/tasks", {
  params: { query: { provider: "vendor3", model: "vendor3-3_fast", created_after: "2020-01-01", limit: 1 } }
})
if (first.data === undefined) throw new Error(JSON.stringify(first.error))
const cursor: string | null = first.data.pagination.cursor
if (cursor === null) throw new Error("no second page")
const second = await client.GET("/api/v1/tasks", { params: { query: { provider: "vendor3", limit: 1, cursor } } })
if (second.data === undefined) throw new Error(JSON.stringify(second.error))

console.log(JSON.stringify({
  created: { id: created.data.data.id, status: created.data.data.status },
  got: { id: got.data.data.id, input: got.data.data.input },
  first: { ids: first.data.data.map((t) => t.id), hasMore: first.data.pagination.hasMore, cursor },
  second: { ids: second.data.data.map((t) => t.id) }
}))
`

/** The plain-JavaScript consumer app: its own webhook receiver, a task run to the end, the delivery verified. */
const consumerApp = `
import { createServer } from "node:http"
import { Mediagate, MediagateError, verifyWebhook } from "@mediagate/client"

const received = []
const receiver = createServer((req, res) => {
  let body = ""
  req.on("data", (c) => (body += c))
  req.on("end", () => { received.push({ body, headers: req.headers }); res.writeHead(204).end() })
})
await new Promise((r) => receiver.listen(0, "127.0.0.1", r))
const url = "http://127.0.0.1:" + receiver.address().port + "/hooks"

const mg = new Mediagate({ apiKey: process.env.KEY, baseUrl: process.env.BASE })
const hook = await mg.webhooks.create({ url, events: ["task.completed"] })
const task = await mg.run("vendor4/text-to-image", { model: "vendor4-4-0", input: { prompt: "[sim:delay=0] a lighthouse" } })
const file = await mg.files.download(task.result[0])
const png = new Uint8Array(await file.arrayBuffer())[1] === 0x50
for (let i = 0; i < 300 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 50))
const event = await verifyWebhook(received[0].body, received[0].headers, hook.secret)
const tampered = await verifyWebhook(received[0].body + "x", received[0].headers, hook.secret).catch((e) => e instanceof MediagateError ? e.code : String(e))
await mg.webhooks.delete(hook.id)
receiver.close()
console.log(JSON.stringify({ status: task.status, png, verified: event.type, tampered }))
`

/** The strict TypeScript consumer: typed calls, narrowing, errors and verification (type-checked only). */
const consumerTypes = `
import { Mediagate, MediagateError, verifyWebhook, type Task, type TaskSummary, type WebhookEvent } from "@mediagate/client"

export const main = async (apiKey: string, raw: string, headers: Headers, secret: string): Promise<string> => {
  const mg = new Mediagate({ apiKey, baseUrl: "http://localhost:3000" })
  const ack = await mg.create("vendor3/text-to-video", { model: "vendor3-3_fast", input: { prompt: "a lighthouse" } }, { idempotencyKey: "k" })
  const task: Task = await mg.run("vendor1/text-to-video", { model: "vendor1-1-0-pro-fast", input: { prompt: "p", duration: 3 } }, {
    onProgress: (t) => console.log(t.status, t.progress),
    signal: AbortSignal.timeout(60_000)
  })
  const first = task.result?.[0]
  if (task.status === "succeeded" && first !== undefined) await mg.files.download(first)
  const all: Array<TaskSummary> = []
  for await (const page of mg.tasks.pages({ status: "failed", limit: 50 })) all.push(...page.data)
  try {
    await mg.tasks.get(ack.id)
  } catch (error) {
    if (error instanceof MediagateError && error.code === "TASK_NOT_FOUND") return error.requestId ?? ""
    throw error
  }
  const event: WebhookEvent = await verifyWebhook(raw, headers, secret)
  // @ts-expect-error an unknown endpoint is a type error
  await mg.create("vendor0/nothing", {})
  // @ts-expect-error the request is checked against the endpoint's Schema
  await mg.create("vendor3/text-to-video", { model: "vendor3-3_fast", input: { prompt: "p", aspect_ratio: "1:1" } })
  return event.data.task.id + all.length
}
`
