/**
 * Nodes on the local file store with and without one shared directory, two in-process nodes on one PostgreSQL
 * database (docs/operations.md "Result files on several nodes"):
 *
 * - different directories: both nodes are flagged (`files_unshared_with` in `GET /admin/v1/system`,
 *   `mediagate_file_store_unshared_nodes` in `/metrics`), and every result URL of a task answers 200 on the node
 *   that accepted it (each node claims only the tasks it accepted);
 * - one directory: neither is flagged, and either node serves every result.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { existsSync, mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Database from "../src/Database.js"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

const adminToken = "placement-test-admin-token"
const { runPostgres } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

/** A node with workers and metrics on `dataDir`, on a free port (a lease of 3 s: a heartbeat every second). */
const start = (database: Database.Database, dataDir: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Mediagate.layer({
      database,
      dataDir,
      fileSecret: "placement-test-secret",
      adminToken,
      metrics: true,
      settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01", MEDIAGATE_WORKER_LEASE: "3s" }
    }))
    const service = Context.get(context, Mediagate.Mediagate)
    const server = yield* Server.listen(yield* NodeHttpServer.makeHandler(service.httpApp), {
      port: 0,
      host: "127.0.0.1"
    })
    const keys = yield* service.bootstrap()
    return { baseUrl: Server.urlOf(server), keys: Option.getOrUndefined(keys) }
  })

const request = (baseUrl: string, path: string, init: RequestInit & { readonly token?: string } = {}) =>
  Effect.promise(async () => {
    const headers = new Headers(init.headers)
    if (init.token !== undefined) headers.set("authorization", `Bearer ${init.token}`)
    if (init.body !== undefined) headers.set("content-type", "application/json")
    const response = await fetch(`${baseUrl}${path}`, { ...init, headers })
    const text = await response.text()
    let body: any = undefined
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    return { status: response.status, text, body }
  })

interface NodeView {
  readonly id: string
  readonly started_at: string
  readonly last_seen_at: string
  readonly files_unshared_with: ReadonlyArray<string>
}

const nodes = (baseUrl: string) =>
  Effect.map(request(baseUrl, "/admin/v1/system", { token: adminToken }), (answer) => {
    expect(answer.status, answer.text).toBe(200)
    return answer.body.data.nodes as ReadonlyArray<NodeView>
  })

/** `mediagate_file_store_unshared_nodes` as a node reports it. */
const unsharedGauge = (baseUrl: string) =>
  Effect.map(request(baseUrl, "/metrics", { token: adminToken }), (answer) => {
    expect(answer.status).toBe(200)
    const line = answer.text.split("\n").find((text) => text.startsWith("mediagate_file_store_unshared_nodes "))
    expect(line, "the gauge is exposed").toBeDefined()
    return Number(line!.split(" ")[1])
  })

const waitFor = <A>(effect: Effect.Effect<A>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600; i++) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep(50)
    }
    return yield* Effect.dieMessage("the condition was not reached")
  })

/** Creates an image task of `size` on `baseUrl`; its id. */
const createTask = (baseUrl: string, key: string, size = "1K") =>
  Effect.map(
    request(baseUrl, "/api/v1/vendor4/text-to-image", {
      method: "POST",
      token: key,
      body: JSON.stringify({ model: "vendor4-4-0", input: { prompt: "a red kite", size } })
    }),
    (answer) => {
      expect(answer.status, answer.text).toBe(201)
      return answer.body.data.id as string
    }
  )

/** The result URLs of a task once it succeeded, read on `baseUrl`, as paths (they are served by every node). */
const resultPaths = (baseUrl: string, key: string, id: string) =>
  Effect.map(
    waitFor(request(baseUrl, `/api/v1/tasks/${id}`, { token: key }), (answer) =>
      ["succeeded", "failed", "expired"].includes(answer.body?.data?.status)),
    (answer) => {
      expect(answer.body.data.status, answer.text).toBe("succeeded")
      return (answer.body.data.result as ReadonlyArray<{ url: string }>).map((item) => {
        const url = new URL(item.url)
        return `${url.pathname}${url.search}`
      })
    }
  )

/** Whether every node has beaten (and so looked at the markers) two heartbeats after the other registered. */
const lookedAtEachOther = (views: ReadonlyArray<NodeView>) =>
  views.length === 2 &&
  views.every((node) =>
    views.every((other) => other === node || Date.parse(node.last_seen_at) - Date.parse(other.started_at) > 2000)
  )

