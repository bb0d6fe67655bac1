/**
 * The dispatcher is woken by the outbox signal, not by its poll: with the poll (the backstop) set to one hour, a
 * task that reaches a terminal state has its webhook delivered within a second — on memory, SQLite and PostgreSQL,
 * and on PostgreSQL across two pools (a finish written through one wakes the dispatcher of the other by `NOTIFY`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import { layerUnmetered } from "@mediagate/engine/Billing"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import type { NewTask } from "@mediagate/engine/TaskRecord"
import { layerMemory as taskStorageMemory, type Ports, TaskStorage } from "@mediagate/engine/TaskStorage"
import * as Ids from "@mediagate/persistence/Ids"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Dispatcher from "../src/Dispatcher.js"
import { layerSender } from "../src/Outbound.js"
import * as SqlWebhookStore from "../src/SqlWebhookStore.js"
import * as WebhookStore from "../src/WebhookStore.js"
import { pgClient, pgSchema, postgres, runPostgres, sqlite } from "./databases.js"
import { receiver } from "./support.js"

/** Only the signal can wake the dispatcher within a test: both of its polls wait an hour. */
const backstopOnly: Dispatcher.DispatcherOptions = { idle: "1 hour", deliveryIdle: "1 hour", jitter: 0 }

const taskFor = (now: number, webhookUrl: string): NewTask =>
  Fixtures.newTask({
    id: Ids.taskId(now),
    accountId: "acct_alice",
    webhookUrl,
    estimatedSeconds: 1,
    deadlineAt: now + 3_600_000,
    createdAt: now - 5
  })

/** Accepts, claims and ends a task through `writer` (finished, or cancelled before it is claimed). */
const endTask = (writer: TaskStorage["Type"], url: string, how: "finish" | "finish-claimed" | "cancel") =>
  Effect.gen(function*() {
    const task = taskFor(yield* writer.now, url)
    yield* writer.accept({ task, charge: undefined, idempotency: undefined })
    if (how === "cancel") {
      const cancelled = yield* writer.cancel(task.accountId, task.id)
      assert.strictEqual(cancelled._tag, "Cancelled")
      return task.id
    }
    const claimed = (yield* writer.claim("w", 10, 30_000)).find((t) => t.id === task.id)
    assert.isDefined(claimed)
    // "finish-claimed": as a worker finishes, with the claim's record (on PostgreSQL one statement with the event)
    const ended = yield* writer.finish(
      task.id,
      claimed!.fence,
      { _tag: "Succeeded", result: [] },
      how === "finish-claimed" ? { task: claimed } : {}
    )
    assert.isTrue(ended._tag === "Some")
    return task.id
  })

/**
 * Ends three tasks one after another (one finished as a worker does, one cancelled, one finished) and checks that each
 * one's per-job webhook arrives within 3 s of its terminal write: woken by the write, not by the dispatcher's backstop
 * of an hour (the bound leaves room for a loaded machine's scheduling; the writes themselves are not counted).
 */
const deliveredPromptly = (writer: TaskStorage["Type"]) =>
  Effect.gen(function*() {
    const server = yield* receiver
    for (const how of ["finish-claimed", "cancel", "finish"] as const) {
      const before = server.received.length
      const taskId = yield* endTask(writer, `${server.url}?n=${before}`, how)
      const written = Date.now()
      while (server.received.length === before && Date.now() - written < 3_000) yield* Effect.sleep("5 millis")
      const elapsed = Date.now() - written
      expect(server.received.length, `${how}: delivered within 3 s`).toBe(before + 1)
      expect(server.received[before]!.headers["x-job-id"]).toBe(taskId)
      expect(elapsed).toBeLessThan(3_000)
    }
  })

/** Starts the dispatcher (real sender, loopback allowed) on the services in context; gives it a moment to listen. */
const startDispatcher = Effect.gen(function*() {
  yield* Layer.build(Dispatcher.layer(backstopOnly).pipe(Layer.provide(layerSender({ allowPrivate: true }))))
  yield* Effect.sleep("50 millis")
})

const sqlStack = (database: Layer.Layer<SqlClient.SqlClient, unknown>, prefix?: string) =>
  Layer.merge(
    SqlTaskStorage.layer(prefix === undefined ? {} : { prefix }),
    SqlWebhookStore.layer(prefix === undefined ? {} : { prefix })
  ).pipe(Layer.provide(Layer.merge(database, layerUnmetered)))

