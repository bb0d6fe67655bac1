import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AccountStore } from "../src/AccountStore.js"
import * as Idempotency from "../src/Idempotency.js"
import * as KeyService from "../src/KeyService.js"
import * as MemoryAccounts from "../src/MemoryAccounts.js"
import { accountsSuite, Dump } from "./AccountsSuite.js"

const dump = Layer.effect(
  Dump,
  Effect.gen(function*() {
    const store = yield* AccountStore
    const idempotency = yield* Idempotency.IdempotencyStore
    return {
      dump: ({ accountId, idempotencyKey }) =>
        Effect.gen(function*() {
          const keys = yield* store.listKeys(accountId)
          // a record is the calling key's: scope `api-keys:<key id>`
          const stored = idempotencyKey === undefined
            ? undefined
            : yield* Effect.forEach(keys, (key) =>
              idempotency.find(
                accountId,
                `${KeyService.idempotencyScope}:${key.id}`,
                Idempotency.hashKey(idempotencyKey)
              ))
          return JSON.stringify({ keys, stored })
        })
    }
  })
)

accountsSuite("memory", () => Layer.provideMerge(dump, MemoryAccounts.layerStore))
