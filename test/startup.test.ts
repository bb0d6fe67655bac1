/**
 * No request hangs at start-up: the built server is started as a child process and probed from the first moment
 * its port accepts connections; for two seconds from then, every request must be answered within 10 s (a slow 2-core
 * machine, busy with other suites, answers the probe's 160 requests a second within 2 to 5 s), and the stack must
 * already be whole (`/readyz` 200, API answers in the envelope). On SQLite and on PostgreSQL (a fresh
 * database: migrations run during the start). SIGTERM then stops it with exit code 0.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { awaitBuild } from "./build.js"
import { freePort, main, psql, runPostgres } from "./server.js"

if (!runPostgres) console.warn("PostgreSQL is not running at 127.0.0.1:5432: the PostgreSQL start-up test is skipped")

interface Answer {
  readonly path: string
  readonly connected: boolean
  readonly status?: number
  readonly body?: string
  readonly error?: string
  readonly ms: number
}

const refused = (error: unknown) => {
  const code = (error as { cause?: { code?: string } }).cause?.code
  return code === "ECONNREFUSED" || code === "ECONNRESET"
}

const request = async (base: string, path: string, headers: Record<string, string> = {}): Promise<Answer> => {
  const started = performance.now()
  try {
    const response = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(20_000) })
    return {
      path,
      connected: true,
      status: response.status,
      body: await response.text(),
      ms: performance.now() - started
    }
  } catch (error) {
    return {
      path,
      connected: !refused(error),
      error: String((error as Error).cause ?? error),
      ms: performance.now() - started
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const probeStartup = async (env: Record<string, string>) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: port, HOST: "127.0.0.1", MEDIAGATE_LOG_FORMAT: "json", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  try {
    // knock until the port accepts: the first answered request marks the moment
    const deadline = Date.now() + 60_000
    let first: Answer | undefined
    while (first === undefined) {
      if (child.exitCode !== null) throw new Error(`server exited early:\n${output}`)
      if (Date.now() > deadline) throw new Error(`the port never opened:\n${output}`)
      const answer = await request(base, "/readyz")
      if (answer.connected) first = answer
      else await sleep(5)
    }
    // then two seconds of requests, a few at a time
    const pending: Array<Promise<Answer>> = []
    const until = Date.now() + 2_000
    while (Date.now() < until) {
      pending.push(
        request(base, "/readyz"),
        request(base, "/healthz"),
        request(base, "/api/v1/balance"),
        request(base, "/api/v1/tasks", { authorization: `Bearer mg_test_${"x".repeat(32)}` })
      )
      await sleep(25)
    }
    const answers = [first, ...await Promise.all(pending)]
    // the output as it is when read: an answer's access-log line may be written after the answer (the log writes
    // its lines once per turn of the event loop), and the server flushes what is left when it exits
    return { answers, output: () => output, stop: () => stop(child) }
  } catch (error) {
    await stop(child)
    throw error
  }
}

const stop = (child: ReturnType<typeof spawn>) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode)
    // "close": after the exit and the end of its output
    child.once("close", (code) => resolve(code))
    child.kill("SIGTERM")
  })

const expected: Record<string, number> = {
  "/readyz": 200,
  "/healthz": 200,
  "/api/v1/balance": 401,
  "/api/v1/tasks": 401
}

const check = async (env: Record<string, string>) => {
  const probe = await probeStartup(env)
  const exit = await probe.stop()
  const { answers } = probe
  const output = probe.output()
  // four requests every 25 ms for 2 s: a busy machine's probe gets fewer rounds in
  expect(answers.length).toBeGreaterThan(40)
  const late = answers.filter((a) => a.error !== undefined || a.ms >= 10_000)
  expect(late, `requests not answered within 10 s:\n${JSON.stringify(late.slice(0, 5))}\n${output}`).toEqual([])
  for (const answer of answers) {
    expect([answer.path, answer.status]).toEqual([answer.path, expected[answer.path]])
    if (answer.status === 401) {
      expect(JSON.parse(answer.body!)).toMatchObject({ success: false, error: { code: expect.any(String) } })
    }
  }
  // the order of a start: database, bootstrap, then the port
  const lines = output.split("\n").filter((line) => line.startsWith("{")).map((line) =>
    JSON.parse(line).message as string
  )
  const listening = lines.findIndex((message) => message.startsWith("Listening on"))
  expect(lines.findIndex((message) => message.startsWith("database:"))).toBeLessThan(listening)
  expect(output.indexOf("test key: mg_test_")).toBeLessThan(output.indexOf("Listening on"))
  // one access log line per request
  expect(lines.filter((message) => /^GET \/readyz 200 /.test(message)).length).toBe(
    answers.filter((a) => a.path === "/readyz").length
  )
  expect(exit).toBe(0)
}

awaitBuild()

describe("start-up", () => {
  it("loads a bundle of ASCII text only (V8 then holds its source in each thread at one byte a character)", () => {
    const source = readFileSync(main, "utf8")
    expect(source.length).toBeGreaterThan(1_000_000)
    const wide = [...source.matchAll(/[\u0080-\uffff]/g)].map((match) =>
      source.slice(match.index - 40, match.index + 1)
    )
    expect(wide).toEqual([])
  })

  it("on SQLite every request from the first accepted connection is answered within 10 s", async () => {
    await check({ MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-startup-")) })
  }, 120_000)

  if (runPostgres) {
    it("on PostgreSQL (a fresh database) every request is answered within 10 s", async () => {
      const name = `mg_startup_${Date.now()}`
      expect(psql(`CREATE DATABASE ${name}`)).toBe(0)
      try {
        await check({
          DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}`,
          MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-startup-pg-"))
        })
      } finally {
        psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      }
    }, 120_000)
  }
})
