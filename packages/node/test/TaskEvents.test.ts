/**
 * A task's event stream (`GET /api/v1/tasks/{id}/events`) through the production server on SQLite and
 * PostgreSQL: the current state, each change read from the database, `end` after the terminal state and the end of
 * the stream; `Last-Event-ID` resumes without repeating a state (on another node of the same database too) and
 * answers 204 once the client has the final state; keep-alive lines while nothing changes; the same key, permission
 * and environment rules as `GET /tasks/{id}`; and the bound on open streams per key (429, then room again once a
 * stream closes).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Database from "../src/Database.js"
import type * as Mediagate from "../src/Mediagate.js"
import { accountOn, createTask, type Event, openStream, tasksOf } from "./eventStreams.js"
import { call, servedStacks, serveScoped } from "./served.js"

const { postgres, runPostgres, sqlite } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

const adminToken = "task-events-test-admin-token"
const serve = servedStacks()

/** Opens a task's stream with `key` (and `Last-Event-ID` when given). */
const open = (base: string, id: string, key: string | undefined, lastEventId?: string) =>
  openStream(`${base}/api/v1/tasks/${id}/events`, key, lastEventId)

const databases: ReadonlyArray<readonly [string, () => Database.Database]> = [
  ["SQLite", () => ({ layer: sqlite() })],
  ...(runPostgres ? [["PostgreSQL", () => ({ layer: postgres() })] as const] : [])
]

/** The options of a stack of these tests (events read every 100 ms). */
const options = (settings: { workers: boolean; settings?: Record<string, string> }): Mediagate.Options => ({
  dataDir: mkdtempSync(join(tmpdir(), "mg-task-events-")),
  adminToken,
  fileSecret: "task-events-test-secret",
  workers: settings.workers,
  settings: { MEDIAGATE_EVENT_POLL_MS: "100", ...settings.settings }
})

/** Starts a stack on `database` until the file ends: its base URL. */
const start = (database: Database.Database, settings: { workers: boolean; settings?: Record<string, string> }) =>
  Effect.map(serve({ ...options(settings), database }), (port) => `http://127.0.0.1:${port}`)

