/**
 * The channel stores (`MemoryChannels`, `SqlChannels` on SQLite and PostgreSQL) against one suite: create, read,
 * change and delete, oldest first, the change signal, credentials round-trip encrypted (the stored form never holds
 * the API key), credentials no configured key opens (missing or another key: the channel reads as disabled with
 * the reason, nothing crashes, nothing is written back), and key rotation with `MEDIAGATE_CHANNEL_KEY_PREVIOUS`.
 * SQL only: migrations into their own table, the table prefix, and a corrupt row as a `PersistenceError`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Databases from "@mediagate/testing/databases"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ChannelSecrets from "../src/ChannelSecrets.js"
import type { ChannelInput, ChannelStore } from "../src/ChannelStore.js"
import * as MemoryChannels from "../src/MemoryChannels.js"
import * as SqlChannels from "../src/SqlChannels.js"

const { pgAvailable, pgNotRunning, postgres, runPostgres, sqlite } = Databases
if (!runPostgres) console.warn(`${pgNotRunning}: its tests are skipped`)

const keyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
const keyB = Buffer.alloc(32, 7).toString("base64")
const apiKey = "sk_live_relay_key_0123456789_WXYZ"

interface Keys {
  readonly current?: string
  readonly previous?: string
}

/** Storage shared by the stores a test opens (a restart with other keys is another store on the same storage). */
interface Backend {
  /** A store on the storage with these keys (SQL: its tables under `prefix`, default `mediagate_`). */
  readonly open: (keys: Keys, prefix?: string) => Effect.Effect<ChannelStore["Type"], unknown>
  /** A channel as stored (SQL: its row), for what must and must not be there. */
  readonly raw: (id: string) => Effect.Effect<Record<string, unknown>, unknown>
}

const secretsLayer = (keys: Keys) => ChannelSecrets.layer({ current: keys.current, previous: keys.previous })

const memory: Effect.Effect<Backend> = Effect.sync(() => {
  const table = new Map<string, ChannelSecrets.StoredChannel>()
  return {
    open: (keys) => MemoryChannels.make({ table }).pipe(Effect.provide(secretsLayer(keys))),
    raw: (id) => Effect.sync(() => ({ ...table.get(id)! }))
  }
})

const onSql = (
  database: () => Layer.Layer<SqlClient.SqlClient, unknown>
): Effect.Effect<Backend, unknown, Scope.Scope> =>
  Effect.map(Layer.build(database()), (context) => ({
    open: (keys, prefix) =>
      SqlChannels.make({ prefix }).pipe(Effect.provide(secretsLayer(keys)), Effect.provide(context)),
    raw: (id) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`SELECT * FROM ${sql(SqlChannels.tables().channels)} WHERE id = ${id}`).pipe(
          Effect.map((rows) => ({ ...rows[0]! })),
          Effect.provide(context)
        )
  }))

const backends: ReadonlyArray<readonly [string, Effect.Effect<Backend, unknown, Scope.Scope>]> = [
  ["memory", memory],
  ["sqlite", onSql(sqlite)],
  ...(runPostgres ? [["postgres", onSql(postgres)] as const] : [])
]

const relay = (name: string, overrides: Partial<ChannelInput> = {}): ChannelInput => ({
  name,
  transport: "relay",
  settings: { baseUrl: `https://${name}.example.com`, timeoutMs: 5000 },
  credentials: { apiKey: Redacted.make(apiKey) },
  families: ["vendor1", "vendor3"],
  ...overrides
})

const simulated = (name: string, overrides: Partial<ChannelInput> = {}): ChannelInput => ({
  name,
  transport: "simulated",
  families: ["vendor3"],
  ...overrides
})

const show = (value: unknown) => JSON.stringify(value, (_k, v) => typeof v === "bigint" ? String(v) : v)

