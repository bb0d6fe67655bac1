/**
 * The operator commands of `mediagate` (`accounts list`, `keys list|revoke`, `tasks list|inspect`,
 * `webhooks deliveries`, `system status`) on the real `AdminService` over memory storage: JSON output like the
 * other admin commands, API errors as `CODE: message`, and list options checked by the API's own query Schemas.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as MemoryAccounts from "@mediagate/accounts/MemoryAccounts"
import * as MemoryBilling from "@mediagate/billing/MemoryBilling"
import * as PaymentProvider from "@mediagate/billing/PaymentProvider"
import { Services } from "@mediagate/contract"
import * as ResultLinks from "@mediagate/engine/ResultLinks"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as WebhookStore from "@mediagate/webhooks/WebhookStore"
import type * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Cli from "../src/Cli.js"
import * as Stack from "../src/internal/stack.js"

/** The admin service over fresh memory stores (the stores are provided too, to seed them). */
const stack = Stack.Admin.pipe(
  Layer.provide(ResultLinks.layerAsStored),
  Layer.provideMerge(Layer.mergeAll(TaskStorage.layerMemory(), WebhookStore.layerMemory, MemoryAccounts.layer())),
  Layer.provideMerge(MemoryBilling.layer),
  Layer.provide(PaymentProvider.layerNone)
)

/** Runs the command line on an already built admin service; answers its exit and what it printed. */
const cli = (args: ReadonlyArray<string>, admin: Services.AdminService["Type"]) =>
  Effect.flatMap(Effect.console, (base) => {
    const out: Array<string> = []
    const capture: Console.Console = {
      ...base,
      log: (...parts: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(parts.join(" "))),
      error: (...parts: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(`ERR ${parts.join(" ")}`))
    }
    return Cli.run(["node", "mediagate", ...args]).pipe(
      Effect.withConsole(capture),
      // the channel commands are exercised in ChannelsCli.test.ts
      Effect.provide(Cli.layerAdmin(Layer.merge(
        Layer.succeed(Services.AdminService, admin),
        Layer.succeed(Services.AdminChannels, {
          list: Effect.dieMessage("not used here"),
          get: () => Effect.dieMessage("not used here"),
          usage: () => Effect.dieMessage("not used here"),
          create: () => Effect.dieMessage("not used here"),
          update: () => Effect.dieMessage("not used here"),
          remove: () => Effect.dieMessage("not used here")
        })
      ))),
      Effect.provide(NodeContext.layer),
      Effect.exit,
      Effect.map((exit) => ({ exit, out, json: () => JSON.parse(out.join("\n")) }))
    )
  })

describe("mediagate (operator commands)", () => {
  it.scoped("lists accounts, keys, tasks and deliveries, inspects a task, revokes a key, shows the system", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(stack)
      const admin = Context.get(context, Services.AdminService)
      const storage = Context.get(context, TaskStorage.TaskStorage)
      const webhooks = Context.get(context, WebhookStore.WebhookStore)
      const acme = yield* admin.createAccount({ name: "Acme", balance: 5 })
      const other = yield* admin.createAccount({ name: "Other" })
      const key = yield* admin.createKey(acme.id, { name: "ops", environment: "test" })

      const accounts = yield* cli(["accounts", "list", "--limit", "1"], admin)
      expect(accounts.exit._tag).toBe("Success")
      expect(accounts.json().data.map((a: any) => a.id)).toEqual([other.id])
      expect(accounts.json().pagination).toMatchObject({ hasMore: true, total: 2 })
      const next = yield* cli(
        ["accounts", "list", "--limit", "1", "--cursor", accounts.json().pagination.cursor],
        admin
      )
      expect(next.json().data.map((a: any) => [a.id, a.balance])).toEqual([[acme.id, 5]])
      expect((yield* cli(["accounts", "list", "--search", "acm"], admin)).json().data.map((a: any) => a.name)).toEqual([
        "Acme"
      ])

      const listed = yield* cli(["keys", "list", acme.id], admin)
      expect(listed.json().map((k: any) => [k.id, k.name])).toEqual([[key.id, "ops"]])
      expect(listed.out.join("\n")).not.toContain(key.key)

      const now = yield* storage.now
      const task = Fixtures.newTask({ accountId: acme.id, keyId: key.id, environment: "test", createdAt: now })
      yield* storage.accept({ task, charge: undefined, idempotency: undefined })
      const tasks = yield* cli(["tasks", "list", "--account", acme.id, "--status", "pending"], admin)
      expect(tasks.json().data.map((t: any) => [t.id, t.account_id])).toEqual([[task.id, acme.id]])
      expect((yield* cli(["tasks", "list", "--account", other.id], admin)).json().pagination.total).toBe(0)
      const inspected = yield* cli(["tasks", "inspect", task.id], admin)
      expect(inspected.json()).toMatchObject({
        id: task.id,
        account_id: acme.id,
        status: "pending",
        claims: 0,
        lease: null
      })

      yield* webhooks.addDelivery(
        {
          webhookId: null,
          accountId: acme.id,
          eventId: "evt_1",
          eventType: "task.completed",
          url: "https://hooks.example.com/",
          payload: "{}"
        },
        now,
        { enableWebhook: false }
      )
      const deliveries = yield* cli(["webhooks", "deliveries", "--account", acme.id, "--status", "pending"], admin)
      expect(deliveries.json().data.map((d: any) => [d.account_id, d.status, d.attempt_log])).toEqual([[
        acme.id,
        "pending",
        []
      ]])

      const system = yield* cli(["system", "status"], admin)
      expect(system.json()).toMatchObject({
        tasks: { queue_depth: 1, in_flight_upstream: 0 },
        webhooks: { pending: 1, due: 1, failed_last_hour: 0 },
        nodes: []
      })

      expect((yield* cli(["keys", "revoke", key.id], admin)).json()).toEqual({ id: key.id, deleted: true })
      expect((yield* cli(["keys", "list", acme.id], admin)).json()).toEqual([])
    }))

  it.scoped("reports API errors and bad list options with their code and fails", () =>
    Effect.gen(function*() {
      const admin = Context.get(yield* Layer.build(stack), Services.AdminService)
      const missing = yield* cli(["tasks", "inspect", "task_nope"], admin)
      expect(missing.exit._tag).toBe("Failure")
      expect(missing.out).toEqual(["ERR TASK_NOT_FOUND: task task_nope not found"])
      const revoke = yield* cli(["keys", "revoke", "key_nope"], admin)
      expect(revoke.out).toEqual(["ERR API_KEY_NOT_FOUND: API key key_nope not found"])
      const limit = yield* cli(["accounts", "list", "--limit", "500"], admin)
      expect(limit.exit._tag).toBe("Failure")
      expect(limit.out).toEqual(["ERR VALIDATION_ERROR: limit: must be an integer from 1 to 100"])
      const cursor = yield* cli(["tasks", "list", "--cursor", "bm9wZQ"], admin)
      expect(cursor.out).toEqual(["ERR VALIDATION_ERROR: cursor: is not a cursor of this list"])
    }))
})
