/**
 * The example server as a user runs it: a child process on SQLite, then on PostgreSQL, driven over HTTP with the
 * typed client — bootstrap keys, a generation task to a downloaded file, a signed webhook to a local receiver,
 * key management, balance, and a restart (SIGTERM) that keeps all data.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Client, Examples, WebhookSignature } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { awaitBuild } from "./build.js"
import { bootstrapKeys, freePort, psql, runPostgres, startServer } from "./server.js"

if (!runPostgres) console.warn("PostgreSQL is not running at 127.0.0.1:5432: the PostgreSQL end-to-end run is skipped")

/** A local webhook receiver recording verified deliveries. */
const receiver = async () => {
  const received: Array<{ verified: boolean; body: unknown; headers: Record<string, unknown> }> = []
  let secret = ""
  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString()))
    req.on("end", () => {
      const verified = WebhookSignature.verifyAt({ secret, headers: req.headers, body, now: Date.now() })
      received.push({ verified: Either.isRight(verified), body: JSON.parse(body), headers: req.headers })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    setSecret: (s: string) => (secret = s),
    close: () => new Promise<void>((r) => server.close(() => r()))
  }
}

const scenario = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const hooks = yield* Effect.acquireRelease(Effect.promise(receiver), (r) => Effect.promise(r.close))
    const settings = {
      PORT: port,
      MEDIAGATE_WEBHOOK_ALLOW_PRIVATE: "true",
      MEDIAGATE_FILE_SECRET: "e2e-secret",
      ...env
    }
    const first = yield* Effect.acquireRelease(
      Effect.promise(() => startServer(settings)),
      (s) => Effect.promise(s.stop)
    )
    // the keys are printed just after the server starts listening
    for (let i = 0; i < 100 && bootstrapKeys(first.output()) === undefined; i++) yield* Effect.sleep(50)
    const keys = bootstrapKeys(first.output())
    expect(keys, first.output()).toBeDefined()
    const sandbox = yield* Client.make({ baseUrl: first.baseUrl, apiKey: keys!.test })
    expect((yield* Effect.promise(() => fetch(`${first.baseUrl}/healthz`))).status).toBe(200)
    expect((yield* Effect.promise(() => fetch(`${first.baseUrl}/readyz`))).status).toBe(200)

    const hook = yield* sandbox.webhooks.create({
      payload: { url: hooks.url, events: ["task.completed"] },
      headers: {}
    })
    hooks.setSecret(hook.secret)
    const ack = yield* sandbox.generation.vendor1TextToVideo({
      payload: {
        model: "vendor1-1-0-pro-fast",
        input: { prompt: "a paper boat", duration: 3, resolution: "480p" },
        metadata: { order: 42 }
      },
      headers: {}
    })
    let task = yield* sandbox.tasks.get({ path: { id: ack.id } })
    for (let i = 0; i < 400 && task.status !== "succeeded" && task.status !== "failed"; i++) {
      yield* Effect.sleep(50)
      task = yield* sandbox.tasks.get({ path: { id: ack.id } })
    }
    expect(task).toMatchObject({ status: "succeeded", cost: 0, metadata: { order: 42 } })
    const item = task.result![0]!
    expect(item).toMatchObject({ format: "mp4", duration: 3, width: 854, height: 480 })
    const file = yield* Effect.promise(() => fetch(item.url.replace(/^http:\/\/localhost:\d+/, first.baseUrl)))
    expect(file.status).toBe(200)
    expect(Number(file.headers.get("content-length"))).toBe(item.size_bytes)

    // the signed webhook arrives at the local receiver
    for (let i = 0; i < 100 && hooks.received.length === 0; i++) yield* Effect.sleep(50)
    expect(hooks.received.length).toBeGreaterThanOrEqual(1)
    expect(hooks.received[0]).toMatchObject({
      verified: true,
      body: { type: "task.completed", data: { task: { id: ack.id, status: "succeeded" } } }
    })

    // every generation endpoint accepts its minimal request (sandbox: free)
    const generation = sandbox.generation as unknown as Record<
      string,
      (r: { payload: unknown; headers: object }) => Effect.Effect<{ id: string; status: string }, unknown>
    >
    for (const { body, endpoint } of Examples.minimalRequests) {
      const accepted = yield* generation[Catalog.endpoints[endpoint].name]!({ payload: body, headers: {} })
      expect(accepted.status, endpoint).toBe("pending")
    }
    // list, cancel, retry
    const page = yield* sandbox.tasks.list({ urlParams: { limit: 5 } })
    expect(page.pagination.total).toBe(Examples.minimalRequests.length + 1)
    const hung = yield* sandbox.generation.vendor3TextToVideo({
      payload: { model: "vendor3-3", input: { prompt: "wait [sim:hang]" } },
      headers: {}
    })
    const failing = yield* sandbox.generation.vendor3TextToVideo({
      payload: { model: "vendor3-3", input: { prompt: "x [sim:fail]" } },
      headers: {}
    })
    const cancelled = yield* Effect.either(sandbox.tasks.cancel({ path: { id: hung.id } }))
    expect(Either.isRight(cancelled) || (cancelled.left as { code?: string }).code === "TASK_NOT_CANCELLABLE").toBe(
      true
    )
    let failed = yield* sandbox.tasks.get({ path: { id: failing.id } })
    for (let i = 0; i < 200 && failed.status !== "failed"; i++) {
      yield* Effect.sleep(50)
      failed = yield* sandbox.tasks.get({ path: { id: failing.id } })
    }
    expect((yield* sandbox.tasks.retry({ path: { id: failing.id }, headers: {} })).original_task_id).toBe(failing.id)
    // voices, webhook test, deliveries, replay
    expect((yield* sandbox.voices.list({ urlParams: { name: "al" } })).total).toBeGreaterThan(0)
    const tested = yield* sandbox.webhooks.test({ path: { id: hook.id } })
    expect(tested).toMatchObject({ delivered: true, statusCode: 204 })
    const deliveries = yield* sandbox.webhooks.deliveries({ path: { id: hook.id }, urlParams: {} })
    expect(deliveries.data.length).toBeGreaterThanOrEqual(1)
    const replayed = yield* sandbox.webhooks.replay({ path: { id: hook.id, deliveryId: deliveries.data[0]!.id } })
    expect(replayed.event_id).toBe(deliveries.data[0]!.event_id)

    // live keys are billed; keys can be created and listed
    const live = yield* Client.make({ baseUrl: first.baseUrl, apiKey: keys!.live })
    expect((yield* live.balance.get()).balance).toBe(0)
    const created = yield* live.apiKeys.create({ payload: { name: "ci" }, headers: {} })
    expect((yield* live.apiKeys.list()).map((k) => k.name).sort()).toContain("ci")
    const spare = yield* live.apiKeys.create({ payload: { name: "spare" }, headers: {} })
    expect(yield* live.apiKeys.delete({ path: { id: spare.id } })).toEqual({ id: spare.id, deleted: true })

    // a graceful restart keeps everything and does not bootstrap again
    expect(yield* Effect.promise(first.stop)).toBe(0)
    const second = yield* Effect.acquireRelease(
      Effect.promise(() => startServer({ ...settings, MEDIAGATE_ADMIN_TOKEN: "e2e-admin-token" })),
      (s) => Effect.promise(s.stop)
    )
    expect(bootstrapKeys(second.output())).toBeUndefined()
    const again = yield* Client.make({ baseUrl: second.baseUrl, apiKey: keys!.test })
    expect((yield* again.tasks.get({ path: { id: ack.id } })).status).toBe("succeeded")
    expect((yield* again.webhooks.list()).map((w) => w.id)).toEqual([hook.id])
    const ci = yield* Client.make({ baseUrl: second.baseUrl, apiKey: created.key })
    expect((yield* ci.balance.get()).billingMode).toBe("prepaid")
    // the admin API, enabled by the token: accounts, credits, keys
    const admin = yield* Client.make({ baseUrl: second.baseUrl, apiKey: "e2e-admin-token" })
    expect((yield* admin.admin.getAccount({ path: { id: keys!.account } })).id).toBe(keys!.account)
    expect((yield* admin.admin.credit({ path: { id: keys!.account }, payload: { amount: 5 } })).balance).toBe(5)
    expect(
      (yield* admin.admin.updateAccount({ path: { id: keys!.account }, payload: { monthlySpendLimit: 100 } }))
        .monthlySpendLimit
    ).toBe(100)
    const other = yield* admin.admin.createAccount({ payload: { name: "Other", balance: 1 } })
    const otherKey = yield* admin.admin.createKey({ path: { id: other.id }, payload: { name: "o" } })
    const o = yield* Client.make({ baseUrl: second.baseUrl, apiKey: otherKey.key })
    expect((yield* o.balance.get()).balance).toBe(1)
    // the live key now pays for a task
    const paid = yield* (yield* Client.make({ baseUrl: second.baseUrl, apiKey: keys!.live })).generation
      .vendor3TextToVideo({
        payload: { model: "vendor3-3_fast", input: { prompt: "paid" } },
        headers: {}
      })
    expect(paid.status).toBe("pending")
    expect((yield* admin.admin.getAccount({ path: { id: keys!.account } })).balance).toBe(3.8)
  }).pipe(Effect.provide(FetchHttpClient.layer), Effect.scoped)

awaitBuild()

describe("the example server end to end", () => {
  it.live("on SQLite", () => scenario({ MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-e2e-")) }), {
    timeout: 120_000
  })

  if (runPostgres) {
    it.live("on PostgreSQL", () =>
      Effect.gen(function*() {
        const name = `mg_e2e_${Date.now()}`
        yield* Effect.acquireRelease(
          Effect.sync(() => expect(psql(`CREATE DATABASE ${name}`)).toBe(0)),
          () => Effect.sync(() => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
        )
        yield* scenario({
          DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}`,
          MEDIAGATE_DATA_DIR: mkdtempSync(join(tmpdir(), "mg-e2e-pg-"))
        })
      }).pipe(Effect.scoped), { timeout: 120_000 })
  }
})
