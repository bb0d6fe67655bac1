/**
 * Several worker processes on one PostgreSQL database: each task runs exactly once at a time and all finish; a
 * worker killed with SIGKILL mid-task leaves its tasks to the other after the lease, without a second submit of
 * a recorded job.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@mediagate/persistence/Ids"
import { bundled } from "@mediagate/testing/bundle"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Billing from "../src/Billing.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import { TaskStorage } from "../src/TaskStorage.js"
import { pgNotRunning, pgUrl, runPostgres } from "./databases.js"
import * as PgUpstream from "./fixtures/pgUpstream.js"
import { newTask } from "./support.js"

const workerScript = fileURLToPath(new URL("./fixtures/worker-process.ts", import.meta.url))

/** Runs one statement on the server's `postgres` database. */
const admin = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(pgUrl("postgres")), maxConnections: 1 })),
    Effect.asVoid
  )

/** A fresh database for one test, dropped afterwards. */
const freshDatabase = Effect.acquireRelease(
  Effect.suspend(() => {
    const name = `mg_mp_${Ids.ulid().toLowerCase()}`
    return Effect.as(admin(`CREATE DATABASE ${name}`), name)
  }),
  (name) => Effect.ignore(admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
)

const startWorker = (database: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.map(Effect.promise(() => bundled(workerScript)), (bundle) =>
      spawn(process.execPath, [bundle], {
        env: { ...process.env, DATABASE_URL: pgUrl(database), ...env },
        stdio: ["ignore", "ignore", "inherit"]
      })),
    (child: ChildProcess) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
  )

const countOf = (rows: ReadonlyArray<{ n: string | number }>) => Number(rows[0]?.n ?? 0)

/** Polls until every id is terminal; fails after `timeoutMs`. */
const awaitAll = (ids: ReadonlyArray<string>, timeoutMs: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const started = Date.now()
    while (true) {
      const open = countOf(yield* sql<{ n: string }>`SELECT COUNT(*) AS n FROM fake_jobs`) // progress hint
      const storage = yield* TaskStorage
      const tasks = yield* Effect.forEach(ids, (id) => storage.getById(id), { concurrency: 8 })
      const unfinished = tasks.filter((t) => Option.isNone(t) || t.value.status !== "succeeded").length
      if (unfinished === 0) return
      if (Date.now() - started > timeoutMs) {
        return yield* Effect.dieMessage(`${unfinished} of ${ids.length} tasks unfinished (${open} jobs submitted)`)
      }
      yield* Effect.sleep(250)
    }
  })

const setup = (database: string) =>
  SqlTaskStorage.layer().pipe(
    Layer.provideMerge(Billing.layerUnmetered),
    Layer.provideMerge(PgClient.layer({ url: Redacted.make(pgUrl(database)) }))
  )

if (!runPostgres) console.warn(`multi-process tests skipped: ${pgNotRunning}`)

describe.skipIf(!runPostgres)("worker processes on one PostgreSQL database", () => {
  it.live(
    "two workers run 1,000 tasks: each exactly once at a time, all finish, both take part",
    () =>
      Effect.gen(function*() {
        const database = yield* freshDatabase
        yield* Effect.gen(function*() {
          const storage = yield* TaskStorage
          const sql = yield* SqlClient.SqlClient
          yield* PgUpstream.createTables
          const ids: Array<string> = []
          yield* Effect.forEach(Array.from({ length: 1000 }, (_, i) => i), () => {
            const task = newTask({ createdAt: Date.now() })
            ids.push(task.id)
            return storage.accept({ task, charge: undefined, idempotency: undefined })
          }, { concurrency: 8, discard: true })
          yield* startWorker(database, { OWNER: "alpha", JOB_MS: "100" })
          yield* startWorker(database, { OWNER: "beta", JOB_MS: "100" })
          yield* awaitAll(ids, 120_000)
          const perTask = yield* sql<
            { task_id: string; n: string }
          >`SELECT task_id, COUNT(*) AS n FROM fake_submits GROUP BY task_id`
          expect(perTask.length).toBe(1000)
          expect(perTask.filter((r) => Number(r.n) !== 1)).toEqual([])
          expect(countOf(yield* sql<{ n: string }>`SELECT COUNT(*) AS n FROM fake_violations`)).toBe(0)
          const owners = yield* sql<{ owner: string }>`SELECT DISTINCT owner FROM fake_submits ORDER BY owner`
          expect(owners.map((o) => o.owner)).toEqual(["alpha", "beta"])
        }).pipe(Effect.provide(setup(database)))
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )

  it.live(
    "a worker killed with SIGKILL mid-task: the other finishes its tasks after the lease, no recorded job resubmitted",
    () =>
      Effect.gen(function*() {
        const database = yield* freshDatabase
        yield* Effect.gen(function*() {
          const storage = yield* TaskStorage
          const sql = yield* SqlClient.SqlClient
          yield* PgUpstream.createTables
          const ids: Array<string> = []
          for (let i = 0; i < 200; i++) {
            const task = newTask({ createdAt: Date.now() })
            ids.push(task.id)
            yield* storage.accept({ task, charge: undefined, idempotency: undefined })
          }
          const doomed = yield* startWorker(database, {
            OWNER: "doomed",
            JOB_MS: "3000",
            LEASE_MS: "1500",
            CONCURRENCY: "32"
          })
          // wait until the doomed worker has work in flight, then kill it without warning
          while (countOf(yield* sql<{ n: string }>`SELECT COUNT(*) AS n FROM fake_submits`) < 60) {
            yield* Effect.sleep(50)
          }
          doomed.kill("SIGKILL")
          yield* Effect.sleep(100)
          // the killed process's calls in flight are over: their overlap markers are stale
          yield* sql`DELETE FROM fake_active`
          const recorded = (yield* Effect.forEach(ids, (id) => storage.getById(id)))
            .flatMap((t) => Option.isSome(t) && t.value.upstreamJobId !== null ? [t.value.id] : [])
          expect(recorded.length).toBeGreaterThan(0)
          yield* startWorker(database, { OWNER: "survivor", JOB_MS: "3000", LEASE_MS: "1500", CONCURRENCY: "32" })
          yield* awaitAll(ids, 120_000)
          const submits = yield* sql<
            { task_id: string; n: string }
          >`SELECT task_id, COUNT(*) AS n FROM fake_submits GROUP BY task_id`
          const count = new Map(submits.map((r) => [r.task_id, Number(r.n)]))
          expect(recorded.filter((id) => count.get(id) !== 1)).toEqual([])
          expect(countOf(yield* sql<{ n: string }>`SELECT COUNT(*) AS n FROM fake_violations`)).toBe(0)
        }).pipe(Effect.provide(setup(database)))
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )
})
