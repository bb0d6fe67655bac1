/**
 * What the dashboard's browser journeys share: the screenshot directory, the XSS probes, a local webhook receiver,
 * the API as a client calls it, creating an image task and waiting for a task's status, and the `Session` of a
 * suite (its server, browser context and page) that every journey drives.
 */
import { expect } from "@effect/vitest"
import { mkdirSync, readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { fileURLToPath } from "node:url"
import type { BrowserContext, Page } from "playwright-core"
import type { Running } from "../server.js"

export const shots = fileURLToPath(new URL("../../../../test-results/dashboard/", import.meta.url))
mkdirSync(shots, { recursive: true })

export const xssScript = "<script>window.__xss=1</script>"
export const xssImage = "\"><img src=x onerror=\"window.__xss=1\">"

/** A local webhook receiver: answers `status()` to every request and keeps what it got. */
export const receiver = async (status: () => number) => {
  const received: Array<{ readonly headers: Record<string, unknown>; readonly body: string }> = []
  const server: Server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString()))
    request.on("end", () => {
      received.push({ headers: request.headers, body })
      const code = status()
      response.writeHead(code, { "content-type": "text/plain" })
      response.end(code === 410 ? "gone <b>away</b>" : "ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r()))
  }
}

export const api = async (running: Running, method: string, path: string, body?: unknown, key = running.keys.live) => {
  const answer = await fetch(`${running.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: answer.status, body: await answer.json() as any }
}

export const createImage = async (running: Running, prompt: string, metadata?: Record<string, string>) => {
  const ack = await api(running, "POST", "/api/v1/vendor4/text-to-image", {
    model: "vendor4-4-0",
    input: { prompt, size: "1K" },
    ...(metadata === undefined ? {} : { metadata })
  })
  expect(ack.status, JSON.stringify(ack.body)).toBe(201)
  return ack.body.data.id as string
}

export const waitForStatus = async (running: Running, id: string, statuses: ReadonlyArray<string>) => {
  for (let i = 0; i < 300; i++) {
    const task = await api(running, "GET", `/api/v1/tasks/${id}`)
    if (statuses.includes(task.body.data.status)) return task.body.data
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`task ${id} did not reach ${statuses.join("/")}`)
}

/** One suite's server and browser, as the journeys see them once its `beforeAll` ran. */
export interface Session {
  readonly database: "sqlite" | "postgres"
  readonly running: Running
  readonly context: BrowserContext
  readonly page: Page
  /** The Content Security Policy violations the page's console reported. */
  readonly cspViolations: Array<string>
  /** Saves a screenshot of `target` (default: the page) as `<database>-<name>.png`. */
  readonly shot: (name: string, target?: Page) => Promise<Buffer>
}

/** The scripts a page loads from the dashboard's assets while `run` runs (their file names). */
export const scriptsLoaded = async (page: Page, run: () => Promise<void>): Promise<ReadonlySet<string>> => {
  const names = new Set<string>()
  const track = (response: { url: () => string }) => {
    const path = new URL(response.url()).pathname
    if (path.includes("/dashboard/assets/") && path.endsWith(".js")) names.add(path.slice(path.lastIndexOf("/") + 1))
  }
  page.on("response", track)
  try {
    await run()
  } finally {
    page.off("response", track)
  }
  return names
}

/** What the dashboard's build made (`dist/build.json`): the entry, the chunks it preloads, the operator's chunk. */
export const built = (): {
  readonly entry: string
  readonly preloaded: ReadonlyArray<string>
  readonly operator: string
} => JSON.parse(readFileSync(fileURLToPath(new URL("../../dist/build.json", import.meta.url)), "utf8"))
