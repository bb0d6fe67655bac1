/**
 * The `mediagate` command: `mediagate` (or `mediagate serve`) runs the production server; `accounts`, `keys`,
 * `tasks`, `webhooks`, `channels` and `system` are the admin API from a shell — create, list, show and credit
 * accounts, create, list and revoke keys, list and inspect tasks of every account, list webhook deliveries, manage
 * the upstream channels, show the system status — on the same database and settings as the server (`DATABASE_URL`
 * or `MEDIAGATE_DATA_DIR`, `MEDIAGATE_TABLE_PREFIX`, `MEDIAGATE_CHANNEL_KEY`). Admin commands call the
 * `AdminService` and `AdminChannels` ports through {@link AdminAccess}, so only they open the stores; list filters
 * and channel bodies are decoded by the API's own Schemas (the same rules and messages as `/admin/v1`).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Admin, Catalog, Channel, Errors, Services, Task, ValidationMessage, Webhook } from "@mediagate/contract"
import * as Transports from "@mediagate/vendors/transports/index"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Rec from "effect/Record"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import * as Server from "./Server.js"

/**
 * The operator ports the admin commands call: accounts, keys, tasks, deliveries, status; and the channels.
 *
 * @since 0.1.0
 * @category models
 */
export type OperatorPorts = Services.AdminService | Services.AdminChannels

/**
 * How admin commands reach the operator ports: built only when such a command runs.
 *
 * @since 0.1.0
 * @category services
 */
export class AdminAccess extends Context.Tag("@mediagate/node/Cli/AdminAccess")<AdminAccess, {
  readonly use: <A, E>(effect: Effect.Effect<A, E, OperatorPorts>) => Effect.Effect<A, E | Error>
}>() {}

/**
 * {@link AdminAccess} through a layer of the operator ports, built for each command that needs it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAdmin = <E>(admin: Layer.Layer<OperatorPorts, E>): Layer.Layer<AdminAccess> => {
  const opened = Layer.mapError(admin, (cause) => cause instanceof Error ? cause : new Error(String(cause)))
  return Layer.succeed(AdminAccess, { use: (effect) => Effect.provide(effect, opened) })
}

const withAdmin = <A, E>(effect: Effect.Effect<A, E, OperatorPorts>) =>
  Effect.flatMap(AdminAccess, (access) => access.use(effect))

/** Prints a result as JSON; API errors print their code and message and fail the command. */
const report = <A, E>(effect: Effect.Effect<A, E, OperatorPorts>) =>
  withAdmin(effect).pipe(
    Effect.flatMap((value) => Console.log(JSON.stringify(value, null, 2))),
    Effect.tapError((error) =>
      Errors.isApiError(error) ? Console.error(`${error.code}: ${error.message}`) : Effect.void
    )
  )

/** {@link report} of a call of the `AdminService`. */
const reportAdmin = <A, E>(call: (admin: Services.AdminService["Type"]) => Effect.Effect<A, E, OperatorPorts>) =>
  report(Effect.flatMap(Services.AdminService, call))

/** {@link report} of a call of the `AdminChannels`. */
const reportChannels = <A, E>(call: (channels: Services.AdminChannels["Type"]) => Effect.Effect<A, E, OperatorPorts>) =>
  report(Effect.flatMap(Services.AdminChannels, call))

const usd = (name: string) => Options.float(name).pipe(Options.withDescription(`${name} in USD`))
const optional = <A>(options: Options.Options<A>) => Options.optional(options)

/** The field `key` of a body when its option is given, else none. */
const given = <K extends string, A>(key: K, option: Option.Option<A>): Partial<Record<K, A>> =>
  Option.isSome(option) ? Rec.singleton(key, option.value) : {}

const creditLimit = Options.float("credit-limit").pipe(
  Options.withDescription("credit-limit in USD: how far a postpaid balance may go below zero")
)

const accountCreate = Command.make(
  "create",
  {
    name: Options.text("name").pipe(Options.withDescription("account name")),
    balance: optional(usd("balance")),
    billingMode: optional(Options.choice("billing-mode", ["prepaid", "postpaid"])),
    monthlyLimit: optional(usd("monthly-limit")),
    creditLimit: optional(creditLimit)
  },
  ({ balance, billingMode, creditLimit, monthlyLimit, name }) =>
    reportAdmin((admin) =>
      admin.createAccount({
        name,
        ...given("balance", balance),
        ...given("billingMode", billingMode),
        ...given("monthlySpendLimit", monthlyLimit),
        ...given("creditLimit", creditLimit)
      })
    )
).pipe(Command.withDescription("Create an account"))

