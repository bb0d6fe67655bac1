/**
 * Upstream channels on SQL: SQLite and PostgreSQL (any `SqlClient` of those dialects), the `ChannelStore` of a
 * deployment (docs/channels.md).
 *
 * One table, named with the store's prefix (`options.prefix`, default `mediagate_`; see {@link tables}), its
 * migrations recorded in {@link migrationsTable}: `<prefix>channels` (id `ch_`+ULID, name, transport, settings
 * JSON, credentials = the sealed value of `ChannelSecrets` (ciphertext only, never the key in clear),
 * credentials_hint (`…` and the last 4 characters, in clear), families and models JSON, priority, weight,
 * concurrency, enabled 0/1, disabled_reason, created_at and updated_at epoch ms). JSON is TEXT on both databases.
 *
 * Rows are decoded with Schema: a corrupt row, like every storage failure, surfaces as a `PersistenceError` naming
 * its table and column; credentials that no configured key opens do not: the channel reads as disabled with the
 * reason (`ChannelSecrets.openStored`).
 *
 * `changes` signals this process's writes at once and, on PostgreSQL, every process's: each write sends
 * `NOTIFY <prefix>channels` ({@link changesChannel}) and the stream listens on it (a lost `LISTEN` connection is found
 * by a probe and opened again: `@mediagate/persistence/Listen`), so every router reloads within milliseconds. On
 * SQLite other processes on the same file see a change at their next periodic reload.
 *
 * @since 0.1.0
 */
import type * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Catalog, Channel } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import * as Listen from "@mediagate/persistence/Listen"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { ChannelSecrets, openStored, refused, type StoredChannel, storeInput, storePatch } from "./ChannelSecrets.js"
import { ChannelStore } from "./ChannelStore.js"

const storeName = "channel storage"

/**
 * The table of channels under `prefix`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const tables = (prefix: string = SqlStore.defaultPrefix) => ({ channels: `${prefix}channels` }) as const

/**
 * The table the channel migrations are recorded in: `<prefix>channels_migrations`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrationsTable = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}channels_migrations`

const createChannels = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, id: idType } = SqlStore.columns(sql)
    const { channels } = tables(prefix)
    yield* sql.unsafe(`CREATE TABLE ${channels} (
  id ${idType} PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  transport TEXT NOT NULL,
  settings TEXT NOT NULL,
  credentials TEXT,
  credentials_hint TEXT,
  families TEXT NOT NULL,
  models TEXT NOT NULL,
  priority INTEGER NOT NULL,
  weight INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  enabled INTEGER NOT NULL,
  disabled_reason TEXT,
  created_at ${big} NOT NULL,
  updated_at ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE INDEX ${channels}_created_idx ON ${channels} (created_at, id)`)
  })

/**
 * The channel migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails
 * the loader with a `MigrationError`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations = (prefix: string = SqlStore.defaultPrefix): Migrator.Loader =>
  SqlStore.prefixedMigrations(storeName, prefix, (prefix) => ({
    "0001_channels": createChannels(prefix)
  }))

/**
 * Runs the channel migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrate = SqlStore.migrateWith(storeName, migrations, migrationsTable)

const optionalField = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(schema, { exact: true })

/** A channel row (the JSON columns decoded). */
const ChannelRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  transport: SqlRows.literal(...Channel.channelTransports),
  settings: Schema.parseJson(Schema.Struct({
    baseUrl: optionalField(Schema.String),
    timeoutMs: optionalField(Schema.Number),
    mapping: optionalField(Schema.Record({
      key: Schema.String,
      value: Schema.Struct({
        target: Schema.String,
        input: optionalField(Schema.String),
        output: optionalField(Schema.String)
      })
    })),
    resultHosts: optionalField(Schema.Array(Schema.String)),
    maxResultBytes: optionalField(Schema.Number),
    pollIntervalMs: optionalField(Schema.Number),
    pollRate: optionalField(Schema.Number),
    callbacks: optionalField(Schema.Boolean),
    costPerSecond: optionalField(Schema.Number),
    workflows: optionalField(Schema.Record({ key: Schema.String, value: Channel.ComfyWorkflow }))
  })),
  credentials: Schema.NullOr(Schema.String),
  credentialsHint: SqlRows.column("credentials_hint", Schema.NullOr(Schema.String)),
  families: Schema.parseJson(Schema.Array(SqlRows.literal(...Catalog.taskFamilies))),
  models: Schema.parseJson(Schema.Array(Schema.String)),
  priority: SqlRows.Number,
  weight: SqlRows.Number,
  concurrency: SqlRows.Number,
  enabled: SqlRows.Flag,
  disabledReason: SqlRows.column("disabled_reason", Schema.NullOr(Schema.String)),
  createdAt: SqlRows.column("created_at", SqlRows.Number),
  updatedAt: SqlRows.column("updated_at", SqlRows.Number)
})

