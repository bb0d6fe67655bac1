/**
 * The billing port the engine charges and refunds through. Storage calls it **inside** the transaction that stores
 * the task (charge) or its terminal state (refund), so an SQL implementation on the same `SqlClient` commits or
 * rolls back with it. The billing package implements it with a ledger; `layerUnmetered` charges nothing.
 *
 * @since 0.1.0
 */
import type * as Statement from "@effect/sql/Statement"
import type { Errors } from "@mediagate/contract"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import type * as SqlProgram from "@mediagate/persistence/SqlProgram"
import type * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Layer from "effect/Layer"

/**
 * A charge for a task.
 *
 * @since 0.1.0
 * @category models
 */
export interface Charge {
  readonly accountId: string
  readonly keyId: string
  readonly taskId: string
  readonly amountMicros: number
  /** What the ledger entry says, e.g. `vendor1-2 text-to-video`. */
  readonly description: string
}

/**
 * A refund of (part of) a task's charges.
 *
 * @since 0.1.0
 * @category models
 */
export interface Refund {
  readonly accountId: string
  readonly keyId: string
  readonly taskId: string
  readonly amountMicros: number
  readonly reason: string
}

/**
 * What a charge's statements answer ({@link Billing}'s `chargeStatements`).
 *
 * @since 0.1.0
 * @category models
 */
export type ChargeOutcome = Either.Either<
  "charged" | "deferred",
  Errors.InsufficientBalance | Errors.SpendLimitExceeded | SqlRows.RowError
>

/**
 * Whether a charge's statements charged (anything else is rolled back).
 *
 * @since 0.1.0
 * @category guards
 */
export const isCharged = (outcome: ChargeOutcome): boolean => outcome._tag === "Right" && outcome.right === "charged"

/**
 * The billing port.
 *
 * @since 0.1.0
 * @category services
 */
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
   * PostgreSQL: charges made together, with what goes with the charges made, in **one statement** (one round trip;
   * atomic on its own, so the caller needs no transaction): the accounts' rows are locked first, once, in account
   * order; each charge then writes its debit, ledger entry and spends, or nothing when it is refused; and
   * `alongside(made)`, when given, is a data-modifying statement run in the same statement, where `made` is a
   * subquery answering the 0-based positions (in `charges`) of the charges made (the storage's batch of charged
   * accepts: the tasks of those, in one insert). Answered by position, as `chargeStatements` answers: `"charged"`,
   * a refusal (answered, not failed), or `"deferred"` — a charge after which an auto top-up may be due (it asks the
   * payment provider, which one statement cannot) is not made, nor is any charge after it: the caller makes each
   * deferred charge with `chargeInTransaction`. A failure (the statement's) wrote nothing.
   */
  readonly chargeBatch?: (
    charges: ReadonlyArray<Charge>,
    alongside?: (made: Statement.Fragment) => Statement.Fragment
  ) => Effect.Effect<
    ReadonlyArray<Either.Either<"charged" | "deferred", Errors.InsufficientBalance | Errors.SpendLimitExceeded>>,
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

/**
 * Billing that accepts every charge and records nothing (development without accounts).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerUnmetered: Layer.Layer<Billing> = Layer.succeed(Billing, {
  charge: () => Effect.void,
  refund: () => Effect.void,
  unmetered: true
})
