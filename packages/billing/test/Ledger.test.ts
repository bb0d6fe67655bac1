import { assert, describe, expect, it } from "@effect/vitest"
import { Money } from "@mediagate/contract"
import { Billing } from "@mediagate/engine/Billing"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import { BillingAccounts, defaultSettings } from "../src/BillingAccounts.js"
import { defaultCreditLimitConfig, maxBalanceMicros, refundParts } from "../src/Ledger.js"
import * as MemoryBilling from "../src/MemoryBilling.js"
import * as PaymentProvider from "../src/PaymentProvider.js"

describe("refundParts", () => {
  it("refunds the newest month first, never beyond what is left in a month", () => {
    const open = [{ month: "2025-03", remaining: 700 }, { month: "2025-05", remaining: 200 }, {
      month: "2025-04",
      remaining: 0
    }]
    expect(refundParts(800, open)).toEqual([{ month: "2025-05", amountMicros: 200 }, {
      month: "2025-03",
      amountMicros: 600
    }])
  })

  it("stops at what is left to refund of the task", () => {
    expect(refundParts(1_000, [{ month: "2025-03", remaining: 300 }])).toEqual([{
      month: "2025-03",
      amountMicros: 300
    }])
    expect(refundParts(1_000, [{ month: "2025-03", remaining: -50 }])).toEqual([])
    expect(refundParts(0, [{ month: "2025-03", remaining: 300 }])).toEqual([])
  })
})

describe("the default credit limit", () => {
  const read = (settings: Record<string, string>) =>
    Effect.either(
      Effect.withConfigProvider(defaultCreditLimitConfig, ConfigProvider.fromMap(new Map(Object.entries(settings))))
    )

  it.effect("is MEDIAGATE_DEFAULT_CREDIT_LIMIT in USD (default 100), as micro-dollars", () =>
    Effect.gen(function*() {
      expect(yield* read({})).toEqual(Either.right(100_000_000))
      expect(yield* read({ MEDIAGATE_DEFAULT_CREDIT_LIMIT: "2.5" })).toEqual(Either.right(2_500_000))
      expect(yield* read({ MEDIAGATE_DEFAULT_CREDIT_LIMIT: "0" })).toEqual(Either.right(0))
      for (const bad of ["-1", "1000000000.5", "0.0000001", "lots"]) {
        assert.isTrue(Either.isLeft(yield* read({ MEDIAGATE_DEFAULT_CREDIT_LIMIT: bad })), bad)
      }
    }))

  it.effect("bounds postpaid accounts that set no limit of their own (memory billing)", () =>
    Effect.gen(function*() {
      const accounts = yield* BillingAccounts
      const billing = yield* Billing
      const opened = yield* accounts.open("acct_a", { ...defaultSettings, billingMode: "postpaid" }, 0)
      assert.strictEqual(opened.creditLimitMicros, 5_000_000)
      const charge = (taskId: string, amountMicros: number) =>
        billing.charge({ accountId: "acct_a", keyId: "key_a", taskId, amountMicros, description: taskId })
      yield* charge("task_1", 5_000_000)
      expect(yield* Effect.flip(charge("task_2", 1))).toMatchObject({ _tag: "InsufficientBalance" })
    }).pipe(Effect.provide(
      MemoryBilling.layerWith({ defaultCreditLimitMicros: 5_000_000 }).pipe(
        Layer.provide(PaymentProvider.layerNone)
      )
    )))
})

describe("money conversions", () => {
  it("are exact over the whole range: micro-dollars to USD and back, and the USD number prints the decimal", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.bigInt({ min: -BigInt(maxBalanceMicros), max: BigInt(maxBalanceMicros) }),
        (micros) => {
          const usd = Money.fromMicros(Number(micros))
          const abs = micros < 0n ? -micros : micros
          const fraction = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "")
          const decimal = `${micros < 0n ? "-" : ""}${abs / 1_000_000n}${fraction === "" ? "" : `.${fraction}`}`
          return Money.toMicros(usd) === Number(micros) && JSON.stringify(usd) === (decimal === "-0" ? "0" : decimal) &&
            Money.toMicros(Number(decimal)) === Number(micros)
        }
      ),
      { numRuns: 20_000 }
    )
  })
})
