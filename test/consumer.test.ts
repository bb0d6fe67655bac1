/**
 * In a consumer's shoes: every publishable package is packed (`npm pack`), and the tarballs are installed from the
 * npm registry's point of view into two projects outside the repository:
 *
 * - a plain-JavaScript Express app on SQLite, run with plain `node`: its own route beside Mediagate's middleware
 *   (mounted under `/mg`, after `express.json()`); a task created with a test key reaches `succeeded` and its file
 *   downloads; `effect` is installed once (peer dependencies, no nested copies); SIGTERM stops it cleanly;
 * - a strict TypeScript project on PostgreSQL only (`NodeNext`, `strict`, `noUncheckedIndexedAccess`,
 *   `exactOptionalPropertyTypes`, `skipLibCheck: false`): `tsc --noEmit` passes, and `better-sqlite3` is not even
 *   installed (the drivers are optional peers).
 *
 * Installing needs the npm registry (its cache makes later runs quick).
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "./server.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const npm = process.platform === "win32" ? "npm.cmd" : "npm"
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")

/** The packages a consumer installs, in dependency order. */
const published = ["contract", "persistence", "outbound", "engine", "billing", "accounts", "webhooks", "server", "vendors", "dashboard", "node"]

const versionOf = (name: string): string =>
  JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version

/** Runs a command without blocking the test runner (npm install takes a while). */
const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
    child.once("error", reject)
    child.once("close", (status) => resolve({ status, stdout, stderr }))
  })

const pack = async (destination: string): Promise<Record<string, string>> => {
  const packed = await run(npm, [
    "pack",
    "--json",
    "--pack-destination",
    destination,
    ...published.map((p) => `--workspace=@mediagate/${p}`)
  ], root)
  if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`)
  const out = packed.stdout
  const entries = JSON.parse(out) as Array<{ name: string; filename: string; files: Array<{ path: string }> }>
  for (const entry of entries) {
    // a tarball ships the build and nothing of the development tree
    const paths = entry.files.map((f) => f.path)
    expect(paths).toContain("dist/index.js")
    expect(paths).toContain("dist/index.d.ts")
    expect(paths.filter((p) => p.startsWith("src/") || p.startsWith("test/") || p.includes("tsbuildinfo"))).toEqual([])
  }
  return Object.fromEntries(entries.map((e) => [e.name, `file:${join(destination, e.filename.replace(/^@mediagate\//, "mediagate-").replace(/\//g, "-"))}`]))
}

const install = async (dir: string) => {
  const result = await run(npm, ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], dir)
  if (result.status !== 0) throw new Error(`npm install failed in ${dir}:\n${result.stdout}\n${result.stderr}`)
}

/** Copies of `effect` installed anywhere below `dir` (a consumer must get exactly one). */
const effectCopies = (dir: string): number => {
  let count = 0
  const walk = (modules: string) => {
    if (!existsSync(modules)) return
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith(".")) continue
      if (entry.startsWith("@")) {
        for (const scoped of readdirSync(join(modules, entry))) walk(join(modules, entry, scoped, "node_modules"))
        continue
      }
      if (entry === "effect") count++
      walk(join(modules, entry, "node_modules"))
    }
  }
  walk(join(dir, "node_modules"))
  return count
}

const expressApp = `
import express from "express"
import { Mediagate } from "@mediagate/node"

const port = Number(process.env.PORT)
const mediagate = Mediagate.make({
  dataDir: process.env.DATA_DIR,
  publicBaseUrl: \`http://127.0.0.1:\${port}/mg\`,
  fileSecret: "consumer-test",
  settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01" }
})
const app = express()
app.get("/own", (_req, res) => res.json({ own: true }))
app.use(express.json())
app.use("/mg", mediagate.middleware)
const server = app.listen(port, "127.0.0.1", async () => {
  const keys = await mediagate.bootstrap()
  console.log(JSON.stringify({ ready: true, testKey: keys?.test.key }))
})
process.on("SIGTERM", () => server.close(() => mediagate.close().then(() => process.exit(0))))
`

const strictProgram = `
import { Database, Mediagate, NodeAdapters, Server } from "@mediagate/node"
import { Client, Errors } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { createServer } from "node:http"

const database: Database.Database = { postgres: "postgres://postgres@127.0.0.1:5432/test", maxConnections: 4 }

// an Effect app: the layer, the service, bootstrap and the HttpApp
export const program = Effect.gen(function*() {
  const mediagate = yield* Mediagate.Mediagate
  const created = yield* mediagate.bootstrap({ accountName: "Typed" })
  const key: string | undefined = Option.getOrUndefined(Option.map(created, (c) => c.test.key))
  const app = mediagate.httpApp
  return { key, app }
}).pipe(Effect.provide(Mediagate.layer({ database, tablePrefix: "typed_", workers: false })))

// a plain Node app
const handle: Mediagate.Handle = Mediagate.make({ database, publicBaseUrl: "https://example.com/media" })
createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0] ?? "/"
  if (NodeAdapters.isMediagatePath(path)) handle.handler(req, res)
  else res.end("mine")
})
export const account = handle.admin.createAccount({ name: "Acme", balance: 10 }).then((a) => a.id)
export const isError: (u: unknown) => u is Errors.AnyApiError = Errors.isApiError

// the production server and the typed client
export const serve: Effect.Effect<never, Mediagate.StartError> = Server.program
export const client = Client.make({ baseUrl: "http://localhost:3000", apiKey: "mg_test_x" })
export const composed: Layer.Layer<Mediagate.Provides, Mediagate.StartError> = Mediagate.layerConfig
`

