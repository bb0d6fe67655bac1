/**
 * The operator's command line (`npm run admin -- ...`): the admin API from a shell — create an account, credit it,
 * create a key, show an account. Commands call the `AdminService` port; `admin.ts` composes it on the database.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Errors, Services } from "@mediagate/contract"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** Prints a result as JSON; API errors print their code and message and fail the command. */
const report = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.flatMap((value) => Console.log(JSON.stringify(value, null, 2))),
    Effect.tapError((error) =>
      Errors.isApiError(error) ? Console.error(`${error.code}: ${error.message}`) : Effect.void
    )
  )

const usd = (name: string) => Options.float(name).pipe(Options.withDescription(`${name} in USD`))
const optional = <A>(options: Options.Options<A>) => Options.optional(options)
const some = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)

const accountCreate = Command.make(
  "create",
  {
    name: Options.text("name").pipe(Options.withDescription("account name")),
    balance: optional(usd("balance")),
    billingMode: optional(Options.choice("billing-mode", ["prepaid", "postpaid"])),
    monthlyLimit: optional(usd("monthly-limit"))
  },
  ({ balance, billingMode, monthlyLimit, name }) =>
    report(Effect.flatMap(Services.AdminService, (admin) =>
      admin.createAccount({
        name,
        ...(Option.isSome(balance) ? { balance: balance.value } : {}),
        ...(Option.isSome(billingMode) ? { billingMode: billingMode.value } : {}),
        ...(Option.isSome(monthlyLimit) ? { monthlySpendLimit: monthlyLimit.value } : {})
      })))
).pipe(Command.withDescription("Create an account"))

const accountId = Args.text({ name: "account-id" }).pipe(Args.withDescription("acct_..."))

const accountShow = Command.make("show", { id: accountId }, ({ id }) =>
  report(Effect.flatMap(Services.AdminService, (admin) => admin.getAccount(id)))).pipe(
    Command.withDescription("Show an account and its balance")
  )

const accountCredit = Command.make(
  "credit",
  { id: accountId, amount: usd("amount"), note: optional(Options.text("note")) },
  ({ amount, id, note }) =>
    report(Effect.flatMap(Services.AdminService, (admin) =>
      admin.credit(id, { amount, ...(Option.isSome(note) ? { note: note.value } : {}) })))
).pipe(Command.withDescription("Credit an account (a ledger entry)"))

const keyCreate = Command.make(
  "create",
  {
    id: accountId,
    name: Options.text("name"),
    environment: optional(Options.choice("environment", ["live", "test"])),
    spendLimit: optional(usd("spend-limit")),
    expiresAt: optional(Options.text("expires-at").pipe(Options.withDescription("ISO 8601")))
  },
  ({ environment, expiresAt, id, name, spendLimit }) =>
    report(Effect.flatMap(Services.AdminService, (admin) => {
      const expires = some(expiresAt)
      return admin.createKey(id, {
        name,
        ...(Option.isSome(environment) ? { environment: environment.value } : {}),
        ...(Option.isSome(spendLimit) ? { spendLimit: spendLimit.value } : {}),
        ...(expires === undefined ? {} : { expiresAt: new Date(expires) })
      })
    }))
).pipe(Command.withDescription("Create an API key for an account (the full key is shown once)"))

/** The `mediagate-admin` command. */
export const command = Command.make("mediagate-admin").pipe(
  Command.withSubcommands([
    Command.make("accounts").pipe(Command.withSubcommands([accountCreate, accountShow, accountCredit])),
    Command.make("keys").pipe(Command.withSubcommands([keyCreate]))
  ])
)

/** Runs the command line on `argv` (as `process.argv`). */
export const run = Command.run(command, { name: "mediagate-admin", version: "0.1.0" })
