/**
 * Bounded money through the production server on SQLite and PostgreSQL (issue 35): a postpaid account stops at its
 * credit limit (`MEDIAGATE_DEFAULT_CREDIT_LIMIT`, or its own, set through the admin API) with `402
 * INSUFFICIENT_BALANCE` naming the limit, with the accepts charged as the task storage charges them; credits and
 * limits past 1e9 USD are `400 VALIDATION_ERROR`; the balance reads exactly at the bound.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Databases from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Database from "../src/Database.js"
import { call, servedStacks } from "./served.js"

const { postgres, runPostgres, sqlite } = Databases
if (!runPostgres) console.warn(`${Databases.pgNotRunning}: its tests are skipped`)

const adminToken = "credit-limit-test-admin-token"

const serve = servedStacks()

/** The stack on `database` with a default credit limit of 10 USD, served on a free port: its base URL. */
const start = (database: Database.Database) =>
  Effect.map(
    serve({
      database,
      dataDir: mkdtempSync(join(tmpdir(), "mg-credit-limit-")),
      adminToken,
      fileSecret: "credit-limit-test-secret",
      workers: false,
      settings: { MEDIAGATE_DEFAULT_CREDIT_LIMIT: "10" }
    }),
    (port) => `http://127.0.0.1:${port}`
  )

const databases: ReadonlyArray<readonly [string, () => Database.Database]> = [
  ["SQLite", () => ({ layer: sqlite() })],
  ...(runPostgres ? [["PostgreSQL", () => ({ layer: postgres() })] as const] : [])
]

describe.each(databases)("credit limit and the bound of balances on %s", (_name, database) => {
  it.live(
    "a postpaid account stops at its credit limit; credits and limits stay within 1e9 USD",
    () =>
      Effect.gen(function*() {
        const base = yield* start(database())
        const admin = (method: string, path: string, body?: unknown) => call(base, method, path, adminToken, body)
        const created = yield* admin("POST", "/admin/v1/accounts", { name: "postpaid", billingMode: "postpaid" })
        expect(created.status).toBe(201)
        expect(created.body.data).toMatchObject({ billingMode: "postpaid", balance: 0, creditLimit: 10 })
        const id = created.body.data!["id"] as string
        const keyCreated = yield* admin("POST", `/admin/v1/accounts/${id}/api-keys`, { name: "live" })
        const key = keyCreated.body.data!["key"] as string
        const create = () =>
          call(base, "POST", "/api/v1/vendor3/text-to-video", key, { model: "vendor3-3", input: { prompt: "a cat" } })

        // 3.20 USD a request: three fit in 10 USD of credit, the fourth would leave -12.80
        for (let i = 0; i < 3; i++) expect((yield* create()).status).toBe(201)
        const refused = yield* create()
        expect(refused).toMatchObject({
          status: 402,
          body: {
            success: false,
            error: {
              code: "INSUFFICIENT_BALANCE",
              message:
                "Insufficient balance: the charge is 3.2 USD, the balance is -9.6 USD and the account's credit " +
                "limit is 10 USD (the balance may not go below -10 USD)"
            }
          }
        })
        // the account's own limit: three more, then refused again
        const raised = yield* admin("PATCH", `/admin/v1/accounts/${id}`, { creditLimit: 20 })
        expect(raised.body.data).toMatchObject({ creditLimit: 20, balance: -9.6 })
        for (let i = 0; i < 3; i++) expect((yield* create()).status).toBe(201)
        expect((yield* create()).body.error?.message).toContain("credit limit is 20 USD")
        expect((yield* call(base, "GET", "/api/v1/balance", key)).body.data).toMatchObject({ balance: -19.2 })
        // null: back to the configured default
        expect((yield* admin("PATCH", `/admin/v1/accounts/${id}`, { creditLimit: null })).body.data)
          .toMatchObject({ creditLimit: 10 })

        // limits and credits beyond 1e9 USD
        const tooHigh = yield* admin("PATCH", `/admin/v1/accounts/${id}`, { creditLimit: 1_000_000_000.000001 })
        expect(tooHigh.status).toBe(400)
        expect(tooHigh.body.error?.code).toBe("VALIDATION_ERROR")
        expect((yield* admin("POST", `/admin/v1/accounts/${id}/credits`, { amount: 1_000_000_000 })).status).toBe(200)
        const atBound = yield* admin("POST", `/admin/v1/accounts/${id}/credits`, { amount: 19.2 })
        expect(atBound.body.data).toMatchObject({ balance: 1_000_000_000 })
        const past = yield* admin("POST", `/admin/v1/accounts/${id}/credits`, { amount: 0.000001 })
        expect(past).toMatchObject({
          status: 400,
          body: {
            success: false,
            error: {
              code: "VALIDATION_ERROR",
              message: "amount: a credit of 0.000001 USD would take the balance of 1000000000 USD above " +
                "1000000000 USD, the most an account may hold"
            }
          }
        })
        expect((yield* call(base, "GET", "/api/v1/balance", key)).body.data).toMatchObject({ balance: 1_000_000_000 })
        const opening = yield* admin("POST", "/admin/v1/accounts", { name: "rich", balance: 1_000_000_001 })
        expect([opening.status, opening.body.error?.code]).toEqual([400, "VALIDATION_ERROR"])
      }),
    60_000
  )
})
