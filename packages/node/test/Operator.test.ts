/**
 * The operator endpoints (`/admin/v1`, issue 14 item 5) through a real HTTP server, on the real `AdminService`
 * (accounts, billing, the engine's and the webhooks' operator views) over memory, SQLite and PostgreSQL storage:
 * the admin token, validation errors in the envelope, keyset paging over several pages, search, key listing and
 * cascading revocation, tasks and deliveries across accounts, and the system status.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { describe, expect, it } from "@effect/vitest"
import * as MemoryAccounts from "@mediagate/accounts/MemoryAccounts"
import * as SqlAccounts from "@mediagate/accounts/SqlAccounts"
import * as MemoryBilling from "@mediagate/billing/MemoryBilling"
import * as PaymentProvider from "@mediagate/billing/PaymentProvider"
import * as SqlBilling from "@mediagate/billing/SqlBilling"
import { RateLimit, Services } from "@mediagate/contract"
import * as ResultLinks from "@mediagate/engine/ResultLinks"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import { Health, Http, ServerConfig } from "@mediagate/server"
import * as Databases from "@mediagate/testing/databases"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as SqlWebhookStore from "@mediagate/webhooks/SqlWebhookStore"
import * as WebhookStore from "@mediagate/webhooks/WebhookStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as Stack from "../src/internal/stack.js"

const { postgres, runPostgres, sqlite } = Databases
const adminToken = "operator-test-admin-token"

const unused = (name: string) => () => Effect.dieMessage(`${name} is not used by these tests`)

/** The ports of the HTTP layer these tests do not call. */
const Unused = Layer.mergeAll(
  Layer.succeed(Services.TaskService, {
    create: unused("TaskService"),
    estimate: unused("TaskService"),
    get: unused("TaskService"),
    watch: unused("TaskService"),
    changes: () => Stream.dieMessage("TaskService is not used by these tests"),
    list: unused("TaskService"),
    retry: unused("TaskService"),
    cancel: unused("TaskService"),
    inFlight: unused("TaskService"),
    providerOf: unused("TaskService")
  }),
  Layer.succeed(Services.WebhookService, {
    create: unused("WebhookService"),
    list: unused("WebhookService"),
    remove: unused("WebhookService"),
    enable: unused("WebhookService"),
    test: unused("WebhookService"),
    deliveries: unused("WebhookService"),
    replay: unused("WebhookService")
  }),
  Layer.succeed(Services.VoiceService, { list: unused("VoiceService") }),
  Layer.succeed(Services.FileService, { open: unused("FileService") }),
  Layer.succeed(Services.AdminChannels, {
    list: unused("AdminChannels")(),
    get: unused("AdminChannels"),
    usage: unused("AdminChannels"),
    create: unused("AdminChannels"),
    update: unused("AdminChannels"),
    remove: unused("AdminChannels")
  }),
  Health.layerAlwaysReady,
  ServerConfig.layer({ adminToken: Option.some(Redacted.make(adminToken)) })
)

type Stores = Layer.Layer<
  | TaskStorage.TaskStorage
  | TaskStorage.Ports
  | WebhookStore.WebhookStore
  | Layer.Layer.Success<ReturnType<typeof MemoryAccounts.layer>>
  | Layer.Layer.Success<typeof MemoryBilling.layer>,
  unknown
>

const backends: ReadonlyArray<readonly [string, () => Stores]> = [
  ["memory", () =>
    Layer.mergeAll(TaskStorage.layerMemory(), WebhookStore.layerMemory, MemoryAccounts.layer()).pipe(
      Layer.provideMerge(MemoryBilling.layer),
      Layer.provide(PaymentProvider.layerNone)
    )],
  ...([["sqlite", sqlite], ...(runPostgres ? [["postgres", postgres] as const] : [])] as const).map((
    [name, database]
  ) =>
    [name, () =>
      Layer.mergeAll(SqlTaskStorage.layer(), SqlWebhookStore.layer(), SqlAccounts.layer()).pipe(
        Layer.provideMerge(SqlBilling.layer()),
        Layer.provide(PaymentProvider.layerNone),
        Layer.provideMerge(database())
      )] as const
  )
]