const accountId = Args.text({ name: "account-id" }).pipe(Args.withDescription("acct_..."))

const accountShow = Command.make("show", { id: accountId }, ({ id }) => reportAdmin((admin) => admin.getAccount(id)))
  .pipe(
    Command.withDescription("Show an account and its balance")
  )

const accountUpdate = Command.make(
  "update",
  {
    id: accountId,
    name: optional(Options.text("name").pipe(Options.withDescription("account name"))),
    billingMode: optional(Options.choice("billing-mode", ["prepaid", "postpaid"])),
    monthlyLimit: optional(usd("monthly-limit")),
    creditLimit: optional(creditLimit)
  },
  ({ billingMode, creditLimit, id, monthlyLimit, name }) =>
    reportAdmin((admin) =>
      admin.updateAccount(id, {
        ...given("name", name),
        ...given("billingMode", billingMode),
        ...given("monthlySpendLimit", monthlyLimit),
        ...given("creditLimit", creditLimit)
      })
    )
).pipe(Command.withDescription("Change an account's name, billing mode or limits (only the given ones)"))

const accountCredit = Command.make(
  "credit",
  { id: accountId, amount: usd("amount"), note: optional(Options.text("note")) },
  ({ amount, id, note }) => reportAdmin((admin) => admin.credit(id, { amount, ...given("note", note) }))
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
    reportAdmin((admin) =>
      admin.createKey(id, {
        name,
        ...given("environment", environment),
        ...given("spendLimit", spendLimit),
        ...given("expiresAt", Option.map(expiresAt, (text) => new Date(text)))
      })
    )
).pipe(Command.withDescription("Create an API key for an account (the full key is shown once)"))

/** `input` decoded by the API's Schema: its rules, and its messages (paths under `root`) on a failure. */
const decode = <A, I>(schema: Schema.Schema<A, I>, input: unknown, root: "query" | "channel") =>
  Effect.mapError(
    Schema.decodeUnknown(schema)(input),
    (error) => new Errors.ValidationError({ message: ValidationMessage.formatParseError(error, root) })
  )

/** The present options as the encoded query of a list (strings, as in a URL), decoded by the API's Schema. */
const query = <A, I>(schema: Schema.Schema<A, I>, options: Record<string, Option.Option<string | number>>) => {
  const encoded: Record<string, string> = {}
  for (const [name, value] of Object.entries(options)) if (Option.isSome(value)) encoded[name] = String(value.value)
  return decode(schema, encoded, "query")
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
    reportAdmin((admin) =>
      Effect.flatMap(query(Admin.AccountListQuery, options), (decoded) => admin.listAccounts(decoded))
    )
).pipe(Command.withDescription("List accounts with their balance, newest first"))

const keyList = Command.make("list", { id: accountId }, ({ id }) => reportAdmin((admin) => admin.listKeys(id))).pipe(
  Command.withDescription("List the unrevoked keys of an account (never the secrets)")
)

const keyRevoke = Command.make(
  "revoke",
  { id: Args.text({ name: "key-id" }).pipe(Args.withDescription("key_...")) },
  ({ id }) => reportAdmin((admin) => admin.revokeKey(id))
).pipe(Command.withDescription("Revoke a key and every key derived from it"))

const accountFilter = optional(Options.text("account").pipe(Options.withDescription("only this account's (acct_...)")))

/** A list across accounts (or of one, `--account`), filtered by `--status`, paged by `--limit` and `--cursor`. */
const acrossAccounts = <A, I, B, E>(
  name: string,
  statuses: ReadonlyArray<string>,
  schema: Schema.Schema<A, I>,
  list: (admin: Services.AdminService["Type"], query: A) => Effect.Effect<B, E, OperatorPorts>
) =>
  Command.make(
    name,
    { account: accountFilter, status: optional(Options.choice("status", statuses)), limit, cursor },
    ({ account, ...options }) =>
      reportAdmin((admin) =>
        Effect.flatMap(query(schema, { ...options, account_id: account }), (decoded) => list(admin, decoded))
      )
  )

