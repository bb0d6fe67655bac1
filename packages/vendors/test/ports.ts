/**
 * The application ports a vendors test serves over HTTP but does not exercise: a key service knowing one live key
 * (for one account), and every other port dying if called.
 */
import { Errors, Services } from "@mediagate/contract"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Voices from "../src/Voices.js"

const unused = (name: string) => Effect.dieMessage(`${name} is not used by this test`)

/** The principal of a live key of `accountId`. */
export const principal = (accountId: string) => Fixtures.principal({ accountId, keyId: `key_${accountId}` })

/** The ports, with `key` authenticating as a live key of `accountId`. */
export const withKey = (key: string, accountId: string) =>
  Layer.mergeAll(
    Layer.succeed(Services.KeyService, {
      authenticate: ({ authorization }) =>
        authorization === undefined
          ? Effect.fail(new Errors.AuthRequired({ message: "API key required" }))
          : authorization === `Bearer ${key}`
          ? Effect.succeed(principal(accountId))
          : Effect.fail(new Errors.AuthInvalidToken({ message: "unknown API key" })),
      create: () => unused("KeyService.create"),
      list: () => unused("KeyService.list"),
      revoke: () => unused("KeyService.revoke")
    }),
    Layer.succeed(Services.BillingService, {
      balance: () => unused("BillingService.balance"),
      ledger: () => unused("BillingService.ledger")
    }),
    Layer.succeed(Services.WebhookService, {
      create: () => unused("webhooks"),
      list: () => unused("webhooks"),
      remove: () => unused("webhooks"),
      enable: () => unused("webhooks"),
      test: () => unused("webhooks"),
      deliveries: () => unused("webhooks"),
      replay: () => unused("webhooks")
    }),
    Layer.succeed(Services.AdminService, {
      createAccount: () => unused("admin"),
      getAccount: () => unused("admin"),
      updateAccount: () => unused("admin"),
      credit: () => unused("admin"),
      createKey: () => unused("admin"),
      listAccounts: () => unused("admin"),
      listKeys: () => unused("admin"),
      revokeKey: () => unused("admin"),
      listTasks: () => unused("admin"),
      getTask: () => unused("admin"),
      listDeliveries: () => unused("admin"),
      system: unused("admin")
    }),
    Layer.succeed(Services.AdminChannels, {
      list: unused("channels"),
      get: () => unused("channels"),
      create: () => unused("channels"),
      update: () => unused("channels"),
      usage: () => unused("channels"),
      remove: () => unused("channels")
    }),
    Voices.layer()
  )
