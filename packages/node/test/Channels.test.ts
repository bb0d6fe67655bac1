/**
 * The operator's channels `/admin/v1/channels` (docs/channels.md) through a real HTTP server, on the real
 * `AdminChannels` (`ChannelAdmin`) over memory, SQLite and PostgreSQL storage (channels and tasks): the admin token,
 * 201/200 answers in the envelope, credentials never answered (only set and hinted), the environment's channels
 * first and read-only, validation errors (400), unknown channels (404), a channel with tasks in flight (409), the
 * health (breaker and tasks in flight), and credentials refused without `MEDIAGATE_CHANNEL_KEY`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { describe, expect, it } from "@effect/vitest"
import { RateLimit, Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import * as SqlTaskStorage from "@mediagate/engine/SqlTaskStorage"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import { Health, Http, ServerConfig } from "@mediagate/server"
import * as Databases from "@mediagate/testing/databases"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as ChannelAdmin from "@mediagate/vendors/ChannelAdmin"
import * as Channels from "@mediagate/vendors/Channels"
import * as ChannelSecrets from "@mediagate/vendors/ChannelSecrets"
import { type ChannelHealthView, ChannelRuntime, ChannelStore } from "@mediagate/vendors/ChannelStore"
import * as MemoryChannels from "@mediagate/vendors/MemoryChannels"
import * as SqlChannels from "@mediagate/vendors/SqlChannels"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"

const { postgres, runPostgres, sqlite } = Databases
const adminToken = "channels-test-admin-token"
const channelKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
const relayKey = "sk_live_upstream_secret_ABCD"
const envRelayKey = "sk_env_relay_secret_9876"

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
  Layer.succeed(Services.KeyService, {
    authenticate: unused("KeyService"),
    create: unused("KeyService"),
    list: unused("KeyService"),
    revoke: unused("KeyService")
  }),
  Layer.succeed(Services.BillingService, { balance: unused("BillingService"), ledger: unused("BillingService") }),
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
  Layer.succeed(Services.AdminService, {
    createAccount: unused("AdminService"),
    getAccount: unused("AdminService"),
    updateAccount: unused("AdminService"),
    credit: unused("AdminService"),
    createKey: unused("AdminService"),
    listAccounts: unused("AdminService"),
    listKeys: unused("AdminService"),
    revokeKey: unused("AdminService"),
    listTasks: unused("AdminService"),
    getTask: unused("AdminService"),
    listDeliveries: unused("AdminService"),
    system: unused("AdminService")()
  }),
  Health.layerAlwaysReady,
  ServerConfig.layer({ adminToken: Option.some(Redacted.make(adminToken)) })
)

/** The router's side as the tests set it: this node's breakers by channel, and how often it was refreshed. */
class RuntimeControl extends Context.Tag("test/RuntimeControl")<RuntimeControl, {
  readonly health: Map<string, ChannelHealthView>
  readonly refreshes: { count: number }
}>() {}

const closed: ChannelHealthView = { breaker: "closed", consecutiveFailures: 0, openedAt: null, lastError: null }

/** A `ChannelRuntime` with the environment's defaults (vendor1 relayed, the rest simulated). */
const Runtime = Layer.effectContext(Effect.sync(() => {
  const health = new Map<string, ChannelHealthView>()
  const refreshes = { count: 0 }
  const runtime = ChannelRuntime.of({
    defaults: Channels.defaultChannels(
      { vendor1: "relay" },
      { baseUrl: "https://env-relay.example.com", apiKey: Redacted.make(envRelayKey) }
    ),
    health: (id) => Effect.sync(() => health.get(id) ?? closed),
    refresh: Effect.sync(() => void refreshes.count++)
  })
  return Context.make(ChannelRuntime, runtime).pipe(Context.add(RuntimeControl, { health, refreshes }))
}))

type Stores = Layer.Layer<
  ChannelStore | TaskStorage.TaskStorage | TaskStorage.Ports,
  unknown,
  ChannelSecrets.ChannelSecrets | Billing.Billing
>