const taskList = acrossAccounts(
  "list",
  Task.taskStatuses,
  Admin.AdminTaskListQuery,
  (admin, decoded) => admin.listTasks(decoded)
).pipe(Command.withDescription("List tasks of every account (or one), newest first"))

const taskInspect = Command.make(
  "inspect",
  { id: Args.text({ name: "task-id" }).pipe(Args.withDescription("task_...")) },
  ({ id }) => reportAdmin((admin) => admin.getTask(id))
).pipe(Command.withDescription("Show a task of any account: status, claims, lease, timings, error"))

const deliveryList = acrossAccounts(
  "deliveries",
  Webhook.DeliveryStatus.literals,
  Admin.AdminDeliveryListQuery,
  (admin, decoded) => admin.listDeliveries(decoded)
).pipe(Command.withDescription("List webhook deliveries of every account (or one) with their attempts"))

const systemStatus = Command.make("status", {}, () => reportAdmin((admin) => admin.system)).pipe(
  Command.withDescription("Tasks by state, queue depth, webhook backlog and worker nodes")
)

// -----------------------------------------------------------------------------------------------------------------
// channels
// -----------------------------------------------------------------------------------------------------------------

const channelId = Args.text({ name: "channel-id" }).pipe(Args.withDescription("ch_... (or default:* to show)"))

/**
 * The environment variable `--api-key` may be read from (kept out of shell history).
 *
 * @since 0.1.0
 * @category constants
 */
export const apiKeyVariable = "MEDIAGATE_CHANNEL_API_KEY"

/** The transports of the registry that `take` says yes to, as `relay, comfyui, openai`. */
const transportsWhere = (take: (transport: (typeof Transports.registry)[number]) => boolean) =>
  Transports.registry.filter(take).map((transport) => transport.name).join(", ")

/** The transports whose base URL defaults to their public API, as `fal and replicate`. */
const defaultedBaseUrls = Transports.registry.filter((transport) => typeof transport.baseUrl === "object")
  .map((transport) => transport.name).join(" and ")

/** The options of `channels create` and `channels update`. */
const channelOptions = {
  name: optional(Options.text("name").pipe(Options.withDescription("name, for people"))),
  families: Options.choice("family", Catalog.taskFamilies).pipe(
    Options.withDescription("a family served (repeat for several)"),
    Options.repeated
  ),
  models: Options.text("model").pipe(
    Options.withDescription("a model served (repeat for several; none: every model of the families)"),
    Options.repeated
  ),
  priority: optional(
    Options.integer("priority").pipe(Options.withDescription("higher first, -1000 to 1000 (default 0)"))
  ),
  weight: optional(
    Options.integer("weight").pipe(Options.withDescription("share among equal priorities, 1 to 1000 (default 1)"))
  ),
  concurrency: optional(
    Options.integer("concurrency").pipe(
      Options.withDescription("most tasks in flight at once on every node (default 0: no limit)")
    )
  ),
  baseUrl: optional(
    Options.text("base-url").pipe(
      Options.withDescription(
        `the upstream's base URL (every transport but ${
          transportsWhere((transport) => transport.baseUrl === "none")
        }; ` +
          `${defaultedBaseUrls} default to their APIs)`
      )
    )
  ),
  timeoutMs: optional(
    Options.integer("timeout-ms").pipe(Options.withDescription("longest upstream call, ms (default 30000)"))
  ),
  apiKey: optional(
    Options.redacted("api-key").pipe(
      Options.withDescription(`the upstream's API key (kept out of shell history: set ${apiKeyVariable} instead)`)
    )
  ),
  settings: optional(
    Options.text("settings").pipe(Options.withDescription(
      "more settings as a JSON object (mapping, workflows, result_hosts, poll_interval_ms, ...; docs/channels.md), " +
        "merged under --base-url and --timeout-ms; @<file> reads it from a file"
    ))
  ),
  disabled: Options.boolean("disabled").pipe(Options.withDescription("disabled: takes no new tasks"))
}

