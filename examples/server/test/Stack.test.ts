/**
 * The composed stack on a fresh SQLite database: bootstrap keys, a sandbox task run to a served file, billing of
 * live keys, the admin API with a token, tenant isolation and the OpenAPI document.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpServer from "@effect/platform/HttpServer"
import { describe, expect, it } from "@effect/vitest"
import * as Bootstrap from "@mediagate/accounts/Bootstrap"
import { Client, Errors } from "@mediagate/contract"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/Database.js"
import * as Stack from "../src/Stack.js"

const adminToken = "stack-test-admin-token"

const start = Effect.gen(function*() {
  const dataDir = mkdtempSync(join(tmpdir(), "mg-stack-"))
  const config = ConfigProvider.fromMap(new Map([
    ["PORT", "0"],
    ["MEDIAGATE_DATA_DIR", dataDir],
    ["MEDIAGATE_SIM_TIME_SCALE", "0.01"],
    ["MEDIAGATE_FILE_SECRET", "stack-test-secret"]
  ]))
  const context = yield* Layer.build(
    Stack.Live.pipe(Layer.provide(Database.layerOf({ _tag: "Sqlite", file: join(dataDir, "mediagate.db") })))
  ).pipe(Effect.withConfigProvider(config))
  const address = Context.get(context, HttpServer.HttpServer).address
  const baseUrl = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
  const keys = Option.getOrThrow(yield* Bootstrap.bootstrap().pipe(Effect.provide(context)))
  return { baseUrl, context, keys }
})

describe("the composed stack", () => {
  it.live("runs a sandbox task to a served file, charges live keys, keeps accounts apart", () =>
    Effect.gen(function*() {
      const { baseUrl, keys } = yield* start
      const sandbox = yield* Client.make({ baseUrl, apiKey: keys.test.key })
      const live = yield* Client.make({ baseUrl, apiKey: keys.live.key })

      const ack = yield* sandbox.generation.vendor4TextToImage({
        payload: { model: "vendor4-4-0", input: { prompt: "a red kite", size: "1K" } },
        headers: {}
      })
      let task = yield* sandbox.tasks.get({ path: { id: ack.id } })
      for (let i = 0; i < 200 && task.status !== "succeeded" && task.status !== "failed"; i++) {
        yield* Effect.sleep(50)
        task = yield* sandbox.tasks.get({ path: { id: ack.id } })
      }
      expect(task).toMatchObject({ status: "succeeded", cost: 0 })
      const file = yield* Effect.promise(() => fetch(task.result![0]!.url.replace(/^http:\/\/localhost:\d+/, baseUrl)))
      expect(file.status).toBe(200)
      expect(file.headers.get("content-type")).toBe("image/png")
      expect((yield* Effect.promise(() => file.arrayBuffer())).byteLength).toBe(task.result![0]!.size_bytes)

      // live keys are charged: the bootstrap account has no balance
      const refused = yield* Effect.flip(live.generation.vendor4TextToImage({
        payload: { model: "vendor4-4-0", input: { prompt: "x" } },
        headers: {}
      }))
      expect(refused).toBeInstanceOf(Errors.InsufficientBalance)
      const balance = yield* live.balance.get()
      expect(balance).toMatchObject({ balance: 0, billingMode: "prepaid" })

      // a key of the same account created through the API, and one revoked
      const created = yield* live.apiKeys.create({ payload: { name: "ci", permissions: { "tasks:read": true } }, headers: {} })
      const readOnly = yield* Client.make({ baseUrl, apiKey: created.key })
      expect((yield* readOnly.tasks.list({ urlParams: {} })).pagination.total).toBe(1)
      const denied = yield* Effect.flip(readOnly.balance.get())
      expect(denied).toBeInstanceOf(Errors.KeyPermissionDenied)
      yield* live.apiKeys.delete({ path: { id: created.id } })
      expect(yield* Effect.flip(readOnly.tasks.list({ urlParams: {} }))).toBeInstanceOf(Errors.KeyRevoked)

      // without an admin token the admin API does not exist
      const admin = yield* Client.make({ baseUrl, apiKey: adminToken })
      expect(yield* Effect.flip(admin.admin.getAccount({ path: { id: keys.account.id } }))).toBeInstanceOf(Errors.NotFound)

      // the OpenAPI document is served
      const spec = yield* Effect.promise(() => fetch(`${baseUrl}/api/v1/openapi.json`).then((r) => r.json()))
      expect((spec as { openapi: string }).openapi).toBe("3.1.0")
    }).pipe(Effect.provide(FetchHttpClient.layer), Effect.scoped), { timeout: 60_000 })
})