/** The HTTP layer on a random port over the real admin service and `stores`, with a client aimed at it. */
const serverOn = (stores: () => Stores) =>
  Http.layer.pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(Stack.Admin.pipe(Layer.provide(ResultLinks.layerAsStored))),
    Layer.provideMerge(Unused),
    Layer.provideMerge(stores()),
    Layer.provide(RateLimit.layerMemory)
  )

/** A GET (or DELETE) with the admin token (or `token`), answering status and parsed body. */
const call = (path: string, options: { readonly method?: "GET" | "DELETE"; readonly token?: string | null } = {}) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(options.method ?? "GET")(path)
    const token = options.token === undefined ? adminToken : options.token
    if (token !== null) request = HttpClientRequest.bearerToken(request, token)
    const response = yield* client.execute(request)
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped)

/** Every page of a list, following `pagination.cursor`. */
const allPages = (path: string) =>
  Effect.gen(function*() {
    const pages: Array<any> = []
    let cursor: string | null = null
    do {
      const separator = path.includes("?") ? "&" : "?"
      const answer: { readonly status: number; readonly body: any } = yield* call(
        cursor === null ? path : `${path}${separator}cursor=${encodeURIComponent(cursor)}`
      )
      expect(answer.status).toBe(200)
      pages.push(answer.body)
      cursor = answer.body.pagination.cursor
      expect(cursor === null).toBe(!answer.body.pagination.hasMore)
    } while (cursor !== null && pages.length < 20)
    return pages
  })

/** Stores a pending task of an account (created at `createdAt`). */
const addTask = (accountId: string, keyId: string, createdAt: number, model = "vendor3-3") =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage.TaskStorage
    const task = Fixtures.newTask({ accountId, keyId, environment: "test", model, createdAt })
    yield* storage.accept({ task, charge: undefined, idempotency: undefined })
    return task.id
  })

/** Three accounts ("Alpha Ltd", "beta", "Gamma"), created in that order, each with a root key. */
const seedAccounts = Effect.gen(function*() {
  const admin = yield* Services.AdminService
  const accounts = []
  for (const [name, balance] of [["Alpha Ltd", 1], ["beta", 2], ["Gamma", 3]] as const) {
    const account = yield* admin.createAccount({ name, balance })
    const key = yield* admin.createKey(account.id, { name: "root", environment: "test" })
    accounts.push({ account, key })
  }
  return accounts
})