/** What {@link channelOptions} parse to. */
interface ChannelOptions {
  readonly name: Option.Option<string>
  readonly families: ReadonlyArray<Catalog.TaskFamily>
  readonly models: ReadonlyArray<string>
  readonly priority: Option.Option<number>
  readonly weight: Option.Option<number>
  readonly concurrency: Option.Option<number>
  readonly baseUrl: Option.Option<string>
  readonly timeoutMs: Option.Option<number>
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly settings: Option.Option<string>
  readonly disabled: boolean
}

/** The `--settings` JSON (or `@file`) as an object; the decode of the body checks its fields. */
const settingsJson = (text: Option.Option<string>) =>
  Option.match(text, {
    onNone: () => Effect.succeed<Record<string, unknown>>({}),
    onSome: (given) =>
      Effect.try({
        try: () => {
          const json: unknown = JSON.parse(given.startsWith("@") ? readFileSync(given.slice(1), "utf8") : given)
          if (typeof json !== "object" || json === null || Array.isArray(json)) throw new Error("not a JSON object")
          return json as Record<string, unknown>
        },
        catch: (error) =>
          new Errors.ValidationError({
            message: `--settings: must be a JSON object or @<file> holding one (${
              error instanceof Error ? error.message : String(error)
            })`
          })
      })
  })

/** The fields of a body the options give (the wire names). */
const channelFields = (
  options: ChannelOptions,
  apiKey: Option.Option<Redacted.Redacted<string>>,
  more: Record<string, unknown>
) => {
  const settings = { ...more, ...given("base_url", options.baseUrl), ...given("timeout_ms", options.timeoutMs) }
  return {
    ...given("name", options.name),
    ...(Object.keys(settings).length > 0 ? { settings } : {}),
    ...given("credentials", Option.map(apiKey, (key) => ({ api_key: Redacted.value(key) }))),
    ...(options.families.length > 0 ? { families: options.families } : {}),
    ...(options.models.length > 0 ? { models: options.models } : {}),
    ...given("priority", options.priority),
    ...given("weight", options.weight),
    ...given("concurrency", options.concurrency),
    ...(options.disabled ? { enabled: false } : {})
  }
}

/** `MEDIAGATE_CHANNEL_API_KEY`, when set (and not blank). */
const apiKeyFromEnvironment = Config.option(Config.redacted(apiKeyVariable)).pipe(
  Effect.map(Option.filter((key) => Redacted.value(key).trim() !== "")),
  Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
)

const channelList = Command.make("list", {}, () => reportChannels((channels) => channels.list)).pipe(
  Command.withDescription(
    "List the upstream channels with their health: the environment's first (credentials never shown)"
  )
)

const channelShow = Command.make("show", { id: channelId }, ({ id }) => reportChannels((channels) => channels.get(id)))
  .pipe(
    Command.withDescription("Show a channel and its health")
  )

const channelCreate = Command.make(
  "create",
  {
    ...channelOptions,
    name: Options.text("name").pipe(Options.withDescription("name, for people")),
    transport: Options.choice("transport", Channel.channelTransports).pipe(
      Options.withDescription(
        `${Transports.registry.map((transport) => `${transport.name} (${transport.summary})`).join("; ")} ` +
          "(docs/channels.md)"
      )
    )
  },
  ({ name, transport, ...options }) =>
    report(Effect.gen(function*() {
      // the upstream's key: --api-key, else the environment (unless the transport takes none: the simulator)
      const takesNone = Transports.registry.some((known) => known.name === transport && known.apiKey === "none")
      const apiKey = Option.isSome(options.apiKey) || takesNone
        ? options.apiKey
        : yield* apiKeyFromEnvironment
      const body = yield* decode(Channel.ChannelCreate, {
        ...channelFields({ ...options, name: Option.none() }, apiKey, yield* settingsJson(options.settings)),
        name,
        transport,
        families: options.families
      }, "channel")
      const channels = yield* Services.AdminChannels
      return yield* channels.create(body)
    }))
).pipe(Command.withDescription(
  `Create an upstream channel (docs/channels.md). ` +
    `${transportsWhere((transport) => transport.baseUrl === "required")}: --base-url; ` +
    `${transportsWhere((transport) => transport.apiKey === "required")}: an ` +
    `API key, from --api-key or, better, from ${apiKeyVariable} (not in shell history); stored encrypted under ` +
    `MEDIAGATE_CHANNEL_KEY, never shown again. Mappings and workflows: --settings '{"mapping": {...}}' or @file.json`
))

