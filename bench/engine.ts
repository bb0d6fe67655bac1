/**
 * Engine benchmarks. Prints figures; asserts nothing.
 *
 *   npm run bench:engine -- [--backend memory|sqlite|pg|all] [--tasks 2000] [--inflight 10000] [--job-seconds 30]
 *
 * 1. Throughput: tasks/s from accept to succeeded on a zero-latency upstream; on PostgreSQL also graphile-worker's
 *    jobs/s for the same shape (add → complete, no-op task) on the same server in the same run.
 * 2. Accept → claim latency (p50/p99): tasks arriving at a steady rate, time from creation to upstream submit.
 * 3. Tasks in flight: N tasks on an upstream that takes `job-seconds` and calls back when done; finish lag after
 *    the upstream finished (p50/p99) and the process's CPU use while they wait.
 *
 * PostgreSQL runs in a fresh database at 127.0.0.1:5432 (user postgres); SQLite in a temporary file.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as Planner from "@mediagate/engine/Planner"
import * as ResultLinks from "@mediagate/engine/ResultLinks"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import * as TaskService from "@mediagate/engine/TaskService"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import { Upstream } from "@mediagate/engine/Upstream"
import * as Worker from "@mediagate/engine/Worker"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { graphileThroughput } from "./graphile.js"

const args = process.argv.slice(2)
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback
}
const backends = arg("backend", "all") === "all" ? ["memory", "sqlite", "pg"] : [arg("backend", "all")]
const throughputTasks = Number(arg("tasks", "2000"))
const inflightTasks = Number(arg("inflight", "10000"))
const jobMs = Number(arg("job-seconds", "30")) * 1000

const principal = {
  accountId: "acct_bench",
  keyId: "key_bench",
  environment: "live" as const,
  permissions: {},
  spendLimitMicros: null,
  spentMicros: 0,
  expiresAt: null,
  clientAddress: undefined
}
const command = (i: number) => ({
  endpoint: "vendor3/text-to-video" as const,
  request: { model: "vendor3-3", input: { prompt: `bench ${i}`, aspect_ratio: "16:9" } },
  idempotencyKey: undefined
})

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** An upstream whose jobs take `durationMs` and call back when done; it records submit times. */
const benchUpstream = (durationMs: number) => {
  const submittedAt = new Map<string, number>()
  const claimLatency: Array<number> = []
  const layer = Layer.scoped(
    Upstream,
    Effect.gen(function*() {
      const changes = yield* PubSub.unbounded<string>()
      return {
        submit: (task) =>
          Effect.gen(function*() {
            const now = Date.now()
            submittedAt.set(task.id, now)
            claimLatency.push(now - task.createdAt)
            if (durationMs > 0) {
              yield* Effect.forkDaemon(Effect.zipRight(Effect.sleep(durationMs), PubSub.publish(changes, task.id)))
            }
            return { jobId: task.id }
          }),
        poll: (task) =>
          Effect.sync(() =>
            Date.now() - (submittedAt.get(task.id) ?? 0) >= durationMs
              ? {
                _tag: "Succeeded" as const,
                result: [{ url: "https://x/y.mp4", duration: 5, format: "mp4", size_bytes: 1 }]
              }
              : { _tag: "Running" as const, progress: 50 }
          ),
        cancel: () => Effect.void,
        changes: Stream.fromPubSub(changes),
        notifiesChanges: true
      }
    })
  )
  return { layer, submittedAt, claimLatency }
}

const database = (backend: string) => {
  if (backend === "memory") return { layer: TaskStorage.layerMemory(), cleanup: () => {} }
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "mg-bench-"))
    return {
      layer: SqlTaskStorage.layer().pipe(Layer.provide(SqliteClient.layer({ filename: join(dir, "bench.db") }))),
      cleanup: () => rmSync(dir, { recursive: true, force: true })
    }
  }
  const name = `mg_bench_${Date.now()}`
  const admin = (statement: string) =>
    Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make("postgres://postgres@127.0.0.1:5432/postgres") }))
      )
    )
  return {
    setup: () => admin(`CREATE DATABASE ${name}`),
    layer: SqlTaskStorage.layer().pipe(
      Layer.provide(
        PgClient.layer({ url: Redacted.make(`postgres://postgres@127.0.0.1:5432/${name}`), maxConnections: 20 })
      )
    ),
    cleanup: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}

/** Waits until `count` terminal events are in the outbox. */
const awaitEvents = (count: number) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage.TaskStorage
    let seen = 0
    let cursor: string | undefined
    while (seen < count) {
      const page = yield* storage.readOutbox(cursor, 5000)
      seen += page.entries.length
      cursor = page.cursor
      if (page.entries.length === 0) yield* Effect.sleep(20)
    }
  })

