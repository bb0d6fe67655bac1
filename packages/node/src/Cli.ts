/**
 * The `mediagate` command: `mediagate` (or `mediagate serve`) runs the production server; `accounts`, `keys`,
 * `tasks`, `webhooks` and `system` are the admin API from a shell — create, list, show and credit accounts, create,
 * list and revoke keys, list and inspect tasks of every account, list webhook deliveries, show the system status —
 * on the same database and settings as the server (`DATABASE_URL` or `MEDIAGATE_DATA_DIR`, `MEDIAGATE_TABLE_PREFIX`).
 * Admin commands call the `AdminService` port through {@link AdminAccess}, so only they open the stores; list
 * filters are decoded by the API's own query Schemas (the same rules and messages as `/admin/v1`).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Admin, Errors, Services, Task, ValidationMessage, Webhook } from "@mediagate/contract"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Server from "./Server.js"

/** How admin commands reach the `AdminService`: built only when such a command runs. */
export class AdminAccess extends Context.Tag("@mediagate/node/Cli/AdminAccess")<AdminAccess, {
  readonly use: <A, E>(effect: Effect.Effect<A, E, Services.AdminService>) => Effect.Effect<A, E | Error>
}>() {}

/** {@link AdminAccess} through a layer of the `AdminService`, built for each command that needs it. */
export const layerAdmin = <E>(admin: Layer.Layer<Services.AdminService, E>): Layer.Layer<AdminAccess> => {
  const opened = Layer.mapError(admin, (cause) => cause instanceof Error ? cause : new Error(String(cause)))
  return Layer.succeed(AdminAccess, { use: (effect) => Effect.provide(effect, opened) })
}

const withAdmin = <A, E>(effect: Effect.Effect<A, E, Services.AdminService>) =>
  Effect.flatMap(AdminAccess, (access) => access.use(effect))

/** Prints a result as JSON; API errors print their code and message and fail the command. */
const report = <A, E>(effect: Effect.Effect<A, E, Services.AdminService>) =>
  withAdmin(effect).pipe(
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

/** The present options as the encoded query of a list (strings, as in a URL), decoded by the API's Schema. */
const query = <A, I>(schema: Schema.Schema<A, I>, options: Record<string, Option.Option<string | number>>) => {
  const encoded: Record<string, string> = {}
  for (const [name, value] of Object.entries(options)) if (Option.isSome(value)) encoded[name] = String(value.value)
  return Effect.mapError(
    Schema.decodeUnknown(schema)(encoded),
    (error) => new Errors.ValidationError({ message: ValidationMessage.formatParseError(error, "query") })
  )
}

const limit = optional(Options.integer("limit").pipe(Options.withDescription("items per page, 1 to 100 (default 20)")))
const cursor = optional(Options.text("cursor").pipe(Options.withDescription("pagination.cursor of the previous page")))

const accountList = Command.make(
  "list",
  {
    search: optional(Options.text("search").pipe(Options.withDescription("prefix of the id or name, any case"))),
    limit,
    cursor
  },
  (options) =>
    report(Effect.flatMap(
      query(Admin.AccountListQuery, options),
      (decoded) => Effect.flatMap(Services.AdminService, (admin) => admin.listAccounts(decoded))
    ))
).pipe(Command.withDescription("List accounts with their balance, newest first"))

const keyList = Command.make("list", { id: accountId }, ({ id }) =>
  report(Effect.flatMap(Services.AdminService, (admin) => admin.listKeys(id)))).pipe(
    Command.withDescription("List the unrevoked keys of an account (never the secrets)")
  )

const keyRevoke = Command.make(
  "revoke",
  { id: Args.text({ name: "key-id" }).pipe(Args.withDescription("key_...")) },
  ({ id }) => report(Effect.flatMap(Services.AdminService, (admin) => admin.revokeKey(id)))
).pipe(Command.withDescription("Revoke a key and every key derived from it"))

const accountFilter = optional(Options.text("account").pipe(Options.withDescription("only this account's (acct_...)")))

const taskList = Command.make(
  "list",
  {
    account: accountFilter,
    status: optional(Options.choice("status", Task.taskStatuses)),
    limit,
    cursor
  },
  ({ account, ...options }) =>
    report(Effect.flatMap(
      query(Admin.AdminTaskListQuery, { ...options, account_id: account }),
      (decoded) => Effect.flatMap(Services.AdminService, (admin) => admin.listTasks(decoded))
    ))
).pipe(Command.withDescription("List tasks of every account (or one), newest first"))

const taskInspect = Command.make(
  "inspect",
  { id: Args.text({ name: "task-id" }).pipe(Args.withDescription("task_...")) },
  ({ id }) => report(Effect.flatMap(Services.AdminService, (admin) => admin.getTask(id)))
).pipe(Command.withDescription("Show a task of any account: status, claims, lease, timings, error"))

const deliveryList = Command.make(
  "deliveries",
  {
    account: accountFilter,
    status: optional(Options.choice("status", Webhook.DeliveryStatus.literals)),
    limit,
    cursor
  },
  ({ account, ...options }) =>
    report(Effect.flatMap(
      query(Admin.AdminDeliveryListQuery, { ...options, account_id: account }),
      (decoded) => Effect.flatMap(Services.AdminService, (admin) => admin.listDeliveries(decoded))
    ))
).pipe(Command.withDescription("List webhook deliveries of every account (or one) with their attempts"))

const systemStatus = Command.make("status", {}, () =>
  report(Effect.flatMap(Services.AdminService, (admin) => admin.system))).pipe(
    Command.withDescription("Tasks by state, queue depth, webhook backlog and worker nodes")
  )

const serve = Command.make("serve", {}, () => Server.program).pipe(
  Command.withDescription("Run the server (HOST, PORT, DATABASE_URL or MEDIAGATE_DATA_DIR; see docs/configuration.md)")
)

/** The `mediagate` command. */
export const command = Command.make("mediagate", {}, () => Server.program).pipe(
  Command.withDescription("Mediagate, the media generation gateway: runs the server when no command is given"),
  Command.withSubcommands([
    serve,
    Command.make("accounts").pipe(Command.withSubcommands([accountCreate, accountShow, accountCredit, accountList])),
    Command.make("keys").pipe(Command.withSubcommands([keyCreate, keyList, keyRevoke])),
    Command.make("tasks").pipe(Command.withSubcommands([taskList, taskInspect])),
    Command.make("webhooks").pipe(Command.withSubcommands([deliveryList])),
    Command.make("system").pipe(Command.withSubcommands([systemStatus]))
  ])
)

/** Runs the command line on `argv` (as `process.argv`). */
export const run = Command.run(command, { name: "mediagate", version: "0.1.0" })