describe.each(databases)("task event streams on %s", (_name, database) => {
  it.live(
    "the current state, each change, end after the terminal state; Last-Event-ID resumes",
    () =>
      Effect.gen(function*() {
        const base = yield* start(database(), { workers: true })
        const keys = yield* accountOn(base, adminToken)
        const id = yield* createTask(base, keys.test, "a lighthouse at dusk [sim:delay=2]")

        const stream = yield* Effect.promise(() => open(base, id, keys.test))
        expect(stream.status).toBe(200)
        expect(stream.headers.get("content-type")).toBe("text/event-stream")
        // the reconnection delay comes first
        yield* Effect.promise(() => stream.readUntil((events) => events.length > 0, 10_000))
        expect(stream.events[0]).toEqual({ retry: "2000" })
        expect(yield* Effect.promise(() => stream.readUntil((events) => events.some((e) => e.event === "end"), 60_000)))
          .toBe(true)
        // the stream closes after `end`
        expect(yield* Effect.promise(() => stream.readUntil(() => false, 10_000))).toBe(true)
        expect(stream.ended()).toBe(true)

        const states = tasksOf(stream.events)
        expect(states[0]!.task.id).toBe(id)
        expect(["pending", "queued", "running"]).toContain(states[0]!.task.status)
        const last = states[states.length - 1]!
        expect(last.task.status).toBe("succeeded")
        expect(last.task.progress).toBe(100)
        // the simulated upstream tells its quarters: the stream sends the running states with their log lines
        const running = states.filter((state) => state.task.status === "running")
        expect(running.length).toBeGreaterThan(0)
        for (const state of running) {
          expect(state.task.progress).toBeGreaterThan(0)
          expect(state.task.progress).toBeLessThan(100)
          expect(state.task.logs?.slice(0, 2)).toEqual(["vendor3-3: queued", "vendor3-3: started text-to-video"])
          expect(state.task.queue_position).toBeUndefined()
        }
        expect(last.task.logs).toContain("vendor3-3: started text-to-video")
        // every state once: no two events in a row with the same version
        expect(new Set(states.map((state) => state.id)).size).toBe(states.length)
        expect(stream.events[stream.events.length - 1]!.event).toBe("end")
        // the final state is what GET /tasks/{id} answers (links aside: they are signed anew at each read)
        const read = (yield* call(base, "GET", `/api/v1/tasks/${id}`, keys.test)).body.data
        const withoutLinks = (task: Record<string, unknown>) => ({ ...task, result: undefined })
        expect(withoutLinks(last.task)).toEqual(withoutLinks(read))

        // reconnecting with the final state's id: 204, an EventSource stops
        const again = yield* Effect.promise(() => open(base, id, keys.test, last.id))
        expect(again.status).toBe(204)
        // with an earlier state's id: the final state at once, then end
        const behind = yield* Effect.promise(() => open(base, id, keys.test, states[0]!.id))
        expect(behind.status).toBe(200)
        yield* Effect.promise(() => behind.readUntil(() => false, 10_000))
        expect(tasksOf(behind.events).map((state) => state.id)).toEqual([last.id])
        expect(behind.events[behind.events.length - 1]!.event).toBe("end")
      }),
    120_000
  )

  it.live(
    "keep-alive lines while nothing changes; the same rules as GET /tasks/{id}; a bound per key",
    () =>
      Effect.gen(function*() {
        // no workers: tasks stay pending
        const base = yield* start(database(), {
          workers: false,
          settings: { MEDIAGATE_EVENT_HEARTBEAT_MS: "100", MEDIAGATE_MAX_EVENT_STREAMS: "2" }
        })
        const keys = yield* accountOn(base, adminToken)
        const id = yield* createTask(base, keys.test, "a quiet harbour")

        const first = yield* Effect.promise(() => open(base, id, keys.test))
        expect(first.status).toBe(200)
        expect(first.headers.get("ratelimit-policy")).toBe(
          `"key-streams";q=2;qu="concurrent-requests", ` +
            `"node-streams";q=1000;qu="concurrent-requests"`
        )
        const comments = (events: ReadonlyArray<Event>) => events.filter((e) => e.comment === "keep-alive").length
        expect(yield* Effect.promise(() => first.readUntil((events) => comments(events) >= 3, 20_000))).toBe(true)
        const [pending] = tasksOf(first.events)
        expect(pending!.task.status).toBe("pending")
        expect(tasksOf(first.events)).toHaveLength(1)

        // resuming at the current state: keep-alive lines only, no state repeated
        const resumed = yield* Effect.promise(() => open(base, id, keys.test, pending!.id))
        expect(resumed.status).toBe(200)
        expect(yield* Effect.promise(() => resumed.readUntil((events) => comments(events) >= 2, 20_000))).toBe(true)
        expect(tasksOf(resumed.events)).toEqual([])

        // two streams open: the key's third is refused
        const third = yield* Effect.promise(() => open(base, id, keys.test))
        expect(third.status).toBe(429)
        expect(third.headers.get("retry-after")).toBe("5")
        expect(third.body.error.code).toBe("RATE_LIMITED")
        expect(third.body.error.message).toBe(
          "too many open event streams of this key (2); close one or poll GET /tasks/{id} instead"
        )
        // a stream closed by its client gives its slot back
        first.close()
        const deadline = Date.now() + 20_000
        let reopened = yield* Effect.promise(() => open(base, id, keys.test))
        while (reopened.status === 429 && Date.now() < deadline) {
          yield* Effect.sleep("100 millis")
          reopened = yield* Effect.promise(() => open(base, id, keys.test))
        }
        expect(reopened.status).toBe(200)
        resumed.close()
        reopened.close()

        // the rules of GET /tasks/{id}: no key, a key without tasks:read, another environment, an unknown id
        const refusal = (key: string | undefined, task = id) =>
          Effect.map(Effect.promise(() => open(base, task, key)), (answer) => [answer.status, answer.body.error.code])
        expect(yield* refusal(undefined)).toEqual([401, "AUTH_REQUIRED"])
        expect(yield* refusal(keys.noRead)).toEqual([403, "KEY_PERMISSION_DENIED"])
        expect(yield* refusal(keys.live)).toEqual([404, "TASK_NOT_FOUND"])
        expect(yield* refusal(keys.test, "task_01JX00000000000000000000ZZ")).toEqual([404, "TASK_NOT_FOUND"])

        // where pending tasks wait: their place among the account's pending tasks, in reads, lists and the stream

        const second = yield* createTask(base, keys.test, "a second harbour")

        const later = yield* createTask(base, keys.test, "a third harbour")

        const positionOf = (task: string) =>
          Effect.map(call(base, "GET", `/api/v1/tasks/${task}`, keys.test), (answer) => answer.body.data.queue_position)

        expect(pending!.task.queue_position).toEqual({ account: 1, upstream: null })

        expect(yield* positionOf(second)).toEqual({ account: 2, upstream: null })

        expect(yield* positionOf(later)).toEqual({ account: 3, upstream: null })

        const listed = (yield* call(base, "GET", "/api/v1/tasks?status=pending", keys.test)).body.data as Array<
          { id: string; queue_position: unknown }
        >

        expect(listed.map((item) => [item.id, item.queue_position])).toEqual([
          [later, { account: 3, upstream: null }],

          [second, { account: 2, upstream: null }],

          [id, { account: 1, upstream: null }]
        ])

        // a live task is in a line of its own environment

        const live = yield* createTask(base, keys.live, "a live harbour")

        expect((yield* call(base, "GET", `/api/v1/tasks/${live}`, keys.live)).body.data.queue_position).toEqual({
          account: 1,

          upstream: null
        })

        // (the streams above closed) the second moves up when the first is cancelled: its stream sends the new place

        const onSecond = yield* Effect.promise(() => open(base, second, keys.test))

        yield* Effect.promise(() => onSecond.readUntil((events) => tasksOf(events).length > 0, 20_000))

        expect((yield* call(base, "POST", `/api/v1/tasks/${later}/cancel`, keys.test)).status).toBe(200)

        expect((yield* call(base, "POST", `/api/v1/tasks/${id}/cancel`, keys.test)).status).toBe(200)

        expect(yield* Effect.promise(() => onSecond.readUntil((events) => tasksOf(events).length > 1, 20_000))).toBe(
          true
        )

        expect(tasksOf(onSecond.events).map((state) => state.task.queue_position)).toEqual([
          { account: 2, upstream: null },

          { account: 1, upstream: null }
        ])

        onSecond.close()
      }),
    120_000
  )
})