const scenario = <A, E>(
  backend: string,
  durationMs: number,
  workerOptions: Worker.WorkerOptions,
  body: (
    upstream: ReturnType<typeof benchUpstream>
  ) => Effect.Effect<A, E, Services.TaskService | TaskStorage.TaskStorage>
) =>
  Effect.gen(function*() {
    const db = database(backend)
    if ("setup" in db && db.setup !== undefined) yield* Effect.promise(db.setup)
    const upstream = benchUpstream(durationMs)
    const layer = Worker.layer(workerOptions).pipe(
      Layer.provideMerge(TaskService.layer),
      Layer.provide(ResultLinks.layerAsStored),
      Layer.provideMerge(Planner.layerFixed({ priceMicros: 10_000, estimatedSeconds: 1, timeout: "10 minutes" })),
      Layer.provideMerge(db.layer),
      Layer.provideMerge(upstream.layer),
      Layer.provide(Billing.layerUnmetered)
    )
    return yield* body(upstream).pipe(
      Effect.provide(layer),
      Effect.scoped,
      Effect.ensuring(Effect.promise(async () => db.cleanup()))
    )
  })

const throughput = (backend: string) =>
  scenario(backend, 0, { concurrency: 64, idle: "200 millis", pollDelay: () => 0 }, () =>
    Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const started = Date.now()
      yield* Effect.forEach(Array.from({ length: throughputTasks }, (_, i) => i), (i) =>
        tasks.create(principal, command(i)), {
        concurrency: 16,
        discard: true
      })
      yield* awaitEvents(throughputTasks)
      const seconds = (Date.now() - started) / 1000
      return {
        perSecond: throughputTasks / seconds,
        text: `${(throughputTasks / seconds).toFixed(0)} tasks/s (${throughputTasks} tasks in ${seconds.toFixed(2)} s)`
      }
    }))

const claimLatency = (backend: string) =>
  scenario(backend, 0, { concurrency: 64, idle: "1 second", pollDelay: () => 0 }, (upstream) =>
    Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const count = 500
      for (let i = 0; i < count; i++) {
        yield* tasks.create(principal, command(i))
        yield* Effect.sleep(5) // ~200 tasks/s, steady
      }
      yield* awaitEvents(count)
      return `p50 ${percentile(upstream.claimLatency, 50)} ms, p99 ${
        percentile(upstream.claimLatency, 99)
      } ms (${count} tasks at ~200/s)`
    }))

const inflight = (backend: string) =>
  scenario(backend, jobMs, { concurrency: 64, idle: "1 second" }, (upstream) =>
    Effect.gen(function*() {
      const tasks = yield* Services.TaskService
      const storage = yield* TaskStorage.TaskStorage
      const ids: Array<string> = []
      const acceptStart = Date.now()
      yield* Effect.forEach(Array.from({ length: inflightTasks }, (_, i) => i), (i) =>
        Effect.map(tasks.create(principal, command(i)), (ack) => void ids.push(ack.id)), {
        concurrency: 32,
        discard: true
      })
      const acceptSeconds = (Date.now() - acceptStart) / 1000
      const cpuStart = process.cpuUsage()
      const wallStart = Date.now()
      yield* awaitEvents(inflightTasks)
      const cpu = process.cpuUsage(cpuStart)
      const wall = Date.now() - wallStart
      const lags: Array<number> = []
      for (const id of ids) {
        const task = yield* storage.getById(id)
        if (task._tag === "Some" && task.value.completedAt !== null) {
          lags.push(task.value.completedAt - (upstream.submittedAt.get(id)! + jobMs))
        }
      }
      return `${inflightTasks} in flight (accepted in ${acceptSeconds.toFixed(1)} s); finish lag p50 ${
        percentile(lags, 50)
      } ms, p99 ${percentile(lags, 99)} ms; CPU ${
        (100 * (cpu.user + cpu.system) / 1000 / wall).toFixed(1)
      }% of one core over ${(wall / 1000).toFixed(1)} s`
    }))

const main = Effect.gen(function*() {
  console.log(`engine benchmarks (node ${process.version}, ${new Date().toISOString()})`)
  for (const backend of backends) {
    console.log(`\n[${backend}]`)
    const own = yield* throughput(backend)
    console.log(`  throughput:           ${own.text}`)
    if (backend === "pg") {
      const graphile = yield* Effect.promise(() => graphileThroughput(throughputTasks))
      console.log(
        `  graphile-worker:      ${graphile.text}; Mediagate / graphile-worker ${
          (own.perSecond / graphile.perSecond).toFixed(2)
        }×`
      )
    }
    console.log(`  accept → claim:       ${yield* claimLatency(backend)}`)
    console.log(`  in flight:            ${yield* inflight(backend)}`)
  }
})

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exit(1)
})
