/**
 * In a consumer's shoes: every publishable package (each of `packages/*` that is not private) is packed with
 * `npm pack` (its `prepack` builds it), and the tarballs are installed from the npm registry's point of view into
 * projects outside the repository, once at each end of the declared peer ranges:
 *
 * - **lowest**: the lowest minor line of each range (`effect@~3.17.0`, `@effect/platform@~0.90.0`, ...: the newest
 *   patches of those lines), **newest**: the ranges themselves (npm takes the highest published versions in them);
 * - a plain-JavaScript Express app on SQLite, run with plain `node`: every entry point of every package (each module
 *   the `exports` map serves) imports, the `mediagate` command answers `--help`, its own route sits beside
 *   Mediagate's middleware (mounted under `/mg`, after `express.json()`); a task created with a test key reaches
 *   `succeeded` and its file downloads; the dashboard below `/mg` names assets that resolve there and signs in in
 *   Chromium; `effect` is installed once (peer dependencies, no nested copies); SIGTERM
 *   stops it cleanly; every tarball ships its declaration maps and the sources they point to;
 * - a strict TypeScript project on PostgreSQL only (`NodeNext`, `strict`, `noUncheckedIndexedAccess`,
 *   `exactOptionalPropertyTypes`, `skipLibCheck: false`): `tsc --noEmit` passes (TypeScript 5.9 at the lowest end,
 *   TypeScript 7 at the newest), and `better-sqlite3` is not even installed (the drivers are optional peers).
 *
 * Installing needs the npm registry (its cache makes later runs quick). `better-sqlite3` of the workspace's version is
 * served as a prebuilt binary ({@link prebuiltMirror}), and the Express app takes that version at both ends (an npm
 * `override`: the driver is `@effect/sql-sqlite-node`'s dependency, not one of Mediagate's peer ranges).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Chromium from "@mediagate/testing/chromium"
import { expectAssetsBelow, expectSignIn } from "@mediagate/testing/dashboard"
import { run as runProcess } from "@mediagate/testing/processes"
import { spawn, spawnSync } from "node:child_process"
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync
} from "node:fs"
import { createServer } from "node:http"
import { type AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import satisfies from "semver/functions/satisfies.js"
import minVersion from "semver/ranges/min-version.js"
import { awaitBuild, built } from "./build.js"
import { freePort } from "./server.js"
import { compilers, strictCompilerOptions } from "./typescript.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const npm = process.platform === "win32" ? "npm.cmd" : "npm"

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly bin?: Readonly<Record<string, string>>
  readonly peerDependencies?: Readonly<Record<string, string>>
}

const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))

/** The packages a consumer installs: every package of `packages/` that is not private. */
const published = readdirSync(join(root, "packages"))
  .filter((dir) => existsSync(join(root, "packages", dir, "package.json")))
  .map((dir) => manifestOf(join(root, "packages", dir)))
  .filter((manifest) => manifest.private !== true)
  .map((manifest) => manifest.name)

const versionOf = (name: string): string =>
  JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version

/**
 * The peer dependencies a consumer's app pins (every package's declared ranges agree, as `@mediagate/node`'s):
 * Effect and the `@effect/*` packages, without the drivers (each app adds its own) and the optional OTLP exporter.
 */
const peers = (() => {
  const declared = manifestOf(join(root, "packages", "node")).peerDependencies ?? {}
  const own = Object.entries(declared).filter(([name]) =>
    (name === "effect" || name.startsWith("@effect/")) && !name.startsWith("@effect/sql-") &&
    name !== "@effect/opentelemetry"
  )
  return { ranges: declared, own }
})()

/** The version specs of an end of the ranges: `~` the lowest version of each range, or the range itself. */
const at = (end: "lowest" | "newest", names: ReadonlyArray<string>): Record<string, string> =>
  Object.fromEntries(names.map((name) => {
    const range = peers.ranges[name]
    if (range === undefined) throw new Error(`@mediagate/node declares no peer range for ${name}`)
    return [name, end === "newest" ? range : `~${minVersion(range)!.version}`]
  }))

