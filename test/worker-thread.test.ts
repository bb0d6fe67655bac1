/**
 * The production server on two threads (`MEDIAGATE_WORKER_THREAD`; packages/node `internal/workerThread.ts`):
 * the built server runs its workers on a worker thread, which runs an accepted task at
 * once, signs the result URLs of its webhook events with the process's file secret (a random one when none is set:
 * the API thread's `/files` serves them), shows its metrics in the API thread's `/metrics`, and stops with the
 * process (SIGTERM: exit code 0). By default (`auto`) the server runs on two threads where the process may run on two
 * or more CPUs; `false` runs the workers on the main thread.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { adminToken, type Envelope, http, makeAccount, ok, waitFor } from "./harness.js"
import { freePort, startServer } from "./server.js"

const promtool = spawnSync("promtool", ["--version"]).status === 0
if (!promtool && process.env["CI"] === "true") throw new Error("promtool is required under CI=true")
if (!promtool) console.warn("promtool is not installed: the worker-thread test's /metrics is not checked by it")

interface TaskView {
  readonly id: string
  readonly status: string
  readonly result: ReadonlyArray<{ readonly url: string }> | null
}

/** A local webhook receiver keeping the JSON bodies it got. */
const receiver = async () => {
  const bodies: Array<unknown> = []
  const server: Server = createServer((request, response) => {
    let text = ""
    request.on("data", (chunk: Buffer) => (text += chunk.toString()))
    request.on("end", () => {
      bodies.push(JSON.parse(text))
      response.end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { bodies, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, server }
}

/** Starts the built server on a fresh SQLite folder, without a file secret, with `env`. */
const start = async (env: Record<string, string>) => {
  const port = await freePort()
  return startServer({
    PORT: port,
    MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-thread-")),
    MEDIAGATE_ADMIN_TOKEN: adminToken,
    MEDIAGATE_PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true",
    MEDIAGATE_LOG_FORMAT: "json",
    ...env
  })
}

/** Posts an instant image task with a webhook to `hookUrl` and waits until it succeeded. */
const runTask = async (base: string, token: string, hookUrl: string) => {
  const created = ok(
    await http<Envelope<TaskView>>(base, "/api/v1/vendor4/text-to-image", {
      token,
      json: { model: "vendor4-3-0-t2i", input: { prompt: "a lighthouse [sim:delay=0]" }, webhookUrl: hookUrl }
    }),
    "POST a task"
  )
  return waitFor("the task to succeed", 60_000, async () => {
    const task = ok(await http<Envelope<TaskView>>(base, `/api/v1/tasks/${created.id}`, { token }), "GET the task")
    expect(task.status === "failed" || task.status === "cancelled", `task ${task.status}`).toBe(false)
    return task.status === "succeeded" ? task : undefined
  })
}

describe("the production server on two threads", () => {
  it("runs tasks on its worker thread, shares the file secret, merges /metrics and stops on SIGTERM", async () => {
    const hooks = await receiver()
    const server = await start({ MEDIAGATE_WORKER_THREAD: "true" })
    try {
      await waitFor(
        "the worker thread",
        30_000,
        async () => server.output().includes("workers: on a worker thread") ? true : undefined
      )
      const keys = await makeAccount(server.baseUrl, "thread", 10)
      const task = await runTask(server.baseUrl, keys.live, hooks.url)

      // the worker thread's webhook event: its result URL, signed there, is served by the API thread
      const event = await waitFor("the webhook", 30_000, async () => hooks.bodies[0])
      const url = (event as { data: { task: TaskView } }).data.task.result?.[0]?.url
      expect(url).toMatch(/\/files\/.*signature=/)
      const file = await fetch(url!)
      expect(file.status, await file.clone().text()).toBe(200)
      expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0)
      expect(task.result?.[0]?.url.split("?")[0]).toBe(url!.split("?")[0])

      // /metrics: the API thread's counters (tasks created, requests) and the worker thread's (tasks finished)
      const metrics = await http<string>(server.baseUrl, "/metrics", { token: adminToken })
      expect(metrics.status).toBe(200)
      const sample = (name: string) =>
        metrics.text.split("\n").filter((line) => line.startsWith(`${name}{`)).map((line) => Number(line.split(" ")[1]))
      expect(sample("mediagate_tasks_created_total").reduce((a, b) => a + b, 0)).toBe(1)
      expect(sample("mediagate_tasks_finished_total").reduce((a, b) => a + b, 0)).toBe(1)
      expect(sample("mediagate_http_request_duration_seconds_count").length).toBeGreaterThan(0)
      // one HELP and one TYPE per family, though both threads have metrics
      const types = metrics.text.split("\n").filter((line) => line.startsWith("# TYPE "))
      expect(new Set(types).size).toBe(types.length)
      if (promtool) {
        const check = spawnSync("promtool", ["check", "metrics"], { input: metrics.text, encoding: "utf8" })
        expect(check.status, check.stdout + check.stderr).toBe(0)
      }
    } finally {
      hooks.server.close()
      expect(await server.stop(), server.output().slice(-2000)).toBe(0)
    }
  }, 180_000)

  it("runs two threads by default on two or more CPUs, and the workers on the main thread when told", async () => {
    const hooks = await receiver()
    const twoCpus = availableParallelism() >= 2
    for (const [env, twoThreads] of [[{}, twoCpus], [{ MEDIAGATE_WORKER_THREAD: "false" }, false]] as const) {
      const server = await start(env)
      try {
        const keys = await makeAccount(server.baseUrl, "default threads", 10)
        await runTask(server.baseUrl, keys.live, hooks.url)
        expect(server.output().includes("workers: on a worker thread"), JSON.stringify(env)).toBe(twoThreads)
      } finally {
        expect(await server.stop(), server.output().slice(-2000)).toBe(0)
      }
    }
    hooks.server.close()
  }, 180_000)
})
