/**
 * Shared result storage end to end: an API-only node and a worker node on one SQLite file, with different data
 * directories and the S3 store (s3rver in-process): a task's result URL is served by either node, ranges and 416
 * included; no node leaves a file-store marker (docs/operations.md). Also the start warning of an API-only node on
 * the local store.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { splitWarning } from "../src/internal/stack.js"
import * as Mediagate from "../src/Mediagate.js"

// s3rver ships no types: its constructor as used here
const S3rver = createRequire(import.meta.url)("s3rver") as new(options: Record<string, unknown>) => {
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

const root = mkdtempSync(join(tmpdir(), "mg-shared-files-"))
const s3 = new S3rver({
  port: 0,
  address: "127.0.0.1",
  silent: true,
  directory: join(root, "s3"),
  configureBuckets: [{ name: "results" }]
})
const servers: Array<Server> = []
const handles: Array<Mediagate.Handle> = []

/** A node on its own port and data directory, on the shared database and bucket. */
const node = async (name: string, workers: boolean, s3Port: number) => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  servers.push(server)
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const handle = Mediagate.make({
    database: { sqlite: join(root, "shared.db") },
    dataDir: join(root, name),
    publicBaseUrl: base,
    fileSecret: "shared-file-secret",
    workers,
    settings: {
      MEDIAGATE_SIM_TIME_SCALE: "0.01",
      MEDIAGATE_FILE_STORE: "s3",
      MEDIAGATE_S3_BUCKET: "results",
      MEDIAGATE_S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      MEDIAGATE_S3_FORCE_PATH_STYLE: "true",
      MEDIAGATE_S3_ACCESS_KEY_ID: "S3RVER",
      MEDIAGATE_S3_SECRET_ACCESS_KEY: "S3RVER",
      MEDIAGATE_S3_PREFIX: "mediagate/"
    }
  })
  handles.push(handle)
  server.on("request", handle.handler)
  await handle.ready
  return { base, handle }
}

beforeAll(async () => {
  await s3.run()
}, 60_000)

afterAll(async () => {
  for (const handle of handles) await handle.close()
  for (const server of servers) await new Promise((resolve) => server.close(resolve))
  await s3.close()
  rmSync(root, { recursive: true, force: true })
})

describe("shared result storage (S3) across nodes", () => {
  it("an API-only node and a worker node with different data directories both serve a result URL", async () => {
    const { port } = (s3 as unknown as { httpServer: { address(): AddressInfo } }).httpServer.address()
    const worker = await node("worker", true, port)
    const api = await node("api", false, port)
    const keys = await api.handle.bootstrap()
    const headers = { authorization: `Bearer ${keys!.test.key}`, "content-type": "application/json" }
    const ack = await fetch(`${api.base}/api/v1/vendor4/text-to-image`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "vendor4-4-0", input: { prompt: "a lighthouse", size: "1K" } })
    })
    expect(ack.status).toBe(201)
    const id = ((await ack.json()) as { data: { id: string } }).data.id
    let task: { status: string; result?: Array<{ url: string; size_bytes: number }> } = { status: "pending" }
    for (let i = 0; i < 600 && task.status !== "succeeded" && task.status !== "failed"; i++) {
      await new Promise((r) => setTimeout(r, 50))
      task = ((await (await fetch(`${api.base}/api/v1/tasks/${id}`, { headers })).json()) as { data: typeof task }).data
    }
    expect(task.status).toBe("succeeded")
    const item = task.result![0]!
    // the result key: the simulated upstream's one rendering of this output, which every such task names
    expect(new URL(item.url).pathname).toMatch(/^\/files\/simulated\/r1\/image-\d+x\d+\.png$/)
    expect(item.url.startsWith(`${api.base}/files/`)).toBe(true)
    // the API-only node (which wrote nothing) and the worker node serve the same URL
    for (const base of [api.base, worker.base]) {
      const url = item.url.replace(api.base, base)
      const file = await fetch(url)
      expect(file.status, base).toBe(200)
      const bytes = new Uint8Array(await file.arrayBuffer())
      expect(bytes.byteLength).toBe(item.size_bytes)
      expect([...bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47])
      const part = await fetch(url, { headers: { range: "bytes=1-3" } })
      expect([part.status, part.headers.get("content-range")]).toEqual([206, `bytes 1-3/${item.size_bytes}`])
      expect([...new Uint8Array(await part.arrayBuffer())]).toEqual([0x50, 0x4e, 0x47])
      const past = await fetch(url, { headers: { range: `bytes=${item.size_bytes}-` } })
      expect(past.status).toBe(416)
      expect(past.headers.get("content-range")).toBe(`bytes */${item.size_bytes}`)
      expect(((await past.json()) as { error: { code: string } }).error.code).toBe("RANGE_NOT_SATISFIABLE")
    }
    // on the S3 store no node leaves a marker in a local directory (placement is for the local store only)
    for (const name of ["worker", "api"]) expect(existsSync(join(root, name, "files", ".nodes")), name).toBe(false)
  }, 120_000)

  it("the start warning of an API-only node on the local store names the directory and the remedy", () => {
    const text = splitWarning("/srv/mediagate")
    expect(text).toContain("MEDIAGATE_WORKERS=false")
    expect(text).toContain("/srv/mediagate/files")
    expect(text).toContain("MEDIAGATE_FILE_STORE=s3")
  })
})