describe.skipIf(!runPostgres)("task event streams across nodes of one PostgreSQL database", () => {
  it.scopedLive(
    "a stream resumed on another node with Last-Event-ID repeats no state and sees the end",
    () =>
      Effect.gen(function*() {
        // one schema for both nodes, dropped after they closed
        const schema = yield* Databases.pgSchema
        const node = (workers: boolean) =>
          Effect.map(
            serveScoped({ ...options({ workers }), database: { layer: Databases.pgClient(schema) } }),
            (port) => `http://127.0.0.1:${port}`
          )
        // node A runs no workers; node B runs them
        const a = yield* node(false)
        const keys = yield* accountOn(a, adminToken)
        const id = yield* createTask(a, keys.test, "a ferry crossing [sim:delay=2]")
        const onA = yield* Effect.promise(() => open(a, id, keys.test))
        yield* Effect.promise(() => onA.readUntil((events) => tasksOf(events).length > 0, 20_000))
        const [pending] = tasksOf(onA.events)
        expect(pending!.task.status).toBe("pending")
        onA.close()

        const b = yield* node(true)
        const onB = yield* Effect.promise(() => open(b, id, keys.test, pending!.id))
        expect(onB.status).toBe(200)
        expect(yield* Effect.promise(() => onB.readUntil((events) => events.some((e) => e.event === "end"), 60_000)))
          .toBe(true)
        const states = tasksOf(onB.events)
        // not the state A sent, whatever came after it, and the end
        expect(states.map((state) => state.id)).not.toContain(pending!.id)
        expect(states[states.length - 1]!.task.status).toBe("succeeded")
      }),
    120_000
  )
})