const channelUpdate = Command.make(
  "update",
  {
    id: channelId,
    ...channelOptions,
    allModels: Options.boolean("all-models").pipe(Options.withDescription("serve every model of the families again")),
    apiKeyFromEnv: Options.boolean("api-key-from-env").pipe(
      Options.withDescription(`replace the API key by ${apiKeyVariable} (not in shell history)`)
    ),
    removeCredentials: Options.boolean("remove-credentials").pipe(
      Options.withDescription("remove the stored credentials")
    )
  },
  ({ allModels, apiKeyFromEnv, id, removeCredentials, ...options }) =>
    report(Effect.gen(function*() {
      if (allModels && options.models.length > 0) {
        return yield* new Errors.ValidationError({ message: "--all-models and --model: give one of them" })
      }
      if (removeCredentials && (apiKeyFromEnv || Option.isSome(options.apiKey))) {
        return yield* new Errors.ValidationError({ message: "--remove-credentials and an API key: give one of them" })
      }
      const fromEnvironment = apiKeyFromEnv && Option.isNone(options.apiKey)
        ? yield* apiKeyFromEnvironment
        : Option.none()
      if (apiKeyFromEnv && Option.isNone(options.apiKey) && Option.isNone(fromEnvironment)) {
        return yield* new Errors.ValidationError({ message: `--api-key-from-env: ${apiKeyVariable} is not set` })
      }
      const body = yield* decode(Channel.ChannelUpdate, {
        ...channelFields(
          options,
          Option.orElse(options.apiKey, () => fromEnvironment),
          yield* settingsJson(options.settings)
        ),
        ...(allModels ? { models: [] } : {}),
        ...(removeCredentials ? { credentials: null } : {})
      }, "channel")
      const channels = yield* Services.AdminChannels
      return yield* channels.update(id, body)
    }))
).pipe(Command.withDescription(
  "Change a channel: the options given replace their values (--family and --model replace the lists); " +
    `a new API key from --api-key or, with --api-key-from-env, from ${apiKeyVariable}`
))

const channelEnable = Command.make(
  "enable",
  { id: channelId },
  ({ id }) => reportChannels((channels) => channels.update(id, { enabled: true }))
).pipe(
  Command.withDescription("Enable a channel (clears its disabled_reason)")
)

const channelDisable = Command.make(
  "disable",
  { id: channelId },
  ({ id }) => reportChannels((channels) => channels.update(id, { enabled: false }))
).pipe(
  Command.withDescription("Disable a channel: it takes no new tasks; its tasks in flight are still followed")
)

const channelDelete = Command.make(
  "delete",
  { id: channelId },
  ({ id }) => reportChannels((channels) => channels.remove(id))
).pipe(
  Command.withDescription("Delete a channel with no task in flight (disable it first and wait)")
)

const serve = Command.make("serve", {}, () => Server.program).pipe(
  Command.withDescription("Run the server (HOST, PORT, DATABASE_URL or MEDIAGATE_DATA_DIR; see docs/configuration.md)")
)

/**
 * The `mediagate` command.
 *
 * @since 0.1.0
 * @category running
 */
export const command = Command.make("mediagate", {}, () => Server.program).pipe(
  Command.withDescription("Mediagate, the media generation gateway: runs the server when no command is given"),
  Command.withSubcommands([
    serve,
    Command.make("accounts").pipe(Command.withSubcommands([
      accountCreate,
      accountShow,
      accountUpdate,
      accountCredit,
      accountList
    ])),
    Command.make("keys").pipe(Command.withSubcommands([keyCreate, keyList, keyRevoke])),
    Command.make("tasks").pipe(Command.withSubcommands([taskList, taskInspect])),
    Command.make("webhooks").pipe(Command.withSubcommands([deliveryList])),
    Command.make("channels").pipe(Command.withSubcommands([
      channelList,
      channelShow,
      channelCreate,
      channelUpdate,
      channelEnable,
      channelDisable,
      channelDelete
    ])),
    Command.make("system").pipe(Command.withSubcommands([systemStatus]))
  ])
)

/**
 * Runs the command line on `argv` (as `process.argv`).
 *
 * @since 0.1.0
 * @category running
 */
export const run = Command.run(command, { name: "mediagate", version: "0.1.0" })
