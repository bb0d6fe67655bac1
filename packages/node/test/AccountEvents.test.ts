/**
 * An account's event stream (`GET /api/v1/tasks/events`) through the production server on SQLite and PostgreSQL:
 * every change of the key's account and environment, oldest first, filtered like the list; `Last-Event-ID` resumes
 * on a restarted server (the changes come from the database); a stream without it starts with the changes from now
 * on; keep-alive lines; the rules of the task list (key, permission) and the bound on open streams per key.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Mediagate from "../src/Mediagate.js"
import { accountOn, createTask, type Event, openStream, tasksOf } from "./eventStreams.js"
import { call, serveScoped } from "./served.js"

const { runPostgres } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

const adminToken = "account-events-test-admin-token"

/**
 * The storage of a test's servers: a SQLite file in a data folder, or a PostgreSQL schema (dropped when the test
 * ends). Each server started on it reads and writes the same tasks.
 */
const storages: ReadonlyArray<
  readonly [string, Effect.Effect<Pick<Mediagate.Options, "database">, unknown, Scope.Scope>]
> = [
  ["SQLite", Effect.succeed({})],
  ...(runPostgres
    ? [
      [
        "PostgreSQL",
        Effect.map(Databases.pgSchema, (schema) => ({ database: { layer: Databases.pgClient(schema) } }))
      ] as const
    ]
    : [])
]

/** Starts a server (workers on, events read every 100 ms, keep-alive lines every 100 ms) in `scope`: its base URL. */
const startIn = (
  scope: Scope.Scope,
  storage: Pick<Mediagate.Options, "database">,
  dataDir: string,
  settings: Record<string, string> = {}
) =>
  Effect.map(
    Scope.extend(
      serveScoped({
        ...storage,
        dataDir,
        adminToken,
        fileSecret: "account-events-test-secret",
        workers: true,
        settings: { MEDIAGATE_EVENT_POLL_MS: "100", MEDIAGATE_EVENT_HEARTBEAT_MS: "100", ...settings }
      }),
      scope
    ),
    (port) => `http://127.0.0.1:${port}`
  )

/** A scope for a server, closed by the test when it stops the server, else when the test ends (before its storage). */
const serverScope = Effect.flatMap(Effect.scope, (scope) => Scope.fork(scope, ExecutionStrategy.sequential))

const streamOf = (base: string, key: string | undefined, query = "", lastEventId?: string) =>
  Effect.promise(() => openStream(`${base}/api/v1/tasks/events${query}`, key, lastEventId))

const statusRank = ["pending", "queued", "running", "succeeded"]

/** The last state sent of each task, by id. */
const lastStates = (events: ReadonlyArray<Event>) =>
  new Map(tasksOf(events).map((state) => [state.task.id, state.task]))

const finished = (ids: ReadonlyArray<string>) => (events: ReadonlyArray<Event>) => {
  const last = lastStates(events)
  return ids.every((id) => last.get(id)?.status === "succeeded")
}

