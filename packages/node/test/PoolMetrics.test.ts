/**
 * The database connection gauges of `/metrics` (`mediagate_db_pool_*`): on PostgreSQL they follow the pool the
 * stack opens (connections held by transactions are `in_use`, queries beyond the pool size `waiting`), on SQLite its
 * one connection (in use while a transaction holds it); the whole stack on a PostgreSQL URL serves them and the
 * output still passes `promtool check metrics`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { layerUnmetered } from "@mediagate/engine/Billing"
import { layerMemory as taskStorageMemory } from "@mediagate/engine/TaskStorage"
import * as Databases from "@mediagate/testing/databases"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/Database.js"
import * as Mediagate from "../src/Mediagate.js"
import * as Metrics from "../src/Metrics.js"
import * as Server from "../src/Server.js"

const ci = process.env.CI === "true"
const promtool = spawnSync("promtool", ["--version"]).status === 0
if (!promtool) console.warn(`promtool is not installed: the promtool check ${ci ? "fails (CI)" : "is skipped"}`)
const { runPostgres } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

/** The value of a sample of the exposition (`name{labels} value`), or undefined when it is not there. */
const sample = (text: string, name: string, labels = ""): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(labels === "" ? `${name} ` : `${name}{${labels}} `))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1))
}

const gauges = (text: string) => ({
  inUse: sample(text, "mediagate_db_pool_connections", `state="in_use"`),
  idle: sample(text, "mediagate_db_pool_connections", `state="idle"`),
  waiting: sample(text, "mediagate_db_pool_waiting"),
  max: sample(text, "mediagate_db_pool_max_connections")
})

/** The exporter of a process on `database` (Database.layer, as the stack opens it). */
const exporterOn = (database: Database.Database) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Layer.merge(
      Database.layer(database),
      taskStorageMemory().pipe(Layer.provide(layerUnmetered))
    ))
    const exporter = yield* Effect.provide(Metrics.make, context)
    return { sql: Context.get(context, SqlClient.SqlClient), scrape: exporter.scrape }
  })

/** Scrapes until `done` holds (the held connections are taken in the background). */
const scrapeUntil = (scrape: Effect.Effect<string>, done: (g: ReturnType<typeof gauges>) => boolean) =>
  Effect.gen(function*() {
    let last = gauges(yield* scrape)
    for (let i = 0; i < 100 && !done(last); i++) {
      yield* Effect.sleep("20 millis")
      last = gauges(yield* scrape)
    }
    return last
  })

/** A transaction that holds its connection until `release` completes. */
const hold = (sql: SqlClient.SqlClient, release: Deferred.Deferred<void>) =>
  Effect.fork(sql.withTransaction(Effect.zipRight(sql`SELECT 1`, Deferred.await(release))))

describe.skipIf(!runPostgres)("database pool metrics on PostgreSQL", () => {
  it.scopedLive(
    "in use and idle follow the held connections; queries beyond the pool wait",
    () =>
      Effect.gen(function*() {
        const schema = yield* Databases.pgSchema
        const url = `${Databases.pgUrl()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
        const { scrape, sql } = yield* exporterOn({ postgres: url, maxConnections: 2 })
        const idle = yield* scrapeUntil(scrape, (g) => g.inUse === 0)
        expect(idle).toMatchObject({ inUse: 0, waiting: 0, max: 2 })
        expect(idle.idle).toBeGreaterThanOrEqual(1)

        const release = yield* Deferred.make<void>()
        const first = yield* hold(sql, release)
        expect(yield* scrapeUntil(scrape, (g) => g.inUse === 1)).toMatchObject({ inUse: 1, waiting: 0 })
        const second = yield* hold(sql, release)
        expect(yield* scrapeUntil(scrape, (g) => g.inUse === 2)).toMatchObject({ inUse: 2, idle: 0, waiting: 0 })
        // the pool is full: a third query waits for a connection
        const third = yield* Effect.fork(sql`SELECT 1`)
        expect(yield* scrapeUntil(scrape, (g) => g.waiting === 1)).toMatchObject({ inUse: 2, waiting: 1 })

        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
        yield* Fiber.join(second)
        yield* Fiber.join(third)
        const after = yield* scrapeUntil(scrape, (g) => g.inUse === 0)
        expect(after).toMatchObject({ inUse: 0, idle: 2, waiting: 0 })
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "the stack on a PostgreSQL URL serves them at /metrics; promtool still passes",
    () =>
      Effect.gen(function*() {
        const schema = yield* Databases.pgSchema
        const url = `${Databases.pgUrl()}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
        const context = yield* Layer.build(Mediagate.layer({
          database: { postgres: url, maxConnections: 4 },
          dataDir: mkdtempSync(join(tmpdir(), "mg-pool-")),
          fileSecret: "pool-metrics-secret",
          metrics: true,
          settings: { MEDIAGATE_METRICS_OPEN: "true" }
        }))
        const service = Context.get(context, Mediagate.Mediagate)
        const server = yield* Server.listen(yield* NodeHttpServer.makeHandler(service.httpApp), {
          port: 0,
          host: "127.0.0.1"
        })
        const text = yield* Effect.promise(() => fetch(`${Server.urlOf(server)}/metrics`).then((r) => r.text()))
        const pool = gauges(text)
        expect(pool.max).toBe(4)
        expect(pool.waiting).toBe(0)
        expect(pool.inUse! + pool.idle!).toBeGreaterThanOrEqual(1)
        expect(pool.inUse! + pool.idle!).toBeLessThanOrEqual(4)
        expect(text).toContain("# TYPE mediagate_db_pool_connections gauge")
        if (promtool || ci) {
          const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" })
          expect(check.status, `${check.stdout}${check.stderr}`).toBe(0)
        }
      }),
    { timeout: 60_000 }
  )
})

describe("database pool metrics on SQLite", () => {
  it.scopedLive("its one connection: in use while a transaction holds it", () =>
    Effect.gen(function*() {
      const file = join(mkdtempSync(join(tmpdir(), "mg-pool-sqlite-")), "m.db")
      const { scrape, sql } = yield* exporterOn({ sqlite: file })
      const free = gauges(yield* scrape)
      expect(free).toEqual({ inUse: 0, idle: 1, waiting: free.waiting, max: 1 })
      const release = yield* Deferred.make<void>()
      const held = yield* hold(sql, release)
      expect(yield* scrapeUntil(scrape, (g) => g.inUse === 1)).toMatchObject({ inUse: 1, idle: 0, max: 1 })
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held)
      expect(yield* scrapeUntil(scrape, (g) => g.inUse === 0)).toMatchObject({ inUse: 0, idle: 1 })
    }))
})
