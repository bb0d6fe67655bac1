/**
 * The node registry behind `GET /admin/v1/system` (issue 14, item 5): two workers of two owners register through
 * their heartbeat with their concurrency and the leases they hold; a node that stops beating without a graceful
 * shutdown is reported stale after 3 heartbeat periods and dropped after an hour; a graceful shutdown removes its
 * node at once. Placement: a claim skips the tasks accepted by the nodes it excludes, and a beat records the nodes
 * its node is apart from (`files_unshared_with`); a worker looks again when it claims a task of a node it has not
 * seen, and hands it back unrun when it is apart from that node. On memory, SQLite and PostgreSQL (storage clock = `TestClock`).
 */
import { describe, expect, it } from "@effect/vitest"
import { type Admin } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Placement from "../src/Placement.js"
import * as ResultLinks from "../src/ResultLinks.js"
import * as SqlTaskStorage from "../src/SqlTaskStorage.js"
import * as TaskAdmin from "../src/TaskAdmin.js"
import * as TaskStorageModule from "../src/TaskStorage.js"
import { type Ports, TaskStorage } from "../src/TaskStorage.js"
import * as Worker from "../src/Worker.js"
import { postgres, runPostgres, sqlite } from "./databases.js"
import { makeFakeUpstream } from "./FakeUpstream.js"
import { makeRecordingBilling, newTask } from "./support.js"

const billing = makeRecordingBilling().layer

const backends: ReadonlyArray<readonly [string, () => Layer.Layer<TaskStorage | Ports, unknown>]> = [
  ["memory", () => TaskStorageModule.layerMemory().pipe(Layer.provide(billing))],
  ["sqlite", () => SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(sqlite(), billing)))],
  ...(runPostgres
    ? [
      [
        "postgres",
        () => SqlTaskStorage.layer({ time: "clock" }).pipe(Layer.provide(Layer.merge(postgres(), billing)))
      ] as const
    ]
    : [])
]

/** The engine's status as the operator API reads it. */
const status = Effect.flatMap(TaskAdmin.make, (admin) => admin.status).pipe(Effect.provide(ResultLinks.layerAsStored))

/**
 * Reads the status until `ok` holds: the workers' writes run on fibers of their own (on SQL with real I/O), which
 * may still be under way when `TestClock.adjust` returns. A bounded loop, waiting on the live clock.
 */
const statusWhen = (ok: (status: Admin.EngineStatus) => boolean, attempts = 1000) =>
  Effect.gen(function*() {
    for (let i = 0;; i++) {
      const current = yield* status
      if (ok(current) || i >= attempts) return current
      yield* TestServices.provideLive(Effect.sleep("10 millis"))
    }
  })

/** Starts a worker in a scope of its own (lease 30 s: a heartbeat every 10 s); answers that scope. */
const startWorker = (
  owner: string,
  concurrency: number,
  storage?: (real: TaskStorage["Type"]) => TaskStorage["Type"]
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const real = yield* TaskStorage
    // an idle worker looks for work once a minute: the test's hour on the TestClock stays a few hundred wakeups
    const run = Worker.run({ owner, concurrency, lease: "30 seconds", idle: "1 minute" })
    yield* Scope.extend(
      storage === undefined ? run : Effect.provide(run, TaskStorageModule.portsOf(storage(real))),
      scope
    )
    return scope
  })

/**
 * Stops a worker: its shutdown grace (10 s) may wait for a running step, so the clock moves on meanwhile, 10 s at a
 * time until the scope is closed (on a busy machine the grace's sleep may start after the first move).
 */
const stop = (scope: Scope.CloseableScope) =>
  Effect.gen(function*() {
    const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
    for (let i = 0; i < 100 && Option.isNone(yield* Fiber.poll(closing)); i++) {
      yield* TestClock.adjust("10 seconds")
      yield* TestServices.provideLive(Effect.sleep("10 millis"))
    }
    yield* Fiber.join(closing)
  })

const ids = (current: Admin.EngineStatus) => current.nodes.map((node) => node.id)
const staleness = (current: Admin.EngineStatus) => current.nodes.map((node) => [node.id, node.stale])

