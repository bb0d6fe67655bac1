/**
 * The conformance suite of billing: every implementation (memory, SQLite, PostgreSQL) must pass it. A backend is
 * a function from a payment provider layer to the billing services (plus {@link Tx}, the way to run an effect in
 * one transaction of the backend).
 */
import { describe } from "@effect/vitest"
import { billingAccountsSuite } from "./BillingAccountsSuite.js"
import { billingBalanceSuite } from "./BillingBalanceSuite.js"
import { billingChargesSuite } from "./BillingChargesSuite.js"
import { billingConcurrencySuite } from "./BillingConcurrencySuite.js"
import { billingLimitsSuite } from "./BillingLimitsSuite.js"
import type { Backend } from "./BillingSuiteSupport.js"
import { billingTopUpSuite } from "./BillingTopUpSuite.js"

export { type Backend, type BillingTest, Tx } from "./BillingSuiteSupport.js"

/** Registers the suite for one backend: the cases of each concern, in this order. */
export const billingSuite = (name: string, backend: Backend) =>
  describe(`Billing conformance: ${name}`, () => {
    billingAccountsSuite(backend)
    billingChargesSuite(backend)
    billingBalanceSuite(backend)
    billingLimitsSuite(backend)
    billingTopUpSuite(backend)
    billingConcurrencySuite(backend)
  })
