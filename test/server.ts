/**
 * Starts the example server as a child process for end-to-end tests, the way `npm start` runs it (`node
 * examples/server/dist/server.js`, the bundle built by the global setup), and reads what it prints (the listening address, the
 * file of the bootstrap keys).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { built } from "./build.js"

/** The built server, bundled (what `npm start` runs). */
export const main = fileURLToPath(new URL("../examples/server/dist/server.js", import.meta.url))

/** A running server process. */
export interface RunningServer {
  readonly child: ChildProcess
  readonly baseUrl: string
  readonly output: () => string
  /** Stops it with SIGTERM and answers its exit code. */
  readonly stop: () => Promise<number | null>
}

/** Starts the server with the given environment and waits until it listens. */
export const startServer = async (env: Record<string, string>): Promise<RunningServer> => {
  await built()
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, MEDIAGATE_SIM_TIME_SCALE: "0.01", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const port = env["PORT"]!
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  while (!output.includes("Listening on")) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${output}`)
    if (Date.now() > deadline) throw new Error(`server did not start:\n${output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    child,
    baseUrl,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode)
        child.once("exit", (code) => resolve(code))
        child.kill("SIGTERM")
      })
  }
}

/**
 * The keys of the server's first start, when its output says it made them: its output is a pipe here, so it
 * names the keys file (mode 600) that holds them (docs/operations.md "First start").
 */
export const bootstrapKeys = (output: string) => {
  const file = /keys_file"?[=:]"?([^"\s]+first-keys\.json)/.exec(output)?.[1]
  if (file === undefined || !existsSync(file)) return undefined
  const keys = JSON.parse(readFileSync(file, "utf8")) as { account: string; live: string; test: string }
  return { account: keys.account, live: keys.live, test: keys.test }
}

/** Where {@link freePort} claims its ports: a file per port, shared by every worker of every run on the machine. */
const claims = join(tmpdir(), "mediagate-test-ports")

/** A claim older than this is left over from an earlier run and may be taken again. */
const claimLifetimeMs = 2 * 60 * 60 * 1000

/**
 * Claims `port` for this run: creates its claim file, or takes over one left over from an earlier run. A port
 * found free by probing is not enough on its own: a file in another worker (a thread of the same process or
 * another process) can find the same port free before either server binds it.
 */
const claim = (port: number): boolean => {
  const file = join(claims, String(port))
  try {
    closeSync(openSync(file, "wx"))
    return true
  } catch {
    try {
      if (Date.now() - statSync(file).mtimeMs < claimLifetimeMs) return false
      unlinkSync(file)
      closeSync(openSync(file, "wx"))
      return true
    } catch {
      return false
    }
  }
}

/** A free port, outside the ephemeral range, claimed for this run (see `claim`). */
export const freePort = async (): Promise<string> => {
  const { createServer } = await import("node:net")
  mkdirSync(claims, { recursive: true })
  for (;;) {
    // below Linux's ephemeral range (32768–60999), where outgoing connections take their local ports: a port found
    // free there can be taken by a connection before the server binds it
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (!claim(port)) continue
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer()
      probe.once("error", () => resolve(false))
      probe.listen(port, () => probe.close(() => resolve(true)))
    })
    if (free) return String(port)
  }
}

/** Whether to run the PostgreSQL end-to-end tests: when it answers, and always under `CI=true` (where it must). */
export const runPostgres: boolean = spawnSync("pg_isready", ["-h", "127.0.0.1", "-p", "5432"]).status === 0 ||
  process.env["CI"] === "true"

/** Runs one statement on the local PostgreSQL server's `postgres` database; answers psql's exit status. */
export const psql = (sql: string): number | null =>
  spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-c", sql]).status
