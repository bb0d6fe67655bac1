/**
 * Test and live data apart, through the production server on SQLite and PostgreSQL (issue 35): a key reads,
 * lists, retries and cancels only the tasks of its own environment (a task of the other one is answered exactly as
 * an unknown id), sees only its environment's webhooks, and a test key's ledger is empty; the balance is the
 * account's one balance; the admin API sees both environments and filters by one.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Database from "../src/Database.js"
import { type Answer, call, servedStacks } from "./served.js"

const { postgres, runPostgres, sqlite } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

const adminToken = "environments-test-admin-token"

const serve = servedStacks()

/** The stack on `database` (no workers: tasks stay pending), served on a free port: its base URL. */
const start = (database: Database.Database) =>
  Effect.map(
    serve({
      database,
      dataDir: mkdtempSync(join(tmpdir(), "mg-environments-")),
      adminToken,
      fileSecret: "environments-test-secret",
      workers: false
    }),
    (port) => `http://127.0.0.1:${port}`
  )

/** The error of an answer without its request id (which differs between requests). */
const errorOf = (answer: Answer) => ({ status: answer.status, code: answer.body.error?.code })

const databases: ReadonlyArray<readonly [string, () => Database.Database]> = [
  ["SQLite", () => ({ layer: sqlite() })],
  ...(runPostgres ? [["PostgreSQL", () => ({ layer: postgres() })] as const] : [])
]

describe.each(databases)("test and live data apart on %s", (_name, database) => {
  it.live(
    "a key sees only its environment's tasks, webhooks and ledger; the admin API sees both",
    () =>
      Effect.gen(function*() {
        const base = yield* start(database())
        const admin = (method: string, path: string, body?: unknown) => call(base, method, path, adminToken, body)
        const account = (yield* admin("POST", "/admin/v1/accounts", { name: "apart", balance: 100 })).body.data.id
        const keyOf = (environment: string) =>
          Effect.map(
            admin("POST", `/admin/v1/accounts/${account}/api-keys`, { name: environment, environment }),
            (answer) => answer.body.data.key as string
          )
        const keys = { live: yield* keyOf("live"), test: yield* keyOf("test") }
        const create = (key: string) =>
          Effect.map(
            call(base, "POST", "/api/v1/vendor3/text-to-video", key, {
              model: "vendor3-3",
              input: { prompt: "a cat" }
            }),
            (answer) => answer.body.data.id as string
          )
        const tasks = { live: yield* create(keys.live), test: yield* create(keys.test) }
        const unknown = "task_01JX00000000000000000000ZZ"

        for (const [mine, other] of [["live", "test"], ["test", "live"]] as const) {
          const key = keys[mine]
          // its own task: read; the other environment's: the answer of an unknown id
          expect((yield* call(base, "GET", `/api/v1/tasks/${tasks[mine]}`, key)).status).toBe(200)
          const missing = errorOf(yield* call(base, "GET", `/api/v1/tasks/${unknown}`, key))
          expect(missing).toEqual({ status: 404, code: "TASK_NOT_FOUND" })
          const read = yield* call(base, "GET", `/api/v1/tasks/${tasks[other]}`, key)
          expect(errorOf(read)).toEqual(missing)
          expect(read.body.error?.message).toBe(`task ${tasks[other]} not found`)
          expect(errorOf(yield* call(base, "POST", `/api/v1/tasks/${tasks[other]}/retry`, key))).toEqual(missing)
          expect(errorOf(yield* call(base, "POST", `/api/v1/tasks/${tasks[other]}/cancel`, key))).toEqual(missing)
          // lists: only its own, totals of its own
          const listed = yield* call(base, "GET", "/api/v1/tasks", key)
          expect(listed.body.data.map((task: { id: string }) => task.id)).toEqual([tasks[mine]])
          expect(listed.body.pagination?.total).toBe(1)
          expect((yield* call(base, "GET", `/api/v1/tasks?search=${tasks[other]}`, key)).body.data).toEqual([])
        }
        // the other environment's cancel changed nothing
        expect((yield* admin("GET", `/admin/v1/tasks/${tasks.live}`)).body.data).toMatchObject({
          status: "pending",
          environment: "live"
        })

        // ledger: live money only; a test key's is empty. The balance: the account's one balance, for both
        const ledger = (key: string) => call(base, "GET", "/api/v1/balance/ledger", key)
        expect((yield* ledger(keys.live)).body.data.map((entry: { kind: string }) => entry.kind)).toEqual([
          "charge",
          "top_up"
        ])
        expect(yield* ledger(keys.test)).toMatchObject({ status: 200, body: { data: [], pagination: { total: 0 } } })
        const balance = (yield* call(base, "GET", "/api/v1/balance", keys.live)).body.data
        expect(balance).toMatchObject({ balance: 96.8 })
        expect((yield* call(base, "GET", "/api/v1/balance", keys.test)).body.data).toEqual(balance)

        // webhooks: the creating key's environment; each key sees and deletes only its own
        const hook = { url: "https://hooks.example.com/apart", events: ["task.completed"] }
        const liveHook = (yield* call(base, "POST", "/api/v1/webhooks", keys.live, hook)).body.data
        const testHook = (yield* call(base, "POST", "/api/v1/webhooks", keys.test, hook)).body.data
        expect([liveHook.environment, testHook.environment]).toEqual(["live", "test"])
        const refused = yield* call(base, "POST", "/api/v1/webhooks", keys.test, { ...hook, environment: "live" })
        expect(errorOf(refused)).toEqual({ status: 400, code: "VALIDATION_ERROR" })
        const hooks = (key: string) =>
          Effect.map(call(base, "GET", "/api/v1/webhooks", key), (answer) =>
            answer.body.data.map((w: { id: string }) => w.id))
        expect(yield* hooks(keys.live)).toEqual([liveHook.id])
        expect(yield* hooks(keys.test)).toEqual([testHook.id])
        expect(errorOf(yield* call(base, "DELETE", `/api/v1/webhooks/${liveHook.id}`, keys.test)))
          .toEqual({ status: 404, code: "WEBHOOK_NOT_FOUND" })
        expect(yield* hooks(keys.live)).toEqual([liveHook.id])

        // the admin API: both environments, or one
        const adminList = (query: string) =>
          Effect.map(admin("GET", `/admin/v1/tasks?account_id=${account}${query}`), (answer) =>
            answer.body)
        const all = yield* adminList("")
        expect(all.pagination?.total).toBe(2)
        expect(all.data.map((task: { environment: string }) => task.environment)).toEqual(["test", "live"])
        for (const environment of ["live", "test"] as const) {
          const one = yield* adminList(`&environment=${environment}`)
          expect(one.data.map((task: { id: string }) => task.id)).toEqual([tasks[environment]])
          expect(one.pagination?.total).toBe(1)
        }
      }),
    60_000
  )
})
