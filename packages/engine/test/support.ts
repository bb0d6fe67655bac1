/**
 * Test doubles for the engine: the instant the storage suites start at (under `TestClock`), a billing port that
 * records every charge and refund (and refuses one account), and the suites' new tasks.
 */
import { Errors } from "@mediagate/contract"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { Billing, type Charge, type Refund } from "../src/Billing.js"
import type { NewTask } from "../src/TaskRecord.js"
import { type Ports, portsOf, TaskStorage } from "../src/TaskStorage.js"

/** The instant the storage suites set the `TestClock` to before each test. */
export const start = Date.UTC(2026, 10, 21, 12, 0, 0)

/** Everything the billing double saw. */
export interface Ledger {
  readonly charges: Array<Charge>
  readonly refunds: Array<Refund>
}

/** Accounts the billing double refuses. */
export const poorAccount = "acct_poor"
export const limitedAccount = "acct_limited"
/** An account whose refunds fail (the ledger is down): the terminal transition must record nothing. */
export const unrefundableAccount = "acct_unrefundable"

/** A billing double recording charges and refunds. */
export const makeRecordingBilling = () => {
  const ledger: Ledger = { charges: [], refunds: [] }
  const layer = Layer.succeed(Billing, {
    charge: (charge) =>
      charge.accountId === poorAccount
        ? Effect.fail(new Errors.InsufficientBalance({ message: "balance too low" }))
        : charge.accountId === limitedAccount
        ? Effect.fail(new Errors.SpendLimitExceeded({ message: "spend limit reached" }))
        : Effect.sync(() => void ledger.charges.push(charge)),
    refund: (refund) =>
      refund.accountId === unrefundableAccount
        ? Effect.fail(new PersistenceError({ message: "ledger down" }))
        : Effect.sync(() => void ledger.refunds.push(refund))
  })
  return { ledger, layer }
}

/** A new task of the suites (the shared fixture's, charged 3.20 USD) created at `createdAt`. */
export const newTask = (overrides: Partial<NewTask> & { readonly createdAt: number }): NewTask =>
  Fixtures.newTask({ input: { prompt: "a cat", aspect_ratio: "16:9" }, chargedMicros: 3_200_000, ...overrides })

/** The charge of a new task. */
export const chargeOf = (task: NewTask): Charge => ({
  accountId: task.accountId,
  keyId: task.keyId,
  taskId: task.id,
  amountMicros: task.chargedMicros,
  description: `${task.model} ${task.operation}`
})

/**
 * Reads the outbox from `cursor` until it holds at least `count` entries (or `attempts` reads have passed): on
 * PostgreSQL a reader sees no entry while an older transaction of the database runs — other suites' writes on the
 * same database delay what a test reads next. A bounded loop of reads, no clock (tests may run on `TestClock`).
 */
export const readOutboxAtLeast = (
  storage: Pick<TaskStorage["Type"], "readOutbox">,
  count: number,
  cursor: string | undefined = undefined,
  limit = 100,
  attempts = 2_000
): ReturnType<TaskStorage["Type"]["readOutbox"]> =>
  Effect.flatMap(storage.readOutbox(cursor, limit), (read) =>
    read.entries.length >= count || attempts <= 1
      ? Effect.succeed(read)
      : Effect.zipRight(Effect.yieldNow(), readOutboxAtLeast(storage, count, cursor, limit, attempts - 1)))

/** The storage in context, changed by `change` (e.g. one operation replaced or counted). */
export const withStorage = (
  change: (storage: TaskStorage["Type"]) => TaskStorage["Type"]
): Layer.Layer<TaskStorage | Ports, never, TaskStorage> =>
  Layer.effectContext(Effect.map(TaskStorage, (storage) => {
    const changed = change(storage)
    return Context.add(portsOf(changed), TaskStorage, changed)
  }))

/** The storage in context with its `claim` replaced: `claim(original, owner, limit, leaseMs)`. */
export const withClaim = (
  claim: (
    original: TaskStorage["Type"]["claim"],
    ...args: Parameters<TaskStorage["Type"]["claim"]>
  ) => ReturnType<TaskStorage["Type"]["claim"]>
): Layer.Layer<TaskStorage | Ports, never, TaskStorage> =>
  withStorage((storage) => ({
    ...storage,
    claim: (owner, limit, leaseMs) => claim(storage.claim, owner, limit, leaseMs)
  }))

/** How a storage backend is built for one conformance test (its storage clock: Effect's `Clock`). */
export type Backend = (billing: Layer.Layer<Billing>) => Layer.Layer<TaskStorage | Ports, unknown>

/** The storage clock of the conformance suites (the `TestClock`). */
export const now = Clock.currentTimeMillis

/** An hour in ms. */
export const hour = 3_600_000

/**
 * Runs a conformance test on a fresh storage of `backend` with a recording billing (its ledger handed to `body`), the
 * `TestClock` set to {@link start}.
 */
export const runOn = (backend: Backend) =>
<A, E>(
  body: (ctx: { readonly ledger: Ledger }) => Effect.Effect<A, E, TaskStorage | Ports>
): Effect.Effect<A, unknown> =>
  Effect.suspend(() => {
    const billing = makeRecordingBilling()
    return Effect.zipRight(
      TestClock.setTime(start),
      body({ ledger: billing.ledger }).pipe(Effect.provide(backend(billing.layer)))
    )
  }).pipe(Effect.scoped)