for (const [name, stores] of backends) {
  describe(`operator endpoints on ${name}`, () => {
    it.live("require the admin token and answer bad query values with VALIDATION_ERROR", () =>
      Effect.gen(function*() {
        for (
          const path of ["/admin/v1/system", "/admin/v1/accounts", "/admin/v1/tasks", "/admin/v1/webhooks/deliveries"]
        ) {
          const missing = yield* call(path, { token: null })
          expect(missing.status).toBe(401)
          expect(missing.body.success).toBe(false)
          expect((yield* call(path, { token: "wrong" })).status).toBe(401)
        }
        expect((yield* call("/admin/v1/api-keys/key_x", { method: "DELETE", token: "wrong" })).status).toBe(401)
        const bad: ReadonlyArray<readonly [string, string]> = [
          ["/admin/v1/accounts?limit=0", "limit"],
          ["/admin/v1/accounts?limit=101", "limit"],
          ["/admin/v1/accounts?limit=ten", "limit"],
          ["/admin/v1/accounts?cursor=bm9wZQ", "cursor"],
          ["/admin/v1/tasks?status=done", "status"],
          ["/admin/v1/tasks?provider=nobody", "provider"],
          ["/admin/v1/tasks?created_after=yesterday", "created_after"],
          ["/admin/v1/tasks?cursor=bm9wZQ", "cursor"],
          ["/admin/v1/webhooks/deliveries?status=lost", "status"],
          ["/admin/v1/webhooks/deliveries?limit=-1", "limit"]
        ]
        for (const [path, field] of bad) {
          const answer = yield* call(path)
          expect(answer.status, path).toBe(400)
          expect(answer.body.error.code, path).toBe("VALIDATION_ERROR")
          expect(answer.body.error.message, path).toContain(field)
        }
        expect((yield* call("/admin/v1/tasks/task_unknown")).body.error.code).toBe("TASK_NOT_FOUND")
        expect((yield* call("/admin/v1/accounts/acct_unknown/api-keys")).body.error.code).toBe("ACCOUNT_NOT_FOUND")
        const unknownKey = yield* call("/admin/v1/api-keys/key_unknown", { method: "DELETE" })
        expect([unknownKey.status, unknownKey.body.error.code]).toEqual([404, "API_KEY_NOT_FOUND"])
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("list accounts newest first with their balance, page by page, and search id or name prefixes", () =>
      Effect.gen(function*() {
        const [alpha, beta, gamma] = yield* seedAccounts
        const pages = yield* allPages("/admin/v1/accounts?limit=2")
        expect(pages.map((page) => page.data.length)).toEqual([2, 1])
        expect(pages.flatMap((page) => page.data.map((a: any) => [a.name, a.balance]))).toEqual([
          ["Gamma", 3],
          ["beta", 2],
          ["Alpha Ltd", 1]
        ])
        expect(pages.every((page) => page.pagination.total === 3)).toBe(true)
        const named = (yield* call("/admin/v1/accounts?search=ALP")).body
        expect(named.data.map((a: any) => a.id)).toEqual([alpha!.account.id])
        expect(named.pagination).toEqual({ cursor: null, hasMore: false, total: 1 })
        expect((yield* call("/admin/v1/accounts?search=b")).body.data.map((a: any) => a.name)).toEqual(["beta"])
        const byId = (yield* call(`/admin/v1/accounts?search=${gamma!.account.id.toLowerCase()}`)).body
        expect(byId.data.map((a: any) => a.id)).toEqual([gamma!.account.id])
        // LIKE wildcards are plain characters
        expect((yield* call("/admin/v1/accounts?search=%25")).body.pagination.total).toBe(0)
        expect((yield* call("/admin/v1/accounts?search=_")).body.pagination.total).toBe(0)
        expect(beta!.account.id < gamma!.account.id).toBe(true)
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("list an account's keys without secrets and revoke one with its descendants", () =>
      Effect.gen(function*() {
        const [first, second] = yield* seedAccounts
        const admin = yield* Services.AdminService
        const keys = yield* Services.KeyService
        const accountId = first!.account.id
        const extra = yield* admin.createKey(accountId, { name: "ops", environment: "test" })
        // a key derived from the root key through the account-side API
        const principal = yield* keys.authenticate({
          authorization: `Bearer ${first!.key.key}`,
          clientAddress: "127.0.0.1"
        })
        const child = yield* keys.create(principal, { name: "child" }, undefined)

        const listed = yield* call(`/admin/v1/accounts/${accountId}/api-keys`)
        expect(listed.status).toBe(200)
        expect(listed.body.data.map((k: any) => k.name)).toEqual(["root", "ops", "child"])
        expect(listed.body.data.every((k: any) => !("key" in k) && k.maskedKey.includes("…"))).toBe(true)
        expect(JSON.stringify(listed.body)).not.toContain(first!.key.key)

        const revoked = yield* call(`/admin/v1/api-keys/${first!.key.id}`, { method: "DELETE" })
        expect(revoked).toEqual({ status: 200, body: { success: true, data: { id: first!.key.id, deleted: true } } })
        // its descendant is revoked with it; the other root key and the other account's keys are not
        const childUse = yield* Effect.flip(
          keys.authenticate({ authorization: `Bearer ${child.key}`, clientAddress: "127.0.0.1" })
        )
        expect(childUse.code).toBe("KEY_REVOKED")
        expect((yield* call(`/admin/v1/accounts/${accountId}/api-keys`)).body.data.map((k: any) => k.id)).toEqual([
          extra.id
        ])
        expect((yield* call(`/admin/v1/accounts/${second!.account.id}/api-keys`)).body.data).toHaveLength(1)
        const again = yield* call(`/admin/v1/api-keys/${first!.key.id}`, { method: "DELETE" })
        expect(again.body.error.code).toBe("API_KEY_NOT_FOUND")
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("list tasks across accounts page by page with filters, and inspect one with its lease", () =>
      Effect.gen(function*() {
        const [a, b] = yield* seedAccounts
        const storage = yield* TaskStorage.TaskStorage
        const now = yield* storage.now
        const ofA = [
          yield* addTask(a!.account.id, a!.key.id, now - 5000),
          yield* addTask(a!.account.id, a!.key.id, now - 4000, "vendor3-3_fast"),
          yield* addTask(a!.account.id, a!.key.id, now - 3000)
        ]
        const ofB = [
          yield* addTask(b!.account.id, b!.key.id, now - 2000),
          yield* addTask(b!.account.id, b!.key.id, now - 1000)
        ]

        const pages = yield* allPages("/admin/v1/tasks?limit=2")
        expect(pages.map((page) => page.data.length)).toEqual([2, 2, 1])
        expect(pages.flatMap((page) => page.data.map((t: any) => t.id))).toEqual([...ofA, ...ofB].reverse())
        expect(pages.flatMap((page) => page.data.map((t: any) => t.account_id))).toEqual([
          b!.account.id,
          b!.account.id,
          a!.account.id,
          a!.account.id,
          a!.account.id
        ])
        expect(pages.every((page) => page.pagination.total === 5)).toBe(true)

        const ofAccount = yield* allPages(`/admin/v1/tasks?account_id=${a!.account.id}&limit=2`)
        expect(ofAccount.flatMap((page) => page.data.map((t: any) => t.id))).toEqual([...ofA].reverse())
        expect(ofAccount[0].pagination.total).toBe(3)
        const fast = (yield* call("/admin/v1/tasks?model=vendor3-3_fast")).body
        expect([fast.data.map((t: any) => t.id), fast.pagination.total]).toEqual([[ofA[1]], 1])
        expect((yield* call(`/admin/v1/tasks?search=${ofB[1]}`)).body.data.map((t: any) => t.id)).toEqual([ofB[1]])

        // a worker claims the oldest task: queued, with its lease, on the list filter and in the read
        const [claimed] = yield* storage.claim("host-1:42:01TESTOWNER", 1, 30_000)
        expect(claimed!.id).toBe(ofA[0])
        const queued = (yield* call("/admin/v1/tasks?status=queued")).body
        expect([queued.data.map((t: any) => t.id), queued.pagination.total]).toEqual([[ofA[0]], 1])
        expect((yield* call("/admin/v1/tasks?status=pending")).body.pagination.total).toBe(4)
        const read = yield* call(`/admin/v1/tasks/${ofA[0]}`)
        expect(read.status).toBe(200)
        expect(read.body.data).toMatchObject({
          id: ofA[0],
          account_id: a!.account.id,
          key_id: a!.key.id,
          environment: "test",
          status: "queued",
          claims: 1,
          polls: 0,
          upstream_job_id: null,
          lease: { owner: "host-1:42:01TESTOWNER" },
          charged: 0,
          refunded: 0
        })
        expect(Date.parse(read.body.data.lease.expires_at)).toBeGreaterThan(now)
        expect(read.body.data.started_at).not.toBeNull()
        expect((yield* call(`/admin/v1/tasks/${ofB[0]}`)).body.data).toMatchObject({
          status: "pending",
          lease: null,
          claims: 0
        })
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("list deliveries across accounts with their attempt logs, and report the system status", () =>
      Effect.gen(function*() {
        const [a, b] = yield* seedAccounts
        const webhooks = yield* WebhookStore.WebhookStore
        const storage = yield* TaskStorage.TaskStorage
        const now = yield* webhooks.now
        const delivery = (accountId: string, n: number) => ({
          webhookId: null,
          accountId,
          eventId: `evt_${n}`,
          eventType: "task.completed" as const,
          url: `https://hooks.example.com/${n}`,
          payload: "{}"
        })
        const first = yield* webhooks.addDelivery(delivery(a!.account.id, 1), now, { enableWebhook: false })
        const second = yield* webhooks.addDelivery(delivery(a!.account.id, 2), now, { enableWebhook: false })
        const third = yield* webhooks.addDelivery(delivery(b!.account.id, 3), now, { enableWebhook: false })
        // the first delivery fails for good after one logged attempt; the second waits for a retry in a minute
        const claimed = yield* webhooks.claimDue("dispatcher", 2, 30_000, now)
        expect(claimed.map((d) => d.id)).toEqual([first.id, second.id])
        const attempt = { statusCode: 500, error: "HTTP 500", durationMs: 12, responseExcerpt: "oops", at: now }
        yield* webhooks.settle(first.id, claimed[0]!.fence, attempt, { status: "failed" })
        yield* webhooks.settle(second.id, claimed[1]!.fence, { ...attempt, statusCode: 503 }, {
          status: "pending",
          nextAttemptAt: now + 60_000
        })

        const pages = yield* allPages("/admin/v1/webhooks/deliveries?limit=2")
        expect(pages.flatMap((page) => page.data.map((d: any) => d.id))).toEqual([third.id, second.id, first.id])
        expect(pages[0].pagination.total).toBe(3)
        const failed = (yield* call("/admin/v1/webhooks/deliveries?status=failed")).body
        expect(failed.pagination.total).toBe(1)
        expect(failed.data[0]).toMatchObject({
          id: first.id,
          account_id: a!.account.id,
          webhook_id: null,
          url: "https://hooks.example.com/1",
          status: "failed",
          attempts: 1,
          attempt_log: [{ attempt: 1, status_code: 500, error: "HTTP 500", duration_ms: 12, response_excerpt: "oops" }]
        })
        const ofB = (yield* call(`/admin/v1/webhooks/deliveries?account_id=${b!.account.id}`)).body
        expect([ofB.data.map((d: any) => [d.id, d.attempt_log]), ofB.pagination.total]).toEqual([[[third.id, []]], 1])

        // tasks: two pending, one claimed (queued); a node registered by its heartbeat
        const taskNow = yield* storage.now
        for (const offset of [3000, 2000, 1000]) yield* addTask(a!.account.id, a!.key.id, taskNow - offset)
        yield* storage.claim("node-1", 1, 30_000)
        yield* storage.beatNode({
          id: "node-1",
          host: "host-1",
          pid: 42,
          concurrency: 8,
          heartbeatMs: 10_000,
          leases: 1
        })
        const system = yield* call("/admin/v1/system")
        expect(system.status).toBe(200)
        expect(system.body.data.tasks).toEqual({
          by_status: { pending: 2, queued: 1, running: 0, succeeded: 0, failed: 0, cancelled: 0, expired: 0 },
          queue_depth: 2,
          in_flight_upstream: 1,
          due: 2
        })
        expect(system.body.data.webhooks).toEqual({ pending: 2, due: 1, failed_last_hour: 1 })
        expect(system.body.data.nodes).toEqual([expect.objectContaining({
          id: "node-1",
          host: "host-1",
          pid: 42,
          concurrency: 8,
          leases: 1,
          stale: false
        })])
        expect(Date.parse(system.body.data.checked_at)).toBeGreaterThanOrEqual(taskNow)
      }).pipe(Effect.provide(serverOn(stores))))
  })
}