describe.skipIf(!runPostgres)("the local file store on two nodes of one PostgreSQL database", () => {
  it.scopedLive(
    "different directories: both nodes flagged, and each node serves the results of the tasks it accepted",
    () =>
      Effect.gen(function*() {
        const schema = yield* Databases.pgSchema
        const database = () => ({ layer: Databases.pgClient(schema, 4) })
        const [dirA, dirB] = [
          mkdtempSync(join(tmpdir(), "mg-placement-a-")),
          mkdtempSync(join(tmpdir(), "mg-placement-b-"))
        ]
        const a = yield* start(database(), dirA)
        const key = a.keys!.test.key
        // alone: not flagged
        const alone = yield* waitFor(nodes(a.baseUrl), (views) => views.length === 1)
        expect(alone[0]!.files_unshared_with).toEqual([])
        expect(yield* unsharedGauge(a.baseUrl)).toBe(0)
        // its marker is in its files directory, named by its registry id
        expect(readdirSync(join(dirA, "files", ".nodes"))).toEqual([encodeURIComponent(alone[0]!.id)])

        const b = yield* start(database(), dirB)
        const flagged = yield* waitFor(
          nodes(b.baseUrl),
          (views) => views.length === 2 && views.every((node) => node.files_unshared_with.length > 0)
        )
        const [nodeA, nodeB] = flagged
        expect(nodeA!.files_unshared_with).toEqual([nodeB!.id])
        expect(nodeB!.files_unshared_with).toEqual([nodeA!.id])
        // every node answers the same status (from the database)
        expect((yield* nodes(a.baseUrl)).map((node) => node.files_unshared_with)).toEqual([[nodeB!.id], [nodeA!.id]])
        expect(yield* unsharedGauge(a.baseUrl)).toBe(1)
        expect(yield* unsharedGauge(b.baseUrl)).toBe(1)

        // tasks accepted by each node (each node's of a size of its own): each result URL answers 200 on the node
        // that accepted the task
        const onA = yield* Effect.forEach(Array.from({ length: 8 }), () => createTask(a.baseUrl, key, "1K"))
        const onB = yield* Effect.forEach(Array.from({ length: 8 }), () => createTask(b.baseUrl, key, "1280x768"))
        for (const [node, ids, dir, other] of [[a, onA, dirA, dirB], [b, onB, dirB, dirA]] as const) {
          for (const id of ids) {
            const paths = yield* resultPaths(node.baseUrl, key, id)
            expect(paths.length).toBeGreaterThan(0)
            for (const path of paths) {
              const file = yield* request(node.baseUrl, path)
              expect(file.status, `${path} on the node that accepted ${id}`).toBe(200)
              // and the task was run by the node that accepted it: the file its result names (the simulated
              // upstream's rendering of its size) was stored in that node's directory only
              const stored = decodeURIComponent(path.slice("/files/".length, path.indexOf("?")))
              expect(existsSync(join(dir, "files", stored)), `${stored} of ${id}`).toBe(true)
              expect(existsSync(join(other, "files", stored)), `${stored} of ${id} elsewhere`).toBe(false)
            }
          }
        }
      }),
    { timeout: 90_000 }
  )

  it.scopedLive(
    "one directory: neither node flagged, and either node serves every result",
    () =>
      Effect.gen(function*() {
        const schema = yield* Databases.pgSchema
        const database = () => ({ layer: Databases.pgClient(schema, 4) })
        const dir = mkdtempSync(join(tmpdir(), "mg-placement-shared-"))
        const a = yield* start(database(), dir)
        const b = yield* start(database(), dir)
        const key = a.keys!.test.key
        const views = yield* waitFor(nodes(a.baseUrl), lookedAtEachOther)
        expect(views.map((node) => node.files_unshared_with)).toEqual([[], []])
        expect(yield* unsharedGauge(a.baseUrl)).toBe(0)
        expect(yield* unsharedGauge(b.baseUrl)).toBe(0)
        expect(readdirSync(join(dir, "files", ".nodes")).sort()).toEqual(
          views.map((node) => encodeURIComponent(node.id)).sort()
        )

        const ids = yield* Effect.forEach(
          Array.from({ length: 4 }),
          (_, i) => createTask(i % 2 === 0 ? a.baseUrl : b.baseUrl, key)
        )
        for (const id of ids) {
          for (const path of yield* resultPaths(a.baseUrl, key, id)) {
            for (const node of [a, b]) expect((yield* request(node.baseUrl, path)).status).toBe(200)
          }
        }
        expect(readdirSync(join(dir, "files", "simulated", "r1"))).toEqual(["image-1024x1024.png"])
      }),
    { timeout: 90_000 }
  )
})