describe("the packages in a consumer's project", () => {
  it("install from tarballs; a plain-JS Express app runs with node; a strict TS project compiles", async () => {
    const work = mkdtempSync(join(tmpdir(), "mg-consumer-"))
    const tarballs = join(work, "tarballs")
    mkdirSync(tarballs)
    const files = await pack(tarballs)
    const mediagateDeps = Object.fromEntries(published.map((p) => [`@mediagate/${p}`, files[`@mediagate/${p}`]!]))

    // --- the Express app (plain JavaScript, SQLite) ---
    const app = join(work, "express-app")
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), JSON.stringify({
      name: "consumer-express-app",
      private: true,
      type: "module",
      dependencies: {
        ...mediagateDeps,
        "@effect/sql-sqlite-node": `^${versionOf("@effect/sql-sqlite-node")}`,
        express: "^5.1.0"
      }
    }, null, 2))
    writeFileSync(join(app, "app.mjs"), expressApp)
    await install(app)
    expect(effectCopies(app)).toBe(1)

    const port = await freePort()
    const child = spawn(process.execPath, ["app.mjs"], {
      cwd: app,
      env: { ...process.env, PORT: port, DATA_DIR: join(work, "data") },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    try {
      const deadline = Date.now() + 60_000
      while (!output.includes("\"ready\":true")) {
        if (child.exitCode !== null) throw new Error(`the app exited:\n${output}`)
        if (Date.now() > deadline) throw new Error(`the app did not start:\n${output}`)
        await new Promise((r) => setTimeout(r, 50))
      }
      const { testKey } = JSON.parse(output.split("\n").find((l) => l.includes("\"ready\":true"))!) as { testKey: string }
      const base = `http://127.0.0.1:${port}`
      expect(await (await fetch(`${base}/own`)).json()).toEqual({ own: true })
      const headers = { authorization: `Bearer ${testKey}`, "content-type": "application/json" }
      /** A task made and polled to its end; answers its first result file's bytes. */
      const generate = async (path: string, body: unknown) => {
        const ack = await fetch(`${base}/mg/api/v1/${path}`, { method: "POST", headers, body: JSON.stringify(body) })
        expect(ack.status).toBe(201)
        const id = ((await ack.json()) as { data: { id: string } }).data.id
        let task: { status: string; result?: Array<{ url: string; size_bytes: number }> } = { status: "pending" }
        for (let i = 0; i < 600 && task.status !== "succeeded" && task.status !== "failed"; i++) {
          await new Promise((r) => setTimeout(r, 50))
          task = ((await (await fetch(`${base}/mg/api/v1/tasks/${id}`, { headers })).json()) as { data: typeof task }).data
        }
        expect(task.status).toBe("succeeded")
        const file = await fetch(task.result![0]!.url)
        expect(file.status).toBe(200)
        const bytes = new Uint8Array(await file.arrayBuffer())
        expect(bytes.byteLength).toBe(task.result![0]!.size_bytes)
        return bytes
      }
      const image = await generate("vendor4/text-to-image", { model: "vendor4-4-0", input: { prompt: "a lighthouse", size: "1K" } })
      expect([...image.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47])
      // a clip: encoded on the vendors package's worker thread, whose module the packed package must ship
      const video = await generate("vendor3/text-to-video", { model: "vendor3-3", input: { prompt: "a paper boat [sim:delay=0]" } })
      expect(new TextDecoder().decode(video.subarray(4, 8))).toBe("ftyp")
    } finally {
      const exit = await new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode)
        child.once("exit", resolve)
        child.kill("SIGTERM")
      })
      expect(exit, output).toBe(0)
    }

    // --- the strict TypeScript project (PostgreSQL only) ---
    const typed = join(work, "strict-ts")
    mkdirSync(typed)
    writeFileSync(join(typed, "package.json"), JSON.stringify({
      name: "consumer-strict-ts",
      private: true,
      type: "module",
      dependencies: {
        ...mediagateDeps,
        "@effect/sql-pg": `^${versionOf("@effect/sql-pg")}`,
        "@types/node": `^${versionOf("@types/node")}`
      }
    }, null, 2))
    writeFileSync(join(typed, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        noEmit: true,
        types: ["node"]
      },
      include: ["index.ts"]
    }, null, 2))
    writeFileSync(join(typed, "index.ts"), strictProgram)
    await install(typed)
    expect(existsSync(join(typed, "node_modules", "better-sqlite3"))).toBe(false)
    expect(existsSync(join(typed, "node_modules", "@effect", "sql-sqlite-node"))).toBe(false)
    expect(effectCopies(typed)).toBe(1)
    const compiled = await run(process.execPath, [tsc, "-p", typed], typed)
    expect(compiled.stdout + compiled.stderr).toBe("")
    expect(compiled.status).toBe(0)
  }, 900_000)
})