describe.each(storages)("an account's event stream on %s", (_name, storageOf) => {
  it.scopedLive(
    "every change of the key's environment, filtered like the list; resumes after a restart",
    () =>
      Effect.gen(function*() {
        const storage = yield* storageOf
        const dataDir = mkdtempSync(join(tmpdir(), "mg-account-events-"))
        const first = yield* serverScope
        const base = yield* startIn(first, storage, dataDir)
        const keys = yield* accountOn(base, adminToken)

        const all = yield* streamOf(base, keys.test)
        expect(all.status).toBe(200)
        expect(all.headers.get("content-type")).toBe("text/event-stream")
        const kites = yield* streamOf(base, keys.test, "?search=kite&status=succeeded")
        expect(kites.status).toBe(200)
        // both streams have started (their first keep-alive line) before the tasks are made
        for (const stream of [all, kites]) {
          expect(yield* Effect.promise(() => stream.readUntil((events) => events.some((e) => e.comment), 10_000)))
            .toBe(true)
        }

        const kite = yield* createTask(base, keys.test, "a red kite over the dunes [sim:delay=1]")
        const boat = yield* createTask(base, keys.test, "a paper boat [sim:delay=1]")
        const live = yield* createTask(base, keys.live, "a kite at night [sim:delay=1]")
        expect(yield* Effect.promise(() => all.readUntil(finished([kite, boat]), 60_000))).toBe(true)

        const states = tasksOf(all.events)
        // the test key's tasks only (not the live one), each from its accept to its end, in order
        expect(new Set(states.map((state) => state.task.id))).toEqual(new Set([kite, boat]))
        expect(states.map((state) => state.task.id)).not.toContain(live)
        for (const id of [kite, boat]) {
          const own = states.filter((state) => state.task.id === id)
          // states in between two reads are not sent: a task claimed at once is first seen queued
          expect(["pending", "queued", "running"]).toContain(own[0]!.task.status)
          const ranks = own.map((state) => statusRank.indexOf(state.task.status))
          expect(ranks).toEqual([...ranks].sort((a, b) => a - b))
          expect(own.at(-1)!.task.progress).toBe(100)
          // each event's id: the change's time, then the task
          for (const state of own) expect(state.id).toMatch(new RegExp(`^\\d{13}\\.${id}$`))
          // the final state is what GET /tasks/{id} answers (links aside: they are signed anew at each read)
          const read = (yield* call(base, "GET", `/api/v1/tasks/${id}`, keys.test)).body.data
          expect({ ...own.at(-1)!.task, result: undefined }).toEqual({ ...read, result: undefined })
        }
        // oldest change first
        const times = states.map((state) => Number(state.id.split(".")[0]))
        expect(times).toEqual([...times].sort((a, b) => a - b))
        // no state sent twice
        const sent = states.map((state) => JSON.stringify({ ...state.task, result: undefined }))
        expect(new Set(sent).size).toBe(sent.length)

        // filtered like the list: the succeeded tasks whose prompt has "kite", of the test key's environment
        expect(yield* Effect.promise(() => kites.readUntil(finished([kite]), 30_000))).toBe(true)
        expect(tasksOf(kites.events).map((state) => [state.task.id, state.task.status])).toEqual([
          [kite, "succeeded"]
        ])
        all.close()
        kites.close()

        // the server stops; another starts on the same database: a stream resumed after the kite's first event
        // gets every task's state since (the changes come from the database, not from the stopped server)
        yield* Scope.close(first, Exit.void)
        const second = yield* serverScope
        const again = yield* startIn(second, storage, dataDir)
        const firstEvent = states.find((state) => state.task.id === kite)!
        const resumed = yield* streamOf(again, keys.test, "", firstEvent.id)
        expect(resumed.status).toBe(200)
        expect(yield* Effect.promise(() => resumed.readUntil(finished([kite, boat]), 20_000))).toBe(true)
        expect(new Set(tasksOf(resumed.events).map((state) => state.task.id))).toEqual(new Set([kite, boat]))

        // without Last-Event-ID (or with one that is not an event's id): the changes from now on only
        const fresh = yield* streamOf(again, keys.test)
        const odd = yield* streamOf(again, keys.test, "", "not-an-event-id")
        const comments = (events: ReadonlyArray<Event>) => events.filter((e) => e.comment === "keep-alive").length
        for (const stream of [fresh, odd]) {
          expect(stream.status).toBe(200)
          expect(yield* Effect.promise(() => stream.readUntil((events) => comments(events) >= 5, 20_000))).toBe(true)
          expect(tasksOf(stream.events)).toEqual([])
        }
        // an id of a change in the future resumes from now
        const future = yield* streamOf(again, keys.test, "", `9999999999999.${kite}`)
        expect(yield* Effect.promise(() => future.readUntil((events) => comments(events) >= 2, 20_000))).toBe(true)
        const later = yield* createTask(again, keys.test, "a lantern on the quay [sim:delay=0]")
        for (const stream of [fresh, future]) {
          expect(yield* Effect.promise(() => stream.readUntil(finished([later]), 30_000))).toBe(true)
          expect(new Set(tasksOf(stream.events).map((state) => state.task.id))).toEqual(new Set([later]))
        }
        for (const stream of [resumed, fresh, odd, future]) stream.close()
        yield* Scope.close(second, Exit.void)
      }),
    120_000
  )

  it.scopedLive(
    "the rules of the task list, a bound per key shared with task streams, and the list's query checks",
    () =>
      Effect.gen(function*() {
        const storage = yield* storageOf
        const scope = yield* serverScope
        const base = yield* startIn(scope, storage, mkdtempSync(join(tmpdir(), "mg-account-events-")), {
          MEDIAGATE_MAX_EVENT_STREAMS: "2"
        })
        const keys = yield* accountOn(base, adminToken)
        const refusal = (key: string | undefined, query = "") =>
          Effect.map(streamOf(base, key, query), (answer) => [answer.status, answer.body.error.code])
        expect(yield* refusal(undefined)).toEqual([401, "AUTH_REQUIRED"])
        expect(yield* refusal(keys.noRead)).toEqual([403, "KEY_PERMISSION_DENIED"])
        expect(yield* refusal(keys.test, "?status=sleeping")).toEqual([400, "VALIDATION_ERROR"])
        expect(yield* refusal(keys.test, `?search=${"x".repeat(65)}`)).toEqual([400, "VALIDATION_ERROR"])

        // an account stream and a task stream take the key's two slots: a third stream is refused
        const id = yield* createTask(base, keys.test, "a slow barge [sim:delay=30]")
        const account = yield* streamOf(base, keys.test)
        const task = yield* Effect.promise(() => openStream(`${base}/api/v1/tasks/${id}/events`, keys.test))
        expect([account.status, task.status]).toEqual([200, 200])
        const third = yield* streamOf(base, keys.test)
        expect(third.status).toBe(429)
        expect(third.headers.get("retry-after")).toBe("5")
        expect(third.body.error.code).toBe("RATE_LIMITED")
        account.close()
        task.close()
        yield* Scope.close(scope, Exit.void)
      }),
    60_000
  )
})