for (const [name, backend] of backends) {
  describe(`channel store on ${name}`, () => {
    it.scoped("creates, reads, lists oldest first, changes and deletes channels", () =>
      Effect.gen(function*() {
        const store = yield* Effect.flatMap(backend, (b) => b.open({ current: keyA }))
        yield* TestClock.setTime(1_000)
        const a = yield* store.create(
          relay("alpha", { priority: 10, weight: 3, concurrency: 7, models: ["vendor1-2"] })
        )
        yield* TestClock.adjust(5)
        const b = yield* store.create(simulated("beta", { enabled: false, disabledReason: "disabled by an operator" }))
        yield* TestClock.adjust(5)
        const c = yield* store.create(simulated("gamma"))
        expect(a.id).toMatch(/^ch_[0-9A-HJKMNP-TV-Z]{26}$/)
        expect(a).toMatchObject({
          name: "alpha",
          transport: "relay",
          settings: { baseUrl: "https://alpha.example.com", timeoutMs: 5000 },
          credentialsHint: "…WXYZ",
          families: ["vendor1", "vendor3"],
          models: ["vendor1-2"],
          priority: 10,
          weight: 3,
          concurrency: 7,
          enabled: true,
          disabledReason: null,
          createdAt: 1_000,
          updatedAt: 1_000
        })
        expect(Redacted.value(a.credentials.apiKey!)).toBe(apiKey)
        expect(b).toMatchObject({
          settings: {},
          credentials: {},
          credentialsHint: null,
          models: [],
          priority: 0,
          weight: 1,
          concurrency: 0
        })
        expect([b.enabled, b.disabledReason]).toEqual([false, "disabled by an operator"])

        expect((yield* store.list).map((channel) => channel.name)).toEqual(["alpha", "beta", "gamma"])
        const read = Option.getOrThrow(yield* store.get(a.id))
        expect(read).toMatchObject({ id: a.id, name: "alpha", credentialsHint: "…WXYZ", createdAt: 1_000 })
        expect(Redacted.value(read.credentials.apiKey!)).toBe(apiKey)
        expect(Option.isNone(yield* store.get("ch_unknown"))).toBe(true)

        // changes at the same instant still move updatedAt forward
        const renamed = Option.getOrThrow(yield* store.update(a.id, { name: "alpha 2", priority: -5, models: [] }))
        expect(renamed).toMatchObject({
          name: "alpha 2",
          priority: -5,
          models: [],
          weight: 3,
          createdAt: 1_000,
          updatedAt: 1_010
        })
        const again = Option.getOrThrow(yield* store.update(a.id, { weight: 9 }))
        expect(again.updatedAt).toBe(1_011)
        const keyed = Option.getOrThrow(
          yield* store.update(a.id, {
            credentials: { apiKey: Redacted.make("sk_live_another_key_9876") },
            settings: { baseUrl: "https://alpha2.example.com" }
          })
        )
        expect(Redacted.value(keyed.credentials.apiKey!)).toBe("sk_live_another_key_9876")
        expect([keyed.credentialsHint, keyed.settings]).toEqual(["…9876", { baseUrl: "https://alpha2.example.com" }])
        const off = Option.getOrThrow(
          yield* store.update(c.id, { enabled: false, disabledReason: "3 authentication failures" })
        )
        expect([off.enabled, off.disabledReason]).toEqual([false, "3 authentication failures"])
        const on = Option.getOrThrow(yield* store.update(c.id, { enabled: true }))
        expect([on.enabled, on.disabledReason]).toEqual([true, null])
        const bare = Option.getOrThrow(yield* store.update(a.id, { credentials: null }))
        expect([bare.credentials, bare.credentialsHint]).toEqual([{}, null])
        expect(Option.isNone(yield* store.update("ch_unknown", { name: "x" }))).toBe(true)

        expect(yield* store.remove(b.id)).toBe(true)
        expect(yield* store.remove(b.id)).toBe(false)
        expect((yield* store.list).map((channel) => channel.name)).toEqual(["alpha 2", "gamma"])
      }))

    it.scopedLive("signals every committed write, and none for a write that found nothing", () =>
      Effect.gen(function*() {
        // a prefix of its own: PostgreSQL's NOTIFY channels (`<prefix>channels`) are the database's, and another
        // suite's schema in the same database signals `mediagate_channels`
        const prefix = `signals_${Math.random().toString(36).slice(2, 8)}_`
        const store = yield* Effect.flatMap(backend, (b) => b.open({ current: keyA }, prefix))
        const count = yield* Ref.make(0)
        yield* store.changes.pipe(Stream.runForEach(() => Ref.update(count, (n) => n + 1)), Effect.forkScoped)
        /** Waits (up to 2 s) until the count is above `n`. */
        const above = (n: number) =>
          Ref.get(count).pipe(
            Effect.filterOrFail((seen) => seen > n),
            Effect.retry(Schedule.spaced("5 millis").pipe(Schedule.upTo("2 seconds")))
          )
        // the subscription starts with the consumer: write until a write is seen
        const channel = yield* store.create(simulated("first"))
        yield* store.create(simulated("second")).pipe(
          Effect.zipRight(Ref.get(count)),
          Effect.filterOrFail((seen) => seen > 0),
          Effect.retry(Schedule.spaced("5 millis").pipe(Schedule.upTo("2 seconds")))
        )
        yield* Effect.sleep("50 millis")
        const settled = yield* Ref.get(count)
        yield* store.update("ch_unknown", { name: "x" })
        yield* store.remove("ch_unknown")
        yield* Effect.sleep("50 millis")
        expect(yield* Ref.get(count)).toBe(settled)
        yield* store.update(channel.id, { priority: 1 })
        const updated = yield* above(settled)
        yield* store.remove(channel.id)
        yield* above(updated)
      }))

    it.scoped("keeps credentials only encrypted", () =>
      Effect.gen(function*() {
        const storage = yield* backend
        const store = yield* storage.open({ current: keyA })
        const channel = yield* store.create(relay("alpha"))
        const row = yield* storage.raw(channel.id)
        expect(show(row)).not.toContain(apiKey)
        expect(show(row)).not.toContain("relay_key")
        expect(String(row["credentials"])).toMatch(/^v1\.[0-9a-f]{8}\./)
        expect(row[name === "memory" ? "credentialsHint" : "credentials_hint"]).toBe("…WXYZ")
        // a channel without credentials stores none
        const plain = yield* store.create(simulated("sim"))
        expect((yield* storage.raw(plain.id))["credentials"]).toBeNull()
      }))

    it.scoped("reads credentials no configured key opens as a disabled channel with the reason, without writing it", () =>
      Effect.gen(function*() {
        const storage = yield* backend
        const first = yield* storage.open({ current: keyA })
        const channel = yield* first.create(relay("alpha"))
        const sim = yield* first.create(simulated("sim"))
        const sealed = (yield* storage.raw(channel.id))["credentials"]

        for (const keys of [{ current: keyB }, {}]) {
          const before = yield* storage.raw(channel.id)
          const restarted = yield* storage.open(keys)
          const listed = yield* restarted.list
          expect(listed.map((c) => [c.name, c.enabled])).toEqual([["alpha", false], ["sim", true]])
          const unreadable = listed[0]!
          expect(unreadable.credentials).toEqual({})
          expect(unreadable.credentialsHint).toBe("…WXYZ")
          expect(unreadable.disabledReason).toContain("cannot be decrypted")
          expect(unreadable.disabledReason).toContain(
            keys.current === undefined ? "MEDIAGATE_CHANNEL_KEY is not set" : "neither"
          )
          expect(Option.getOrThrow(yield* restarted.get(channel.id)).disabledReason).toBe(unreadable.disabledReason)
          // nothing written back by the reads
          expect(yield* storage.raw(channel.id)).toEqual(before)
          // a write of other fields keeps the ciphertext as it is
          const renamed = Option.getOrThrow(yield* restarted.update(channel.id, { priority: 3 }))
          expect([renamed.priority, renamed.enabled]).toEqual([3, false])
          expect((yield* storage.raw(channel.id))["credentials"]).toBe(sealed)
        }

        // without a key, credentials cannot be written; a simulated channel still can
        const keyless = yield* storage.open({})
        const refused = yield* Effect.flip(keyless.create(relay("beta")))
        expect(refused._tag).toBe("PersistenceError")
        expect(refused.message).toContain(ChannelSecrets.noKeyMessage)
        expect((yield* keyless.create(simulated("sim 2"))).enabled).toBe(true)
        expect(Option.getOrThrow(yield* keyless.update(sim.id, { weight: 2 })).weight).toBe(2)
        // the right key reads it again
        const fixed = Option.getOrThrow(yield* (yield* storage.open({ current: keyA })).get(channel.id))
        expect([fixed.enabled, fixed.disabledReason, Redacted.value(fixed.credentials.apiKey!)]).toEqual([
          true,
          null,
          apiKey
        ])
      }))

    it.scoped("rotates keys: the previous key reads, a write re-encrypts with the current one", () =>
      Effect.gen(function*() {
        const storage = yield* backend
        const old = yield* storage.open({ current: keyA })
        const channel = yield* old.create(relay("alpha"))
        const idA = (yield* storage.raw(channel.id))["credentials"] as string
        const rotated = yield* storage.open({ current: keyB, previous: keyA })
        const read = Option.getOrThrow(yield* rotated.get(channel.id))
        expect([read.enabled, Redacted.value(read.credentials.apiKey!)]).toEqual([true, apiKey])
        expect((yield* storage.raw(channel.id))["credentials"]).toBe(idA)
        yield* rotated.update(channel.id, { name: "alpha rotated" })
        const sealed = (yield* storage.raw(channel.id))["credentials"] as string
        expect(sealed.split(".")[1]).not.toBe(idA.split(".")[1])
        expect(sealed.split(".")[1]).toBe(keyIdOf(keyB))
        // the old key can go now
        const onlyNew = Option.getOrThrow(yield* (yield* storage.open({ current: keyB })).get(channel.id))
        expect([onlyNew.name, onlyNew.enabled, Redacted.value(onlyNew.credentials.apiKey!)]).toEqual([
          "alpha rotated",
          true,
          apiKey
        ])
      }))
  })
}