/** Runs a command in `cwd`. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = process.env) =>
  runProcess(command, args, { cwd, env })

/** Packs every published package (once per run; `prepack` builds each) and answers their `file:` specs. */
const pack = async (destination: string): Promise<Record<string, string>> => {
  // after the run's build: `prepack` builds too, into the same folders
  await built()
  const packed = await run(npm, [
    "pack",
    "--json",
    "--pack-destination",
    destination,
    ...published.map((name) => `--workspace=${name}`)
  ], root)
  if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`)
  const entries = JSON.parse(packed.stdout) as Array<{ name: string; filename: string; files: Array<{ path: string }> }>
  expect(entries.map((e) => e.name).sort()).toEqual([...published].sort())
  for (const entry of entries) {
    // a tarball ships the build, its declaration maps, the sources they point to and the changelog, nothing else of
    // the tree
    const paths = entry.files.map((f) => f.path)
    expect(paths).toContain("dist/index.js")
    expect(paths).toContain("dist/index.d.ts")
    expect(paths).toContain("dist/index.d.ts.map")
    expect(paths).toContain("src/index.ts")
    expect(paths).toContain("CHANGELOG.md")
    expect(paths.filter((p) => p.startsWith("test/") || p.startsWith("build/") || p.includes("tsbuildinfo")))
      .toEqual([])
  }
  const file = (filename: string) =>
    join(destination, filename.replace(/^@mediagate\//, "mediagate-").replace(/\//g, "-"))
  return Object.fromEntries(entries.map((e) => [e.name, `file:${file(e.filename)}`]))
}

let packed: Promise<Record<string, string>> | undefined
const tarballs = (): Promise<Record<string, string>> => {
  if (packed === undefined) {
    const destination = join(mkdtempSync(join(tmpdir(), "mg-consumer-")), "tarballs")
    mkdirSync(destination)
    packed = pack(destination)
  }
  return packed
}

/**
 * A release mirror for `better-sqlite3`'s prebuilt binaries (`prebuild-install` reads its host from
 * `npm_config_better_sqlite3_binary_host`): it serves the workspace's own build of its version as that version's
 * release asset for this Node and platform, so an app installing that version downloads a binary, as users do from
 * the project's releases, instead of compiling it (this machine may not reach those releases). Any other version
 * is not found there, and its install compiles it as before.
 */
const prebuiltMirror = (() => {
  let started: Promise<string> | undefined
  const start = () =>
    new Promise<string>((resolve, reject) => {
      const dir = join(root, "node_modules", "better-sqlite3")
      const version = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version
      const asset =
        `/v${version}/better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
      const tarball = join(mkdtempSync(join(tmpdir(), "mg-prebuilt-")), "asset.tar.gz")
      const packed = spawnSync("tar", ["-czf", tarball, "build/Release/better_sqlite3.node"], { cwd: dir })
      if (packed.status !== 0) return reject(new Error(`tar failed: ${packed.stderr}`))
      const server = createServer((request, response) => {
        if (request.url !== asset) return void response.writeHead(404).end()
        response.writeHead(200, { "content-type": "application/gzip" })
        createReadStream(tarball).pipe(response)
      })
      server.unref()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
    })
  return () => (started ??= start())
})()

const install = async (dir: string) => {
  const env = { ...process.env, npm_config_better_sqlite3_binary_host: await prebuiltMirror() }
  const result = await run(
    npm,
    ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
    dir,
    env
  )
  if (result.status !== 0) throw new Error(`npm install failed in ${dir}:\n${result.stdout}\n${result.stderr}`)
}

/** The installed versions of `names` in the app at `dir`. */
const installed = (dir: string, names: ReadonlyArray<string>): Record<string, string> =>
  Object.fromEntries(names.map((name) => [
    name,
    JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")).version as string
  ]))

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

/**
 * Every entry point of an installed package: `.` and each module its `./*` export serves (`dist/<path>.js` with
 * its declarations; `./internal/*` is closed), but the `bin` scripts, which run a program when imported.
 */
const entryPoints = (dir: string): ReadonlyArray<string> => {
  const manifest = manifestOf(dir)
  const bins = new Set(Object.values(manifest.bin ?? {}).map((path) => join(dir, path)))
  const modules: Array<string> = [manifest.name]
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder)) {
      const path = join(folder, entry)
      if (path === join(dir, "dist", "internal")) continue
      if (statSync(path).isDirectory()) walk(path)
      else if (entry.endsWith(".js") && existsSync(path.replace(/\.js$/, ".d.ts")) && !bins.has(path)) {
        modules.push(`${manifest.name}/${relative(join(dir, "dist"), path).replace(/\.js$/, "")}`)
      }
    }
  }
  walk(join(dir, "dist"))
  return modules
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