for (const [name, backend] of backends) {
  describe(`the node registry on ${name}`, () => {
    it.scoped(
      "two workers register with their leases; a crashed one turns stale, then is dropped; a stopped one leaves",
      () =>
        Effect.gen(function*() {
          const storage = yield* TaskStorage
          const start = 1_800_000_000_000
          yield* TestClock.setTime(start)
          // a task whose submit takes a minute: its worker holds the lease meanwhile
          const task = newTask({ createdAt: start, input: { prompt: "[slow=60000] a cat" } })
          yield* storage.accept({ task, charge: undefined, idempotency: undefined })

          const a = yield* startWorker("node-a", 4)
          // node-b "crashes": its shutdown cannot remove its row (as when the process is killed)
          const b = yield* startWorker("node-b", 2, (real) => ({ ...real, removeNode: () => Effect.void }))
          // both registered at once (their first beat), one of them claimed the task; its next beat counts the lease
          yield* statusWhen((s) => s.nodes.length === 2 && s.tasks.by_status.queued === 1)
          yield* TestClock.adjust("10 seconds")

          const first = yield* statusWhen((s) =>
            s.nodes.length === 2 && s.nodes.reduce((n, node) => n + node.leases, 0) === 1
          )
          expect(first.nodes.map((node) => [node.id, node.concurrency, node.stale])).toEqual([
            ["node-a", 4, false],
            ["node-b", 2, false]
          ])
          // the task's lease is held by one of them, and counted at its heartbeat
          expect(first.nodes.reduce((sum, node) => sum + node.leases, 0)).toBe(1)
          expect(first.nodes.every((node) => node.pid === process.pid)).toBe(true)
          expect(first.nodes.every((node) => node.started_at === new Date(start).toISOString())).toBe(true)
          expect(first.tasks).toMatchObject({ queue_depth: 0, in_flight_upstream: 1, due: 0 })
          expect(first.tasks.by_status.queued).toBe(1)

          // node-b stops beating: stale once 3 of its heartbeat periods (3 × 10 s) have passed since it was last seen
          yield* stop(b)
          const stopped = yield* status
          const seen = Date.parse(stopped.nodes.find((node) => node.id === "node-b")!.last_seen_at)
          yield* TestClock.adjust(seen + 30_000 - stopped.checkedAt)
          expect(staleness(yield* statusWhen((s) => s.checkedAt === seen + 30_000))).toEqual([
            ["node-a", false],
            ["node-b", false]
          ])
          yield* TestClock.adjust("1 millis")
          const stale = yield* status
          expect(staleness(stale)).toEqual([["node-a", false], ["node-b", true]])
          expect(Date.parse(stale.nodes.find((node) => node.id === "node-b")!.last_seen_at)).toBe(seen)

          // an hour after it was last seen, it is dropped from the registry; node-a still beats
          yield* TestClock.adjust("1 hour")
          // (on SQL a beat's write is real I/O, so the TestClock's hour passes over beats still under way: one more
          // period lets node-a beat at the current time; on a busy machine its beat may land a period later still)
          const fresh = (s: Admin.EngineStatus) => s.nodes.length === 1 && s.nodes[0]!.stale === false
          let later = yield* status
          for (let period = 0; period < 5 && !fresh(later); period++) {
            yield* TestClock.adjust("10 seconds")
            later = yield* statusWhen(fresh, 300)
          }
          expect(ids(later)).toEqual(["node-a"])
          expect(staleness(later)).toEqual([["node-a", false]])

          // a graceful shutdown removes the node at once
          yield* stop(a)
          expect((yield* status).nodes).toEqual([])
        }).pipe(Effect.provide(Layer.provideMerge(backend(), makeFakeUpstream({ durationMs: 1000 }).layer))),
      60_000
    )

    it.scoped("placement: a claim skips the tasks of the nodes it excludes; a beat records the nodes it is apart from", () =>
      Effect.gen(function*() {
        const storage = yield* TaskStorage
        const start = 1_800_000_000_000
        yield* TestClock.setTime(start)
        const accepted = (nodeId: string | null, n: number) => newTask({ createdAt: start + n, nodeId })
        const tasks = [accepted("node-a", 1), accepted("node-b", 2), accepted(null, 3), accepted("node-c", 4)]
        for (const task of tasks) yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        yield* TestClock.adjust("1 second")

        // node-a is apart from node-b: it takes its own task, the one of no node, and node-c's, never node-b's
        const byA = yield* storage.claim("node-a", 10, 30_000, ["node-b"])
        expect(byA.map((task) => task.nodeId)).toEqual(["node-a", null, "node-c"])
        expect(Option.getOrUndefined(yield* storage.getById(tasks[1]!.id))?.nodeId).toBe("node-b")
        // a claim that excludes nothing takes node-b's
        const byB = yield* storage.claim("node-b", 10, 30_000)
        expect(byB.map((task) => task.id)).toEqual([tasks[1]!.id])

        yield* storage.beatNode({
          id: "node-a",
          host: "host-a",
          pid: 1,
          concurrency: 4,
          heartbeatMs: 10_000,
          leases: 3,
          apartFrom: ["node-b", "node-c"]
        })
        yield* storage.beatNode({
          id: "node-b",
          host: "host-b",
          pid: 2,
          concurrency: 4,
          heartbeatMs: 10_000,
          leases: 1
        })
        const current = yield* status
        expect(current.nodes.map((node) => [node.id, node.files_unshared_with])).toEqual([
          ["node-a", ["node-b", "node-c"]],
          ["node-b", []]
        ])
        // a later beat replaces the list (shared again)
        yield* storage.beatNode({
          id: "node-a",
          host: "host-a",
          pid: 1,
          concurrency: 4,
          heartbeatMs: 10_000,
          leases: 3,
          apartFrom: []
        })
        expect((yield* status).nodes.map((node) => node.files_unshared_with)).toEqual([[], []])
      }).pipe(Effect.provide(backend())))

    it.scoped("placement: a task of a node not seen at the last look is looked at again, and handed back unrun when apart", () => {
      const upstream = makeFakeUpstream({ durationMs: 1000 })
      // the registry as node-a's Placement sees it: node-c starts (on another directory) after node-a's first look
      const world = { registered: ["node-a"], apart: [] as ReadonlyArray<string> }
      let known = new Set<string>()
      let apart: ReadonlyArray<string> = []
      let looks = 0
      const placement = Layer.succeed(Placement.Placement, {
        nodeId: "node-a",
        check: Effect.sync(() => {
          looks++
          known = new Set(world.registered)
          apart = world.apart
          return apart
        }),
        apart: () => apart,
        knows: (id) => known.has(id)
      })
      return Effect.gen(function*() {
        const storage = yield* TaskStorage
        const start = 1_800_000_000_000
        yield* TestClock.setTime(start)
        const worker = yield* startWorker("node-a", 4)
        // its first beat looked before the worker started
        expect(looks).toBe(1)
        world.registered = ["node-a", "node-c"]
        world.apart = ["node-c"]
        const ofC = newTask({ createdAt: start, nodeId: "node-c" })
        const ofA = newTask({ createdAt: start, nodeId: "node-a" })
        for (const task of [ofC, ofA]) yield* storage.accept({ task, charge: undefined, idempotency: undefined })
        // node-a claims both (it has not looked since node-c started), looks again, runs its own and hands node-c's back
        for (let i = 0; i < 300 && !upstream.log.submits.has(ofA.id); i++) {
          yield* TestServices.provideLive(Effect.sleep("10 millis"))
        }
        expect(upstream.log.submits.get(ofA.id)).toBe(1)
        expect(looks).toBe(2)
        const handedBack = Option.getOrThrow(yield* storage.getById(ofC.id))
        expect(upstream.log.submits.has(ofC.id)).toBe(false)
        expect([handedBack.fence, handedBack.leaseOwner, handedBack.upstreamJobId]).toEqual([1, null, null])
        // node-a's next claim leaves node-c's task alone: it knows now that it is apart from node-c
        const next = newTask({ createdAt: start, nodeId: "node-a" })
        yield* storage.accept({ task: next, charge: undefined, idempotency: undefined })
        for (let i = 0; i < 300 && !upstream.log.submits.has(next.id); i++) {
          yield* TestServices.provideLive(Effect.sleep("10 millis"))
        }
        expect(upstream.log.submits.get(next.id)).toBe(1)
        expect(looks).toBe(2)
        const later = Option.getOrThrow(yield* storage.getById(ofC.id))
        expect([later.fence, later.leaseOwner]).toEqual([1, null])
        expect(upstream.log.submits.has(ofC.id)).toBe(false)
        yield* stop(worker)
      }).pipe(Effect.provide(Layer.provideMerge(backend(), Layer.merge(upstream.layer, placement))))
    })
  })
}