/** The id of a key setting. */
const keyIdOf = (text: string) => {
  const parsed = ChannelSecrets.parseKey(text)
  assert.isTrue(parsed._tag === "Right")
  return parsed._tag === "Right" ? parsed.right.id : ""
}

const databases: ReadonlyArray<readonly [string, () => Layer.Layer<SqlClient.SqlClient, unknown>]> = [
  ["sqlite", sqlite],
  ...(runPostgres ? [["postgres", postgres] as const] : [])
]

describe("PostgreSQL availability", () => {
  it.skipIf(!runPostgres)("answers at 127.0.0.1:5432", () => {
    assert.isTrue(pgAvailable, `${pgNotRunning} (required when CI=true)`)
  })
})

for (const [name, database] of databases) {
  describe(`channel SQL on ${name}`, () => {
    it.scoped("runs its migrations once into its own table, under the table prefix", () =>
      Effect.gen(function*() {
        const context = yield* Layer.build(database())
        const sql = Context.get(context, SqlClient.SqlClient)
        yield* SqlChannels.migrate().pipe(Effect.provide(context))
        yield* SqlChannels.migrate().pipe(Effect.provide(context))
        const names = yield* sql<{ name: string }>`SELECT name FROM ${
          sql(SqlChannels.migrationsTable())
        } ORDER BY migration_id`
        expect(names.map((row) => row.name)).toEqual(["channels"])

        const store = yield* SqlChannels.make({ prefix: "app_" }).pipe(
          Effect.provide(secretsLayer({ current: keyA })),
          Effect.provide(context)
        )
        const channel = yield* store.create(simulated("prefixed"))
        const rows = yield* sql<{ id: string }>`SELECT id FROM ${sql("app_channels")}`
        expect(rows.map((row) => row.id)).toEqual([channel.id])
        expect(yield* sql`SELECT * FROM ${sql("app_channels_migrations")}`).toHaveLength(1)
        // the default-prefixed table is another one
        expect(yield* sql`SELECT * FROM ${sql(SqlChannels.tables().channels)}`).toHaveLength(0)

        const invalid = yield* Effect.flip(
          SqlChannels.make({ prefix: "Bad-Prefix" }).pipe(
            Effect.provide(secretsLayer({})),
            Effect.provide(context)
          )
        )
        expect(invalid.message).toContain(SqlStore.invalidPrefixMessage("channel storage", "Bad-Prefix"))
      }))

    it.scoped("reports a corrupt row as a PersistenceError naming its column", () =>
      Effect.gen(function*() {
        const context = yield* Layer.build(database())
        const sql = Context.get(context, SqlClient.SqlClient)
        const store = yield* SqlChannels.make().pipe(
          Effect.provide(secretsLayer({ current: keyA })),
          Effect.provide(context)
        )
        const channel = yield* store.create(simulated("sim"))
        yield* sql`UPDATE ${
          sql(SqlChannels.tables().channels)
        } SET families = ${"[\"nobody\"]"} WHERE id = ${channel.id}`
        const failure = yield* Effect.flip(store.list)
        expect(failure._tag).toBe("PersistenceError")
        expect(failure.message).toContain("mediagate_channels.families")
      }))
  })
}

