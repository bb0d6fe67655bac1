import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Errors, Services } from "@mediagate/contract"
import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Cli from "../src/Cli.js"

/** An admin port that records what it was asked. */
const recordingAdmin = () => {
  const calls: Array<[string, ...Array<unknown>]> = []
  const account = (id: string, name: string, balance: number) => ({
    id,
    name,
    balance,
    billingMode: "prepaid" as const,
    monthlySpendLimit: null,
    autoTopUpEnabled: false,
    autoTopUpThreshold: null,
    autoTopUpAmount: null,
    creditLimit: 100,
    currency: "USD" as const,
    monthToDateSpend: 0,
    createdAt: "2026-11-21T00:00:00.000Z"
  })
  const layer = Layer.succeed(Services.AdminService, {
    createAccount: (body) =>
      Effect.sync(() => (calls.push(["createAccount", body]), account("acct_1", body.name, body.balance ?? 0))),
    getAccount: (id) =>
      id === "acct_1"
        ? Effect.sync(() => (calls.push(["getAccount", id]), account(id, "Acme", 10)))
        : Effect.fail(new Errors.AccountNotFound({ message: `account ${id} not found` })),
    updateAccount: (id, body) => Effect.sync(() => (calls.push(["updateAccount", id, body]), account(id, "Acme", 10))),
    credit: (id, body) => Effect.sync(() => (calls.push(["credit", id, body]), account(id, "Acme", 10 + body.amount))),
    createKey: (id, body) =>
      Effect.sync(() => {
        calls.push(["createKey", id, body])
        return {
          id: "key_1",
          key: `mg_live_${"k".repeat(32)}`,
          name: body.name,
          environment: body.environment ?? "live",
          maskedKey: "mg_live_kkkk…kkkk",
          permissions: {},
          ipWhitelist: [],
          spendLimit: body.spendLimit ?? null,
          spent: 0,
          expiresAt: null,
          createdAt: "2026-11-21T00:00:00.000Z",
          lastUsedAt: null,
          rateLimit: { requestsPerMinute: null, maxInFlightTasks: null }
        }
      }),
    // the operator views are exercised against the real service in OperatorCli.test.ts
    listAccounts: () => Effect.dieMessage("not used here"),
    listKeys: () => Effect.dieMessage("not used here"),
    revokeKey: () => Effect.dieMessage("not used here"),
    listTasks: () => Effect.dieMessage("not used here"),
    getTask: () => Effect.dieMessage("not used here"),
    listDeliveries: () => Effect.dieMessage("not used here"),
    system: Effect.dieMessage("not used here")
  })
  return { calls, layer }
}

/** Runs the command line and answers what it printed. */
const cli = (args: ReadonlyArray<string>, admin: Layer.Layer<Services.AdminService>) =>
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
        admin,
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
      Effect.map((exit) => ({ exit, out }))
    )
  })

describe("mediagate (admin commands)", () => {
  it.effect("creates an account, credits it, creates a key and shows it", () =>
    Effect.gen(function*() {
      const admin = recordingAdmin()
      const created = yield* cli(
        ["accounts", "create", "--name", "Acme", "--balance", "10", "--billing-mode", "postpaid"]
          .concat(["--credit-limit", "40"]),
        admin.layer
      )
      expect(created.exit._tag).toBe("Success")
      expect(JSON.parse(created.out.join("\n"))).toMatchObject({ id: "acct_1", name: "Acme", balance: 10 })
      yield* cli(["accounts", "credit", "acct_1", "--amount", "2.5", "--note", "welcome"], admin.layer)
      const updated = yield* cli(
        ["accounts", "update", "acct_1", "--credit-limit", "250", "--monthly-limit", "500"],
        admin.layer
      )
      expect(updated.exit._tag).toBe("Success")
      const key = yield* cli([
        "keys",
        "create",
        "acct_1",
        "--name",
        "ops",
        "--environment",
        "test",
        "--spend-limit",
        "5"
      ], admin.layer)
      expect(JSON.parse(key.out.join("\n")).key).toMatch(/^mg_live_/)
      const shown = yield* cli(["accounts", "show", "acct_1"], admin.layer)
      expect(JSON.parse(shown.out.join("\n"))).toMatchObject({ id: "acct_1", balance: 10 })
      expect(admin.calls).toEqual([
        ["createAccount", { name: "Acme", balance: 10, billingMode: "postpaid", creditLimit: 40 }],
        ["credit", "acct_1", { amount: 2.5, note: "welcome" }],
        ["updateAccount", "acct_1", { monthlySpendLimit: 500, creditLimit: 250 }],
        ["createKey", "acct_1", { name: "ops", environment: "test", spendLimit: 5 }],
        ["getAccount", "acct_1"]
      ])
    }))

  it.effect("reports an API error with its code and fails", () =>
    Effect.gen(function*() {
      const { exit, out } = yield* cli(["accounts", "show", "acct_nope"], recordingAdmin().layer)
      expect(exit._tag).toBe("Failure")
      expect(out).toEqual(["ERR ACCOUNT_NOT_FOUND: account acct_nope not found"])
    }))
})