const backends: ReadonlyArray<readonly [string, () => Stores]> = [
  ["memory", () => Layer.merge(MemoryChannels.layer(), TaskStorage.layerMemory())],
  ...([["sqlite", sqlite], ...(runPostgres ? [["postgres", postgres] as const] : [])] as const).map((
    [name, database]
  ) => [name, () => Layer.merge(SqlChannels.layer(), SqlTaskStorage.layer()).pipe(Layer.provide(database()))] as const)
]

/** The HTTP layer on a random port over the real channels service, with a client aimed at it. */
const serverOn = (stores: () => Stores, key: string | null = channelKey) =>
  Http.layer.pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(ChannelAdmin.layer),
    Layer.provideMerge(Layer.mergeAll(Unused, Runtime)),
    Layer.provideMerge(stores()),
    Layer.provideMerge(Layer.merge(ChannelSecrets.layer({ current: key ?? undefined }), Billing.layerUnmetered)),
    Layer.provide(RateLimit.layerMemory)
  )

type Method = "GET" | "POST" | "PATCH" | "DELETE"

/** A request with the admin token (or `token`), answering status, parsed body and the raw text. */
const call = (method: Method, path: string, body?: unknown, token: string | null = adminToken) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path)
    if (token !== null) request = HttpClientRequest.bearerToken(request, token)
    if (body !== undefined) request = yield* HttpClientRequest.bodyJson(request, body)
    const response = yield* client.execute(request)
    const text = yield* response.text
    return { status: response.status, body: JSON.parse(text) as any, text }
  }).pipe(Effect.scoped)

const gateway = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  transport: "relay",
  settings: { base_url: `https://${name}.example.com` },
  credentials: { api_key: relayKey },
  families: ["vendor1", "vendor3"],
  ...extra
})

/** Accepts and claims a live vendor3 task and reserves it on `channelId` (a task in flight there). */
const taskOn = (channelId: string) =>
  Effect.gen(function*() {
    const storage = yield* TaskStorage.TaskStorage
    const now = yield* storage.now
    const task = Fixtures.newTask({ estimatedSeconds: 30, createdAt: now })
    const id = task.id
    yield* storage.accept({ task, charge: undefined, idempotency: undefined })
    const [claimed] = yield* storage.claim("node-1", 1, 600_000)
    expect(claimed?.id).toBe(id)
    expect(yield* storage.reserveChannel(id, claimed!.fence, channelId, 0)).toBe(true)
    return id
  })