/** Storage failures become `PersistenceError`. */
const persistence = SqlStore.persistence(storeName)

/**
 * The PostgreSQL `NOTIFY` channel of channel changes: `<prefix>channels`.
 *
 * @since 0.1.0
 * @category utils
 */
export const changesChannel = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}channels`

/**
 * Options of the SQL store.
 *
 * @since 0.1.0
 * @category models
 */
export interface SqlOptions extends SqlStore.PrefixOptions {}

/**
 * Builds the SQL store on the `SqlClient` and the {@link ChannelSecrets} in context (SQLite or PostgreSQL), after
 * running the channel migrations, with its table under `options.prefix` (default `mediagate_`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: SqlOptions = {}): Effect.Effect<
  ChannelStore["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | ChannelSecrets
> =>
  Effect.gen(function*() {
    const secrets = yield* ChannelSecrets
    const client = yield* SqlClient.SqlClient
    const { pg, prefix, sql, t } = yield* SqlStore.open(storeName, options, { tables, migrations, migrationsTable })
    const rows = SqlRows.decoder(tables(prefix).channels, ChannelRow)
    const written = yield* PubSub.sliding<void>(1)
    const notifyName = changesChannel(prefix)
    // this process at once; on PostgreSQL every process that listens (its router reloads within milliseconds)
    const signal = Effect.zipRight(
      PubSub.publish(written, undefined),
      pg ? sql`SELECT pg_notify(${notifyName}, ${"changed"})`.pipe(Effect.ignore) : Effect.void
    )
    /** Other processes' writes (PostgreSQL `LISTEN`, kept alive by a probe); nothing on SQLite. */
    const remote = Listen.notifications(client, notifyName)
    const open = (stored: StoredChannel) => openStored(secrets, stored)
    const encode = (stored: StoredChannel) => rows.encode(stored)

    // locked: PostgreSQL's row lock; on SQLite a write that changes nothing, which takes the write lock before the
    // transaction reads (a read first would fail its update at once if another process committed in between)
    const find = (id: string, lock: boolean) =>
      SqlStore.hasNul(id)
        ? Effect.succeed(Option.none<StoredChannel>())
        : (lock && !pg
          ? sql`UPDATE ${t.channels} SET id = id WHERE id = ${id} RETURNING *`
          : sql`SELECT * FROM ${t.channels} WHERE id = ${id}${sql.literal(lock ? " FOR UPDATE" : "")}`).pipe(
            Effect.flatMap(rows.first)
          )

    return ChannelStore.of({
      list: sql`SELECT * FROM ${t.channels} ORDER BY created_at, id`.pipe(
        Effect.flatMap(rows.all),
        Effect.map((all) => all.map(open)),
        persistence("list")
      ),
      get: (id) => find(id, false).pipe(Effect.map(Option.map(open)), persistence("get")),
      create: (input) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const stored = yield* Either.mapLeft(
            storeInput(secrets, `ch_${Ids.ulid(now)}`, input, now),
            refused("create")
          )
          const row = yield* encode(stored)
          yield* sql`INSERT INTO ${t.channels} ${sql.insert(row)}`
          return stored
        }).pipe(persistence("create"), Effect.tap(signal), Effect.map(open)),
      update: (id, patch) =>
        sql.withTransaction(Effect.gen(function*() {
          const found = yield* find(id, true)
          if (Option.isNone(found)) return Option.none<StoredChannel>()
          const now = yield* Clock.currentTimeMillis
          const changed = yield* Either.mapLeft(storePatch(secrets, found.value, patch, now), refused("update"))
          const { id: _, ...row } = yield* encode(changed)
          yield* sql`UPDATE ${t.channels} SET ${sql.update(row)} WHERE id = ${id}`
          return Option.some(changed)
        })).pipe(
          persistence("update"),
          Effect.tap((changed) => Option.isSome(changed) ? signal : Effect.void),
          Effect.map(Option.map(open))
        ),
      remove: (id) =>
        (SqlStore.hasNul(id)
          ? Effect.succeed(false)
          : sql`DELETE FROM ${t.channels} WHERE id = ${id} RETURNING id`.pipe(
            Effect.map((deleted) => deleted.length > 0)
          )).pipe(
            persistence("remove"),
            Effect.tap((deleted) => deleted ? signal : Effect.void)
          ),
      changes: Stream.merge(Stream.fromPubSub(written), remote)
    })
  })

/**
 * The SQL store as a layer (runs the migrations), with its table under `options.prefix` (default `mediagate_`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SqlOptions = {}): Layer.Layer<
  ChannelStore,
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient | ChannelSecrets
> => Layer.effect(ChannelStore, make(options))