describe.skipIf(!runPostgres)("channel store across PostgreSQL clients", () => {
  it.scopedLive(
    "a write through one process's store signals the other's changes (NOTIFY)",
    () =>
      Effect.gen(function*() {
        const schema = yield* Databases.pgSchema
        const open = Effect.flatMap(
          Layer.build(Databases.pgClient(schema)),
          (context) => SqlChannels.make().pipe(Effect.provide(secretsLayer({ current: keyA })), Effect.provide(context))
        )
        const writer = yield* open
        const reader = yield* open
        const heard = yield* Ref.make(0)
        yield* reader.changes.pipe(Stream.runForEach(() => Ref.update(heard, (n) => n + 1)), Effect.forkScoped)
        // the LISTEN starts with the consumer: write until the other store hears one
        yield* writer.create(simulated("elsewhere")).pipe(
          Effect.zipRight(Ref.get(heard)),
          Effect.filterOrFail((n) => n > 0),
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("5 seconds")))
        )
        const before = yield* Ref.get(heard)
        const [channel] = yield* writer.list
        yield* writer.update(channel!.id, { weight: 5 })
        yield* Ref.get(heard).pipe(
          Effect.filterOrFail((n) => n > before),
          Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("2 seconds")))
        )
        expect(Option.getOrThrow(yield* reader.get(channel!.id)).weight).toBe(5)
      }),
    { timeout: 20_000 }
  )
})