for (const [name, stores] of backends) {
  describe(`channel endpoints on ${name}`, () => {
    it.live("require the admin token", () =>
      Effect.gen(function*() {
        const requests: ReadonlyArray<readonly [Method, string, unknown]> = [
          ["GET", "/admin/v1/channels", undefined],
          ["POST", "/admin/v1/channels", gateway("a")],
          ["GET", "/admin/v1/channels/ch_x", undefined],
          ["PATCH", "/admin/v1/channels/ch_x", { weight: 2 }],
          ["DELETE", "/admin/v1/channels/ch_x", undefined]
        ]
        for (const [method, path, body] of requests) {
          for (const token of [null, "wrong"]) {
            const answer = yield* call(method, path, body, token)
            expect(answer.status, `${method} ${path}`).toBe(401)
            expect(answer.body.success).toBe(false)
          }
        }
        expect((yield* call("GET", "/admin/v1/channels")).body.data.filter((c: any) => !c.id.startsWith("default:")))
          .toEqual([])
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("create, read, list, change and delete channels; credentials are never answered", () =>
      Effect.gen(function*() {
        const control = yield* RuntimeControl
        const created = yield* call(
          "POST",
          "/admin/v1/channels",
          gateway("alpha", { priority: 10, weight: 3, models: ["vendor1-2"] })
        )
        expect(created.status).toBe(201)
        expect(created.body.success).toBe(true)
        const alpha = created.body.data
        expect(alpha).toMatchObject({
          name: "alpha",
          transport: "relay",
          settings: { base_url: "https://alpha.example.com" },
          credentials_set: true,
          credentials_hint: "…ABCD",
          families: ["vendor1", "vendor3"],
          models: ["vendor1-2"],
          priority: 10,
          weight: 3,
          concurrency: 0,
          enabled: true,
          disabled_reason: null,
          health: { breaker: "closed", consecutive_failures: 0, opened_at: null, last_error: null, in_flight: 0 }
        })
        expect(alpha.id).toMatch(/^ch_/)
        expect(alpha).not.toHaveProperty("credentials")
        expect(created.text).not.toContain(relayKey)
        expect(control.refreshes.count).toBe(1)
        const beta = (yield* call("POST", "/admin/v1/channels", {
          name: "beta",
          transport: "simulated",
          families: ["vendor3"],
          enabled: false
        })).body.data
        expect([beta.credentials_set, beta.credentials_hint, beta.enabled, beta.disabled_reason]).toEqual([
          false,
          null,
          false,
          "disabled by an operator"
        ])

        const listed = yield* call("GET", "/admin/v1/channels")
        expect(listed.status).toBe(200)
        expect(listed.body.data.map((c: any) => c.id)).toEqual([
          "default:simulated",
          "default:relay",
          alpha.id,
          beta.id
        ])
        const envRelay = listed.body.data[1]
        expect(envRelay).toMatchObject({
          transport: "relay",
          families: ["vendor1"],
          credentials_set: true,
          credentials_hint: "…9876"
        })
        expect(listed.text).not.toContain(relayKey)
        expect(listed.text).not.toContain(envRelayKey)

        const read = yield* call("GET", `/admin/v1/channels/${alpha.id}`)
        expect(read.status).toBe(200)
        expect(read.body.data).toEqual(alpha)
        expect((yield* call("GET", "/admin/v1/channels/default:relay")).body.data.id).toBe("default:relay")

        // settings are merged field by field; enabled false and true set and clear the reason
        const changed = yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, {
          weight: 5,
          settings: { timeout_ms: 9000 }
        })
        expect(changed.status).toBe(200)
        expect(changed.body.data).toMatchObject({
          weight: 5,
          priority: 10,
          settings: { base_url: "https://alpha.example.com", timeout_ms: 9000 }
        })
        expect(changed.body.data.updated_at >= alpha.updated_at).toBe(true)
        const off = yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, { enabled: false })
        expect([off.body.data.enabled, off.body.data.disabled_reason]).toEqual([false, "disabled by an operator"])
        const on = yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, { enabled: true })
        expect([on.body.data.enabled, on.body.data.disabled_reason]).toEqual([true, null])
        const rekeyed = yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, {
          credentials: { api_key: "sk_live_second_key_7777" }
        })
        expect(rekeyed.body.data.credentials_hint).toBe("…7777")
        expect(rekeyed.text).not.toContain("sk_live_second_key_7777")
        const store = yield* ChannelStore
        const stored = Option.getOrThrow(yield* store.get(alpha.id))
        expect(Redacted.value(stored.credentials.apiKey!)).toBe("sk_live_second_key_7777")

        // the router's view: breaker of this node, tasks in flight on every node
        control.health.set(alpha.id, {
          breaker: "open",
          consecutiveFailures: 5,
          openedAt: Date.UTC(2026, 0, 2),
          lastError: "503"
        })
        const taskId = yield* taskOn(alpha.id)
        const unhealthy = (yield* call("GET", `/admin/v1/channels/${alpha.id}`)).body.data
        expect(unhealthy.health).toEqual({
          breaker: "open",
          consecutive_failures: 5,
          opened_at: "2026-01-02T00:00:00.000Z",
          last_error: "503",
          in_flight: 1
        })

        const busy = yield* call("DELETE", `/admin/v1/channels/${alpha.id}`)
        expect(busy.status).toBe(409)
        expect(busy.body.error.code).toBe("CHANNEL_IN_USE")
        expect(busy.body.error.message).toContain("1 task in flight")
        const storage = yield* TaskStorage.TaskStorage
        expect((yield* storage.cancel("acct_a", taskId))._tag).toBe("Cancelled")
        const deleted = yield* call("DELETE", `/admin/v1/channels/${alpha.id}`)
        expect(deleted).toMatchObject({ status: 200, body: { success: true, data: { id: alpha.id, deleted: true } } })
        expect((yield* call("GET", `/admin/v1/channels/${alpha.id}`)).status).toBe(404)
        expect((yield* call("GET", "/admin/v1/channels")).body.data.map((c: any) => c.id)).toEqual([
          "default:simulated",
          "default:relay",
          beta.id
        ])

        // the usage report, a static route beside /channels/:id: the cancelled live task on the deleted channel
        const usage = yield* call("GET", "/admin/v1/channels/usage")
        expect(usage.status, usage.text).toBe(200)
        expect(usage.body.data).toEqual([{
          channel_id: alpha.id,
          channel_name: null,
          transport: null,
          model: "vendor3-3",
          tasks: 1,
          succeeded: 0,
          failed: 0,
          charged: 0,
          upstream_cost: 0,
          upstream_seconds: 0,
          reported: 0,
          margin: 0
        }])
        expect((yield* call("GET", "/admin/v1/channels/usage?since=2999-01-01T00:00:00Z")).body.data).toEqual([])
        const badSince = yield* call("GET", "/admin/v1/channels/usage?since=yesterday")
        expect([badSince.status, badSince.body.error.code]).toEqual([400, "VALIDATION_ERROR"])
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("answer bad bodies with VALIDATION_ERROR, unknown channels with CHANNEL_NOT_FOUND, and keep the environment's channels", () =>
      Effect.gen(function*() {
        const bad: ReadonlyArray<readonly [unknown, string]> = [
          [{ ...gateway("a"), settings: {} }, "settings.base_url: required for a relay channel"],
          [
            gateway("a", { settings: { base_url: "ftp://a.example.com" } }),
            "settings.base_url: must be an absolute http or https URL"
          ],
          [
            gateway("a", { settings: { base_url: "/relative" } }),
            "settings.base_url: must be an absolute http or https URL"
          ],
          [
            gateway("a", { settings: { base_url: "https://user:pw@a.example.com" } }),
            "settings.base_url: must not hold a user or password"
          ],
          [{ ...gateway("a"), credentials: undefined }, "credentials.api_key: required for a relay channel"],
          [{
            name: "s",
            transport: "simulated",
            families: ["vendor3"],
            settings: { base_url: "https://x.example.com" }
          }, "settings.base_url: a simulated channel takes no base_url"],
          [
            { name: "s", transport: "simulated", families: ["vendor3"], credentials: { api_key: "k" } },
            "credentials: a simulated channel takes no credentials"
          ],
          [
            gateway("a", { families: ["vendor3"], models: ["vendor1-2", "vendor3-3"] }),
            "models: vendor1-2 is not a model of vendor3"
          ],
          [gateway("a", { families: [] }), "families"],
          [gateway("a", { weight: 0 }), "weight"],
          [gateway("a", { transport: "carrier-pigeon" }), "transport"],
          // the HTTP transports: a base URL (fal and replicate have defaults), a key where the upstream needs one
          [{ name: "f", transport: "fal", families: ["vendor4"] }, "credentials.api_key: required for a fal channel"],
          [
            { name: "r", transport: "replicate", families: ["vendor4"] },
            "credentials.api_key: required for a replicate channel"
          ],
          [
            { name: "c", transport: "comfyui", families: ["vendor4"] },
            "settings.base_url: required for a comfyui channel"
          ],
          [
            { name: "o", transport: "openai", families: ["vendor4"], settings: { base_url: "https://gw.example.com" } },
            "credentials.api_key: required for an openai channel"
          ],
          [
            {
              name: "f",
              transport: "fal",
              families: ["vendor4"],
              credentials: { api_key: "k" },
              settings: { mapping: { "vendor4-3-0-t2i": { target: "a/b", input: "{ \"x\": " } } }
            },
            "settings.mapping.vendor4-3-0-t2i.input: the input mapping of model vendor4-3-0-t2i does not compile"
          ],
          [
            {
              name: "f",
              transport: "fal",
              families: ["vendor4"],
              credentials: { api_key: "k" },
              settings: { mapping: { "vendor3-3": { target: "a/b" } } }
            },
            "settings.mapping.vendor3-3: the channel does not serve model vendor3-3"
          ],
          [
            {
              name: "f",
              transport: "fal",
              families: ["vendor4"],
              credentials: { api_key: "k" },
              settings: { workflows: { w: { graph: {} } } }
            },
            "settings.workflows: only a comfyui channel takes workflows"
          ],
          [
            {
              name: "c",
              transport: "comfyui",
              families: ["vendor4"],
              settings: { base_url: "http://gpu:8188", workflows: { w: { graph: { "1": { inputs: {} } } } } }
            },
            "settings.workflows.w: graph.1: must be an API-format node"
          ],
          [
            {
              name: "f",
              transport: "fal",
              families: ["vendor4"],
              credentials: { api_key: "k" },
              settings: { result_hosts: ["bad host!"] }
            },
            "settings.result_hosts: bad host! is not a host name"
          ],
          [gateway("a", { colour: "blue" }), "colour"]
        ]
        for (const [body, message] of bad) {
          const answer = yield* call("POST", "/admin/v1/channels", body)
          expect(answer.status, message).toBe(400)
          expect(answer.body.error.code, message).toBe("VALIDATION_ERROR")
          expect(answer.body.error.message, message).toContain(message)
        }
        const alpha = (yield* call("POST", "/admin/v1/channels", gateway("alpha"))).body.data
        const refusedUpdates: ReadonlyArray<readonly [unknown, string]> = [
          [{ credentials: null }, "credentials.api_key: required for a relay channel"],
          [{ settings: { base_url: "mailto:x@example.com" } }, "settings.base_url"],
          [{ families: ["vendor3"] }, "is not a model"],
          [{ families: ["vendor3"], models: ["vendor3-3"] }, ""]
        ]
        yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, { models: ["vendor1-2"] })
        for (const [body, message] of refusedUpdates.slice(0, 3)) {
          const answer = yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, body)
          expect([answer.status, answer.body.error?.code], message).toEqual([400, "VALIDATION_ERROR"])
          expect(answer.body.error.message).toContain(message)
        }
        // families and models changed together are fine
        expect((yield* call("PATCH", `/admin/v1/channels/${alpha.id}`, refusedUpdates[3]![0])).body.data).toMatchObject(
          {
            families: ["vendor3"],
            models: ["vendor3-3"]
          }
        )

        for (const [method, body] of [["GET", undefined], ["PATCH", { weight: 2 }], ["DELETE", undefined]] as const) {
          const answer = yield* call(method, "/admin/v1/channels/ch_01J00000000000000000000000", body)
          expect([answer.status, answer.body.error.code], method).toEqual([404, "CHANNEL_NOT_FOUND"])
        }
        const fixed = yield* call("PATCH", "/admin/v1/channels/default:relay", { weight: 2 })
        expect([fixed.status, fixed.body.error.code]).toEqual([400, "VALIDATION_ERROR"])
        expect(fixed.body.error.message).toContain("comes from the environment")
        const undeletable = yield* call("DELETE", "/admin/v1/channels/default:simulated")
        expect([undeletable.status, undeletable.body.error.code]).toEqual([409, "CHANNEL_IN_USE"])
        expect(undeletable.body.error.message).toContain("comes from the environment")
      }).pipe(Effect.provide(serverOn(stores))))

    it.live("refuse credentials without MEDIAGATE_CHANNEL_KEY and keep serving channels without them", () =>
      Effect.gen(function*() {
        const refused = yield* call("POST", "/admin/v1/channels", gateway("alpha"))
        expect([refused.status, refused.body.error.code]).toEqual([400, "VALIDATION_ERROR"])
        expect(refused.body.error.message).toBe(ChannelSecrets.noKeyMessage)
        const sim = yield* call("POST", "/admin/v1/channels", {
          name: "sim",
          transport: "simulated",
          families: ["vendor3"]
        })
        expect(sim.status).toBe(201)
        expect((yield* call("PATCH", `/admin/v1/channels/${sim.body.data.id}`, { priority: 4 })).body.data.priority)
          .toBe(4)
      }).pipe(Effect.provide(serverOn(stores, null))))
  })
}