const backends: ReadonlyArray<
  readonly [string, () => Layer.Layer<TaskStorage | Ports | WebhookStore.WebhookStore, unknown>]
> = [
  ["memory", () => Layer.merge(taskStorageMemory().pipe(Layer.provide(layerUnmetered)), WebhookStore.layerMemory)],
  ["sqlite", () => sqlStack(sqlite())],
  ...(runPostgres ? [["postgres", () => sqlStack(postgres())] as const] : [])
]

describe("the dispatcher wakes on outbox writes (backstop: one hour)", () => {
  for (const [name, backend] of backends) {
    it.scopedLive(name, () =>
      Effect.gen(function*() {
        yield* startDispatcher
        yield* deliveredPromptly(yield* TaskStorage)
      }).pipe(
        // the dispatcher stops (its scope closes) before the storage it uses is released
        Effect.scoped,
        Effect.provide(backend())
      ), { timeout: 20_000 })
  }
})

/**
 * The webhook store with its claims counted: how many deliveries the delivery loop's `claimDue` took, against how
 * many the fan-out leased to the dispatcher itself.
 */
const countingClaims = () => {
  const counts = { claimed: 0, leased: 0 }
  /** The delivery loop's claims that have answered. */
  const claims = { answered: 0 }
  const layer = Layer.effect(
    WebhookStore.WebhookStore,
    Effect.map(WebhookStore.WebhookStore, (store): WebhookStore.WebhookStore["Type"] => ({
      ...store,
      claimDue: (...args) =>
        Effect.tap(store.claimDue(...args), (claimed) =>
          Effect.sync(() => {
            counts.claimed += claimed.length
            claims.answered++
          })),
      fanOutLeased: (...args) =>
        Effect.tap(store.fanOutLeased(...args), (fanned) =>
          Effect.sync(() => {
            counts.leased += fanned._tag === "Some" ? fanned.value.leased.length : 0
          }))
    }))
  )
  return { counts, claims, layer }
}

describe("the dispatcher sends what it fans out without a claim", () => {
  for (const [name, backend] of backends) {
    it.scopedLive(name, () => {
      const claims = countingClaims()
      return Effect.gen(function*() {
        yield* startDispatcher
        // the delivery loop's first claim (at its start) holds the free slots while it runs: a fan-out meanwhile
        // could lease none (on a busy machine that claim outlasted the start's 50 ms)
        const started = Date.now()
        while (claims.claims.answered === 0 && Date.now() - started < 10_000) yield* Effect.sleep("5 millis")
        yield* deliveredPromptly(yield* TaskStorage)
        // three deliveries, each leased by the fan-out that created it: the delivery loop claimed none of them
        expect(claims.counts).toEqual({ claimed: 0, leased: 3 })
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.provideMerge(claims.layer, backend()))
      )
    }, { timeout: 20_000 })
  }
})

describe.skipIf(!runPostgres)("PostgreSQL: a write through one pool wakes a dispatcher on another", () => {
  it.scopedLive("NOTIFY <prefix>outbox", () =>
    Effect.gen(function*() {
      const schema = yield* pgSchema
      // a prefix of its own: NOTIFY channels are shared by every schema of the database
      const prefix = `wk${Math.random().toString(36).slice(2, 8)}_`
      const dispatcherSide = yield* Layer.build(sqlStack(pgClient(schema), prefix))
      const writerSide = yield* Layer.build(
        SqlTaskStorage.layer({ prefix }).pipe(Layer.provideMerge(Layer.merge(pgClient(schema), layerUnmetered)))
      )
      yield* startDispatcher.pipe(Effect.provide(dispatcherSide))
      // LISTEN starts in the background: wait until the dispatcher's connection listens on the channel
      const client = Context.get(writerSide, SqlClient.SqlClient)
      const channel = SqlTaskStorage.outboxChannel(prefix)
      for (let i = 0; i < 200; i++) {
        const [row] = yield* client<{ n: number | string }>`SELECT COUNT(*) AS n FROM pg_stat_activity
          WHERE query = ${`LISTEN "${channel}"`}`
        if (Number(row?.n ?? 0) > 0) break
        yield* Effect.sleep("25 millis")
      }
      yield* deliveredPromptly(Context.get(writerSide, TaskStorage))
    }), { timeout: 30_000 })
})