/** Imports every module named on the command line, one after the other; prints how many. */
const importAll = `
const modules = process.argv.slice(2)
for (const module of modules) {
  try {
    await import(module)
  } catch (cause) {
    console.error(\`cannot import \${module}: \${cause?.stack ?? cause}\`)
    process.exit(1)
  }
}
console.log(JSON.stringify({ imported: modules.length }))
`

/** The Express app: its own route, Mediagate mounted under `/mg`, SQLite in `DATA_DIR`. */
const writeExpressApp = (dir: string, dependencies: Record<string, string>) => {
  mkdirSync(dir)
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      {
        name: "consumer-express-app",
        private: true,
        type: "module",
        dependencies,
        // the driver's native module at the workspace's version, whatever `@effect/sql-sqlite-node` line this end
        // takes (the lowest asks for `^11`): it is not one of Mediagate's peers, and its own prebuilt release is what
        // a user downloads, where this machine would compile it for a minute ({@link prebuiltMirror})
        overrides: { "better-sqlite3": versionOf("better-sqlite3") }
      },
      null,
      2
    )
  )
  writeFileSync(join(dir, "app.mjs"), expressApp)
  writeFileSync(join(dir, "import-all.mjs"), importAll)
}

/** A declaration map of each package resolves to a source file its tarball ships. */
const expectDeclarationMaps = (app: string) => {
  for (const name of published) {
    const map = join(app, "node_modules", name, "dist", "index.d.ts.map")
    const { sources } = JSON.parse(readFileSync(map, "utf8")) as { sources: ReadonlyArray<string> }
    expect(sources.length).toBeGreaterThan(0)
    for (const source of sources) {
      const path = join(dirname(map), source)
      expect(relative(join(app, "node_modules", name), path)).toBe(join("src", "index.ts"))
      expect(existsSync(path), path).toBe(true)
    }
  }
}

/** Runs the Express app and drives a task of each kind to its downloaded file; it stops on SIGTERM with 0. */
const expectTasksSucceed = async (app: string, dataDir: string) => {
  const port = await freePort()
  const child = spawn(process.execPath, ["app.mjs"], {
    cwd: app,
    env: { ...process.env, PORT: port, DATA_DIR: dataDir },
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
    const ready = output.split("\n").find((l) => l.includes("\"ready\":true"))!
    const { testKey } = JSON.parse(ready) as { testKey: string }
    const base = `http://127.0.0.1:${port}`
    expect(await (await fetch(`${base}/own`)).json()).toEqual({ own: true })
    const headers = { authorization: `Bearer ${testKey}`, "content-type": "application/json" }
    /** A task made and polled to its end; answers its id and its first result file's bytes. */
    const generate = async (path: string, body: unknown) => {
      const ack = await fetch(`${base}/mg/api/v1/${path}`, { method: "POST", headers, body: JSON.stringify(body) })
      expect(ack.status).toBe(201)
      const id = ((await ack.json()) as { data: { id: string } }).data.id
      let task: { status: string; result?: Array<{ url: string; size_bytes: number }> } = { status: "pending" }
      for (let i = 0; i < 600 && task.status !== "succeeded" && task.status !== "failed"; i++) {
        await new Promise((r) => setTimeout(r, 50))
        const polled = await fetch(`${base}/mg/api/v1/tasks/${id}`, { headers })
        task = ((await polled.json()) as { data: typeof task }).data
      }
      expect(task.status).toBe("succeeded")
      const file = await fetch(task.result![0]!.url)
      expect(file.status).toBe(200)
      const bytes = new Uint8Array(await file.arrayBuffer())
      expect(bytes.byteLength).toBe(task.result![0]!.size_bytes)
      return { id, bytes }
    }
    const image = await generate("vendor4/text-to-image", {
      model: "vendor4-4-0",
      input: { prompt: "a lighthouse", size: "1K" }
    })
    expect([...image.bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47])
    // the dashboard below the app's mount: its assets over HTTP, and signing in in Chromium
    await expectAssetsBelow(`${base}/mg`)
    if (Chromium.available("the consumer test's dashboard sign-in")) {
      const browser = await Chromium.launch()
      try {
        await expectSignIn(browser, `${base}/mg`, testKey, { id: image.id, prompt: "a lighthouse" })
      } finally {
        await browser.close()
      }
    }
    // a clip: encoded on the vendors package's worker thread, whose module the packed package must ship
    const video = await generate("vendor3/text-to-video", {
      model: "vendor3-3",
      input: { prompt: "a paper boat [sim:delay=0]" }
    })
    expect(new TextDecoder().decode(video.bytes.subarray(4, 8))).toBe("ftyp")
  } finally {
    const exit = await new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode)
      child.once("exit", resolve)
      child.kill("SIGTERM")
    })
    expect(exit, output).toBe(0)
  }
}

