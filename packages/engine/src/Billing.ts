/**
 * The billing port the engine charges and refunds through. Storage calls it **inside** the transaction that stores
 * the task (charge) or its terminal state (refund), so an SQL implementation on the same `SqlClient` commits or
 * rolls back with it. The billing package implements it with a ledger; `layerUnmetered` charges nothing.
 *
 * @since 0.1.0
 */
import type { Errors } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import type * as SqlProgram from "@mediagate/persistence/SqlProgram"
import type * as SqlRows from "@mediagate/persistence/SqlRows"
import type * as Either from "effect/Either"

/** A charge for a task. */
export interface Charge {
  readonly accountId: string
  readonly keyId: string
  readonly taskId: string
  readonly amountMicros: number
  /** What the ledger entry says, e.g. `vendor1-2 text-to-video`. */
  readonly description: string
}

/** A refund of (part of) a task's charges. */
export interface Refund {
  readonly accountId: string
  readonly keyId: string
  readonly taskId: string
  readonly amountMicros: number
  readonly reason: string
}

/** What a charge's statements answer ({@link Billing}'s `chargeStatements`). */
export type ChargeOutcome = Either.Either<
  "charged" | "deferred",
  Errors.InsufficientBalance | Errors.SpendLimitExceeded | SqlRows.RowError
>

/** Whether a charge's statements charged (anything else is rolled back). */
export const isCharged = (outcome: ChargeOutcome): boolean => outcome._tag === "Right" && outcome.right === "charged"

/** The billing port. */
export class Billing extends Context.Tag("@mediagate/engine/Billing")<Billing, {
  /**
   * Charges a task: checks the balance (prepaid), the key's spend limit and the account's monthly limit and
   * records the charge, as one atomic step within the caller's transaction.
   */
  readonly charge: (
    charge: Charge
  ) => Effect.Effect<void, Errors.InsufficientBalance | Errors.SpendLimitExceeded | PersistenceError>
  /**
   * `charge` for a caller that has a transaction open and rolls it back when the charge fails (the storage's
   * accept): the same checks and writes, without a transaction (a savepoint) of its own, which the charge may then
   * leave half-written on a refusal. Without it, such callers use `charge`.
   */
  readonly chargeInTransaction?: (
    charge: Charge
  ) => Effect.Effect<void, Errors.InsufficientBalance | Errors.SpendLimitExceeded | PersistenceError>
  /**
   * SQLite: `chargeInTransaction`'s statements as a program (`@mediagate/persistence/SqlProgram`), for a caller
   * that runs them synchronously in its own transaction (the storage's write connection) and rolls back (to a
   * savepoint) on anything but `"charged"`: a refusal is answered, not failed; `"deferred"` means the charge needs
   * what such a transaction cannot do (an auto top-up, which asks the payment provider) and must be made with
   * `chargeInTransaction` instead. `now` is the charge's time (the ledger entry's, and its month's).
   */
  readonly chargeStatements?: (charge: Charge, now: number) => SqlProgram.SqlProgram<ChargeOutcome>
  /**
   * PostgreSQL: charges made together in the caller's transaction, answered by position (a refusal is answered,
   * not failed). The accounts' rows are locked first, once, in account order; then each charge is one statement
   * that writes nothing when it refuses, so the caller needs no savepoint per charge and may write what goes with
   * the charges that succeeded afterwards (the storage's batch of charged accepts: the tasks, in one insert). An
   * auto top-up due after a charge is requested in the transaction, as `chargeInTransaction` does.
   */
  readonly chargeBatch?: (
    charges: ReadonlyArray<Charge>
  ) => Effect.Effect<
    ReadonlyArray<Either.Either<void, Errors.InsufficientBalance | Errors.SpendLimitExceeded>>,
    PersistenceError
  >
  /** Records a refund within the caller's transaction. */
  readonly refund: (refund: Refund) => Effect.Effect<void, PersistenceError>
  /**
   * `true` when charges and refunds always succeed and record nothing ({@link layerUnmetered}): storage may then
   * skip them, and the transaction they would need (an accept without an idempotency key is one statement).
   */
  readonly unmetered?: boolean
}>() {}

/** Billing that accepts every charge and records nothing (development without accounts). */
export const layerUnmetered: Layer.Layer<Billing> = Layer.succeed(Billing, {
  charge: () => Effect.void,
  refund: () => Effect.void,
  unmetered: true
})