awaitBuild()

describe("the packages in a consumer's project", () => {
  // the two ends install side by side (each mostly waits on npm)
  for (const end of ["lowest", "newest"] as const) {
    const title = `at the ${end} end of the peer ranges: entry points import, an app runs, strict TS compiles`
    it.concurrent(title, async () => {
      const files = await tarballs()
      const work = mkdtempSync(join(tmpdir(), `mg-consumer-${end}-`))
      const mediagateDeps = Object.fromEntries(published.map((name) => [name, files[name]!]))
      const pinned = at(end, peers.own.map(([name]) => name))

      // --- the Express app (plain JavaScript, SQLite) ---
      const app = join(work, "express-app")
      writeExpressApp(app, {
        ...mediagateDeps,
        ...pinned,
        ...at(end, ["@effect/sql-sqlite-node"]),
        express: "^5.1.0"
      })
      await install(app)
      expect(effectCopies(app)).toBe(1)
      // the versions of this end: the lowest line of each range, or in the range
      const versions = installed(app, [...Object.keys(pinned), "@effect/sql-sqlite-node"])
      for (const [name, version] of Object.entries(versions)) {
        const spec = pinned[name] ?? at(end, [name])[name]!
        expect(satisfies(version, spec), `${name}@${version} in ${spec}`).toBe(true)
      }
      expect(installed(app, ["better-sqlite3"])).toEqual({ "better-sqlite3": versionOf("better-sqlite3") })

      const modules = published.flatMap((name) => entryPoints(join(app, "node_modules", name)))
      expect(modules.length).toBeGreaterThan(published.length)
      const imported = await run(process.execPath, ["import-all.mjs", ...modules], app)
      expect(imported.stderr).toBe("")
      expect(JSON.parse(imported.stdout)).toEqual({ imported: modules.length })
      const help = await run(process.execPath, [join(app, "node_modules", ".bin", "mediagate"), "--help"], app)
      expect(help.status, help.stderr).toBe(0)
      expect(help.stdout).toContain("mediagate")
      expectDeclarationMaps(app)
      await expectTasksSucceed(app, join(work, "data"))

      // --- the strict TypeScript project (PostgreSQL only) ---
      const typed = join(work, "strict-ts")
      mkdirSync(typed)
      writeFileSync(
        join(typed, "package.json"),
        JSON.stringify(
          {
            name: "consumer-strict-ts",
            private: true,
            type: "module",
            dependencies: {
              ...mediagateDeps,
              ...pinned,
              ...at(end, ["@effect/sql-pg"]),
              "@types/node": `^${versionOf("@types/node")}`
            }
          },
          null,
          2
        )
      )
      writeFileSync(
        join(typed, "tsconfig.json"),
        JSON.stringify(
          {
            compilerOptions: {
              ...strictCompilerOptions,
              noEmit: true,
              types: ["node"]
            },
            include: ["index.ts"]
          },
          null,
          2
        )
      )
      writeFileSync(join(typed, "index.ts"), strictProgram)
      await install(typed)
      expect(existsSync(join(typed, "node_modules", "better-sqlite3"))).toBe(false)
      expect(existsSync(join(typed, "node_modules", "@effect", "sql-sqlite-node"))).toBe(false)
      expect(effectCopies(typed)).toBe(1)
      // each end with its compiler: TypeScript 5.9 with the lowest peers, TypeScript 7 with the newest
      const tsc = end === "lowest" ? compilers.typescript5 : compilers.typescript7
      const compiled = await run(process.execPath, [tsc, "-p", typed], typed)
      expect(compiled.stdout + compiled.stderr).toBe("")
      expect(compiled.status).toBe(0)
    }, 1_200_000)
  }
})
