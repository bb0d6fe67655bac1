/**
 * Webhook storage: registrations, deliveries, the attempt log and the dispatcher's outbox cursor.
 *
 * Implementations: {@link makeMemory} (one process, nothing survives a restart) and {@link makeSql} (SQLite and
 * PostgreSQL on the `SqlClient` in context, tables created by {@link migrations} in {@link migrationsTable}, every
 * name under the store's prefix: `options.prefix`, default `mediagate_`, see {@link tables}). One conformance suite
 * runs against all of them.
 *
 * - The webhook `secret` is stored **as given**: it is the HMAC key every delivery is signed with, so it cannot be
 *   hashed. It is a secret at rest: protect the database (and its backups) accordingly.
 * - Deliveries are claimed with a lease and a fencing token (`fence`, incremented by every claim), like the engine's
 *   tasks: a worker whose lease ran out can never record an attempt over a newer claim.
 * - {@link WebhookStore} `fanOut` creates the deliveries of a page of outbox entries **and** advances the durable
 *   outbox cursor in one transaction, as a compare-and-set on the cursor: a crash never loses or duplicates fan-out,
 *   and two dispatchers never both fan out the same page.
 * - Times are epoch ms. "now" is passed in by the caller, read from {@link WebhookStore} `now`: the database clock on
 *   SQL (or the Effect `Clock` when configured so, for tests), the Effect `Clock` in memory.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Errors, Webhook } from "@mediagate/contract"
import * as Ids from "@mediagate/engine/Ids"
import { PersistenceError } from "@mediagate/engine/PersistenceError"
import type { OutboxEntry } from "@mediagate/engine/TaskStorage"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  columns,
  databaseNow,
  defaultPrefix,
  identifiers,
  migrateWith,
  migrator,
  persistence as persistenceOf,
  type PrefixOptions,
  prefixedMigrations,
  resolvePrefix,
  storeClient
} from "@mediagate/engine/SqlStore"
import { bad, decodeAll, numberOf, numberOrNull, type Row, stringOf, stringOrNull } from "@mediagate/engine/SqlRows"

// -----------------------------------------------------------------------------------------------------------------
// records
// -----------------------------------------------------------------------------------------------------------------

/** A stored webhook registration. */
export interface WebhookRow {
  readonly id: string
  readonly accountId: string
  readonly url: string
  readonly events: ReadonlyArray<Webhook.EventType>
  readonly description: string | null
  readonly enabled: boolean
  /** The signing secret (`whsec_…`), stored as given: an HMAC key, a secret at rest. */
  readonly secret: string
  readonly createdAt: number
  readonly deletedAt: number | null
}

/** States of a delivery. */
export type DeliveryStatus = "pending" | "succeeded" | "failed"

/** A stored delivery: one event to one target. */
export interface DeliveryRow {
  readonly id: string
  /** The configured webhook, or null for a per-job (`webhookUrl`) delivery. */
  readonly webhookId: string | null
  readonly accountId: string
  readonly eventId: string
  readonly eventType: Webhook.EventType
  /** The target URL. */
  readonly url: string
  /** The exact JSON body sent on every attempt. */
  readonly payload: string
  readonly status: DeliveryStatus
  /** Requests made so far, the first included. */
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: number | null
  readonly leaseOwner: string | null
  readonly leaseExpiresAt: number | null
  readonly fence: number
  readonly createdAt: number
}

/** One request of a delivery, as logged. */
export interface AttemptRow {
  readonly deliveryId: string
  /** 1 for the first request. */
  readonly attempt: number
  readonly statusCode: number | null
  readonly error: string | null
  readonly durationMs: number
  /** The start of the response body (at most {@link excerptBytes} bytes). */
  readonly responseExcerpt: string | null
  readonly at: number
}

/** Longest response excerpt kept in the attempt log. */
export const excerptBytes = 1024

/** What one request achieved. */
export interface AttemptResult {
  readonly statusCode: number | null
  readonly error: string | null
  readonly durationMs: number
  readonly responseExcerpt: string | null
  readonly at: number
}

/** Where a delivery goes after a claim. */
export type Settlement =
  | { readonly status: "pending"; readonly nextAttemptAt: number }
  | { readonly status: "succeeded" }
  | { readonly status: "failed"; readonly disableWebhook?: boolean; readonly reason?: string }

/** A new delivery (due at once). */
export interface NewDelivery {
  readonly webhookId: string | null
  readonly accountId: string
  readonly eventId: string
  readonly eventType: Webhook.EventType
  readonly url: string
  readonly payload: string
}

/** An `Idempotency-Key` claim of a registration. */
export interface IdempotencyClaim {
  readonly key: string
  readonly fingerprint: string
  /** Claims older than this (epoch ms) are forgotten. */
  readonly notBefore: number
}

/** The answer of a registration. */
export type CreateResult =
  | { readonly _tag: "Created"; readonly webhook: WebhookRow }
  | { readonly _tag: "Replayed"; readonly webhook: WebhookRow }

/** A page of deliveries, newest first. */
export interface DeliveryPage {
  readonly items: ReadonlyArray<DeliveryRow>
  readonly hasMore: boolean
  readonly total: number
}

/** The storage port. */
export class WebhookStore extends Context.Tag("@mediagate/webhooks/WebhookStore")<WebhookStore, {
  /** The storage clock in epoch ms. */
  readonly now: Effect.Effect<number, PersistenceError>
  /** Stores a registration; with an idempotency key already used for the same fingerprint, the original answer. */
  readonly createWebhook: (
    webhook: WebhookRow,
    idempotency: IdempotencyClaim | undefined
  ) => Effect.Effect<CreateResult, Errors.IdempotencyKeyReused | PersistenceError>
  /** The account's registrations (deleted ones excluded), oldest first. */
  readonly listWebhooks: (accountId: string) => Effect.Effect<ReadonlyArray<WebhookRow>, PersistenceError>
  /** A registration of an account (not deleted). */
  readonly getWebhook: (accountId: string, id: string) => Effect.Effect<Option.Option<WebhookRow>, PersistenceError>
  /** A registration by id alone, deleted ones included (the delivery worker). */
  readonly getWebhookById: (id: string) => Effect.Effect<Option.Option<WebhookRow>, PersistenceError>
  /** Deletes (softly) a registration of an account; answers whether it existed. */
  readonly removeWebhook: (accountId: string, id: string, now: number) => Effect.Effect<boolean, PersistenceError>
  /** Enables or disables a registration. */
  readonly setEnabled: (id: string, enabled: boolean) => Effect.Effect<void, PersistenceError>
  /** Deliveries of a webhook, newest first, below `beforeId`. */
  readonly listDeliveries: (
    accountId: string,
    webhookId: string,
    query: { readonly beforeId: string | undefined; readonly limit: number }
  ) => Effect.Effect<DeliveryPage, PersistenceError>
  /** A delivery of a webhook of an account. */
  readonly getDelivery: (
    accountId: string,
    webhookId: string,
    id: string
  ) => Effect.Effect<Option.Option<DeliveryRow>, PersistenceError>
  /** Every delivery of an event (operators, tests), oldest first. */
  readonly deliveriesOfEvent: (eventId: string) => Effect.Effect<ReadonlyArray<DeliveryRow>, PersistenceError>
  /** Adds a delivery due at `now` (replay); re-enables its webhook in the same step when asked. */
  readonly addDelivery: (
    delivery: NewDelivery,
    now: number,
    options: { readonly enableWebhook: boolean }
  ) => Effect.Effect<DeliveryRow, PersistenceError>
  /** The dispatcher's outbox cursor (undefined before the first page). */
  readonly readCursor: Effect.Effect<string | undefined, PersistenceError>
  /**
   * In one transaction: moves the outbox cursor from `expected` to `next` (compare-and-set) and creates the
   * deliveries of `entries` — one per subscribed, enabled webhook of the entry's account, plus one per-job delivery
   * when the entry has a `webhookUrl`. Answers how many deliveries were created, or none (nothing written) when the
   * cursor was no longer at `expected`.
   */
  readonly fanOut: (
    expected: string | undefined,
    next: string,
    entries: ReadonlyArray<OutboxEntry>,
    now: number
  ) => Effect.Effect<Option.Option<number>, PersistenceError>
  /** Leases up to `limit` due pending deliveries (fence incremented). */
  readonly claimDue: (
    owner: string,
    limit: number,
    leaseMs: number,
    now: number
  ) => Effect.Effect<ReadonlyArray<DeliveryRow>, PersistenceError>
  /**
   * Records an attempt (when given) and moves the delivery on, releasing the lease, if `fence` still holds; with
   * `disableWebhook` also disables its webhook, in the same transaction. Answers whether it was recorded.
   */
  readonly settle: (
    id: string,
    fence: number,
    attempt: AttemptResult | undefined,
    settlement: Settlement
  ) => Effect.Effect<boolean, PersistenceError>
  /** The attempt log of a delivery, first attempt first. */
  readonly attempts: (deliveryId: string) => Effect.Effect<ReadonlyArray<AttemptRow>, PersistenceError>
  /** When a pending delivery is next due (its lease counted), or none. */
  readonly nextDueAt: Effect.Effect<Option.Option<number>, PersistenceError>
  /** Releases every lease `owner` holds (graceful shutdown); answers how many. */
  readonly releaseAll: (owner: string) => Effect.Effect<number, PersistenceError>
}>() {}

/** A new webhook id. */
export const webhookId = (now?: number): string => `wh_${Ids.ulid(now)}`
/** A new delivery id. */
export const deliveryId = (now?: number): string => `dlv_${Ids.ulid(now)}`

/** Whether a webhook receives an event type. */
export const subscribes = (webhook: WebhookRow, type: Webhook.EventType): boolean =>
  webhook.enabled && webhook.deletedAt === null && webhook.events.includes(type)

/** The deliveries an outbox entry fans out to, given the account's webhooks. */
export const deliveriesFor = (
  entry: OutboxEntry,
  webhooks: ReadonlyArray<WebhookRow>
): ReadonlyArray<NewDelivery> => {
  const payload = JSON.stringify(entry.event)
  const base = { accountId: entry.accountId, eventId: entry.event.id, eventType: entry.event.type, payload }
  const configured = webhooks
    .filter((webhook) => webhook.accountId === entry.accountId && subscribes(webhook, entry.event.type))
    .map((webhook): NewDelivery => ({ ...base, webhookId: webhook.id, url: webhook.url }))
  return entry.webhookUrl === null ? configured : [...configured, { ...base, webhookId: null, url: entry.webhookUrl }]
}

const newRow = (delivery: NewDelivery, now: number): DeliveryRow => ({
  ...delivery,
  id: deliveryId(now),
  status: "pending",
  attempts: 0,
  lastStatusCode: null,
  lastError: null,
  nextAttemptAt: now,
  leaseOwner: null,
  leaseExpiresAt: null,
  fence: 0,
  createdAt: now
})

const settled = (row: DeliveryRow, attempt: AttemptResult | undefined, settlement: Settlement): DeliveryRow => ({
  ...row,
  attempts: row.attempts + (attempt === undefined ? 0 : 1),
  lastStatusCode: attempt === undefined ? row.lastStatusCode : attempt.statusCode,
  lastError: attempt === undefined
    ? (settlement.status === "failed" ? settlement.reason ?? row.lastError : row.lastError)
    : attempt.error,
  status: settlement.status,
  nextAttemptAt: settlement.status === "pending" ? Math.floor(settlement.nextAttemptAt) : null,
  leaseOwner: null,
  leaseExpiresAt: null
})

const reused = () =>
  new Errors.IdempotencyKeyReused({ message: "Idempotency-Key was already used with a different request" })

// -----------------------------------------------------------------------------------------------------------------
// memory
// -----------------------------------------------------------------------------------------------------------------

/** Storage in memory; operations run one at a time (a semaphore plays the transaction). Clock: Effect `Clock`. */
export const makeMemory: Effect.Effect<WebhookStore["Type"]> = Effect.gen(function*() {
  const webhooks = new Map<string, WebhookRow>()
  const deliveries = new Map<string, DeliveryRow>()
  const log: Array<AttemptRow> = []
  const idempotency = new Map<string, { fingerprint: string; webhookId: string; createdAt: number }>()
  let cursor: string | undefined = undefined
  const lock = yield* Effect.makeSemaphore(1)
  const tx = <A, E>(effect: Effect.Effect<A, E>) => lock.withPermits(1)(effect)
  const sync = <A>(f: () => A) => tx(Effect.sync(f))
  const live = (row: WebhookRow | undefined, accountId: string): Option.Option<WebhookRow> =>
    row !== undefined && row.accountId === accountId && row.deletedAt === null ? Option.some(row) : Option.none()
  const ofWebhook = (accountId: string, webhookId: string) =>
    [...deliveries.values()].filter((d) => d.accountId === accountId && d.webhookId === webhookId)

  const service: WebhookStore["Type"] = {
    now: Clock.currentTimeMillis,
    createWebhook: (webhook, claim) =>
      tx(Effect.suspend((): Effect.Effect<CreateResult, Errors.IdempotencyKeyReused> => {
        if (claim !== undefined) {
          const slot = `${webhook.accountId}\u0000${claim.key}`
          const previous = idempotency.get(slot)
          if (previous !== undefined && previous.createdAt >= claim.notBefore) {
            if (previous.fingerprint !== claim.fingerprint) return Effect.fail(reused())
            const original = webhooks.get(previous.webhookId)
            if (original !== undefined) return Effect.succeed({ _tag: "Replayed", webhook: original } as const)
          }
          idempotency.set(slot, { fingerprint: claim.fingerprint, webhookId: webhook.id, createdAt: webhook.createdAt })
        }
        webhooks.set(webhook.id, webhook)
        return Effect.succeed({ _tag: "Created", webhook } as const)
      })),
    listWebhooks: (accountId) =>
      sync(() =>
        [...webhooks.values()]
          .filter((w) => w.accountId === accountId && w.deletedAt === null)
          .sort((a, b) => (a.id < b.id ? -1 : 1))
      ),
    getWebhook: (accountId, id) => sync(() => live(webhooks.get(id), accountId)),
    getWebhookById: (id) => sync(() => Option.fromNullable(webhooks.get(id))),
    removeWebhook: (accountId, id, now) =>
      sync(() => {
        const row = live(webhooks.get(id), accountId)
        if (Option.isNone(row)) return false
        webhooks.set(id, { ...row.value, enabled: false, deletedAt: now })
        return true
      }),
    setEnabled: (id, enabled) =>
      sync(() => {
        const row = webhooks.get(id)
        if (row !== undefined) webhooks.set(id, { ...row, enabled })
      }),
    listDeliveries: (accountId, webhookId, query) =>
      sync(() => {
        const all = ofWebhook(accountId, webhookId).sort((a, b) => (a.id < b.id ? 1 : -1))
        const after = query.beforeId === undefined ? all : all.filter((d) => d.id < query.beforeId!)
        const limit = Math.max(0, Math.floor(query.limit))
        return { items: after.slice(0, limit), hasMore: after.length > limit, total: all.length }
      }),
    getDelivery: (accountId, webhookId, id) =>
      sync(() => {
        const row = deliveries.get(id)
        return row !== undefined && row.accountId === accountId && row.webhookId === webhookId
          ? Option.some(row)
          : Option.none()
      }),
    deliveriesOfEvent: (eventId) =>
      sync(() => [...deliveries.values()].filter((d) => d.eventId === eventId).sort((a, b) => (a.id < b.id ? -1 : 1))),
    addDelivery: (delivery, now, options) =>
      sync(() => {
        const row = newRow(delivery, now)
        deliveries.set(row.id, row)
        if (options.enableWebhook && delivery.webhookId !== null) {
          const webhook = webhooks.get(delivery.webhookId)
          if (webhook !== undefined && webhook.deletedAt === null) {
            webhooks.set(webhook.id, { ...webhook, enabled: true })
          }
        }
        return row
      }),
    readCursor: sync(() => cursor),
    fanOut: (expected, next, entries, now) =>
      sync(() => {
        if (cursor !== expected) return Option.none()
        cursor = next
        let count = 0
        for (const entry of entries) {
          for (const delivery of deliveriesFor(entry, [...webhooks.values()])) {
            const row = newRow(delivery, now)
            deliveries.set(row.id, row)
            count++
          }
        }
        return Option.some(count)
      }),
    claimDue: (owner, limit, leaseMs, now) =>
      sync(() => {
        const due = [...deliveries.values()]
          .filter((d) =>
            d.status === "pending" && d.nextAttemptAt !== null && d.nextAttemptAt <= now &&
            (d.leaseExpiresAt === null || d.leaseExpiresAt <= now)
          )
          .sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || (a.id < b.id ? -1 : 1))
          .slice(0, Math.max(0, Math.floor(limit)))
        return due.map((d) => {
          const claimed = { ...d, fence: d.fence + 1, leaseOwner: owner, leaseExpiresAt: now + leaseMs }
          deliveries.set(d.id, claimed)
          return claimed
        })
      }),
    settle: (id, fence, attempt, settlement) =>
      sync(() => {
        const row = deliveries.get(id)
        if (row === undefined || row.fence !== fence || row.leaseOwner === null || row.status !== "pending") {
          return false
        }
        const next = settled(row, attempt, settlement)
        deliveries.set(id, next)
        if (attempt !== undefined) {
          log.push({
            deliveryId: id,
            attempt: next.attempts,
            statusCode: attempt.statusCode,
            error: attempt.error,
            durationMs: Math.round(attempt.durationMs),
            responseExcerpt: attempt.responseExcerpt,
            at: attempt.at
          })
        }
        if (settlement.status === "failed" && settlement.disableWebhook === true && row.webhookId !== null) {
          const webhook = webhooks.get(row.webhookId)
          if (webhook !== undefined) webhooks.set(webhook.id, { ...webhook, enabled: false })
        }
        return true
      }),
    attempts: (deliveryId) => sync(() => log.filter((a) => a.deliveryId === deliveryId)),
    nextDueAt: sync(() => {
      const times = [...deliveries.values()]
        .filter((d) => d.status === "pending" && d.nextAttemptAt !== null)
        .map((d) => Math.max(d.nextAttemptAt!, d.leaseExpiresAt ?? 0))
      return times.length === 0 ? Option.none() : Option.some(Math.min(...times))
    }),
    releaseAll: (owner) =>
      sync(() => {
        let count = 0
        for (const d of deliveries.values()) {
          if (d.leaseOwner === owner && d.status === "pending") {
            deliveries.set(d.id, { ...d, leaseOwner: null, leaseExpiresAt: null })
            count++
          }
        }
        return count
      })
  }
  return service
})

/** The memory storage as a layer. */
export const layerMemory: Layer.Layer<WebhookStore> = Layer.effect(WebhookStore, makeMemory)

// -----------------------------------------------------------------------------------------------------------------
// SQL
// -----------------------------------------------------------------------------------------------------------------

const storeName = "webhook storage"

/** The tables of the webhook storage under `prefix`. */
export const tables = (prefix: string = defaultPrefix) => ({
  webhooks: `${prefix}webhooks`,
  idempotency: `${prefix}webhook_idempotency`,
  deliveries: `${prefix}webhook_deliveries`,
  attempts: `${prefix}webhook_delivery_attempts`,
  cursor: `${prefix}webhook_dispatch_cursor`
}) as const

/** The table the webhook migrations are recorded in: `<prefix>webhooks_migrations`. */
export const migrationsTable = (prefix: string = defaultPrefix): string => `${prefix}webhooks_migrations`

const createTables = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { big, id: idType } = columns(sql)
    const t = tables(prefix)
    yield* sql.unsafe(`CREATE TABLE ${t.webhooks} (
  id ${idType} PRIMARY KEY NOT NULL,
  account_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  description TEXT,
  enabled INTEGER NOT NULL,
  secret TEXT NOT NULL,
  created_at ${big} NOT NULL,
  deleted_at ${big}
)`)
    yield* sql.unsafe(`CREATE INDEX ${t.webhooks}_account_idx ON ${t.webhooks} (account_id, id)`)
    yield* sql.unsafe(`CREATE TABLE ${t.idempotency} (
  account_id TEXT NOT NULL,
  "key" TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  created_at ${big} NOT NULL,
  PRIMARY KEY (account_id, "key")
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.deliveries} (
  id ${idType} PRIMARY KEY NOT NULL,
  webhook_id ${idType},
  account_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL,
  last_status_code INTEGER,
  last_error TEXT,
  next_attempt_at ${big},
  lease_owner TEXT,
  lease_expires_at ${big},
  fence ${big} NOT NULL,
  created_at ${big} NOT NULL
)`)
    yield* sql.unsafe(`CREATE INDEX ${t.deliveries}_webhook_idx ON ${t.deliveries} (webhook_id, id DESC)`)
    yield* sql.unsafe(`CREATE INDEX ${t.deliveries}_event_idx ON ${t.deliveries} (event_id)`)
    yield* sql.unsafe(
      `CREATE INDEX ${t.deliveries}_due_idx ON ${t.deliveries} (next_attempt_at, id) WHERE status = 'pending'`
    )
    yield* sql.unsafe(`CREATE TABLE ${t.attempts} (
  delivery_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  status_code INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  response_excerpt TEXT,
  at ${big} NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
)`)
    yield* sql.unsafe(`CREATE TABLE ${t.cursor} (
  name TEXT PRIMARY KEY NOT NULL,
  position TEXT NOT NULL
)`)
  })

/**
 * The webhook migrations (SQLite and PostgreSQL), creating every object under `prefix`; an invalid prefix fails
 * the loader with a `MigrationError`.
 */
export const migrations = (prefix: string = defaultPrefix): Migrator.Loader =>
  prefixedMigrations(storeName, prefix, (prefix) => ({ "0001_webhooks": createTables(prefix) }))

/**
 * Runs the webhook migrations under `prefix` into {@link migrationsTable}; an invalid prefix fails with a
 * `PersistenceError`.
 */
export const migrate = migrateWith(storeName, migrations, migrationsTable)

const eventTypeOf = (row: Row, column: string): Webhook.EventType => {
  const value = stringOf(row, column)
  return (Webhook.eventTypes as ReadonlyArray<string>).includes(value) ? value as Webhook.EventType : bad(column, "unknown event")
}

const decodeWebhook = (row: Row): WebhookRow => {
  let events: unknown
  try {
    events = JSON.parse(stringOf(row, "events"))
  } catch {
    events = undefined
  }
  if (!Array.isArray(events) || !events.every((e) => (Webhook.eventTypes as ReadonlyArray<unknown>).includes(e))) {
    return bad("events", "not a list of event types")
  }
  return {
    id: stringOf(row, "id"),
    accountId: stringOf(row, "account_id"),
    url: stringOf(row, "url"),
    events: events as ReadonlyArray<Webhook.EventType>,
    description: stringOrNull(row, "description"),
    enabled: numberOf(row, "enabled") !== 0,
    secret: stringOf(row, "secret"),
    createdAt: numberOf(row, "created_at"),
    deletedAt: numberOrNull(row, "deleted_at")
  }
}

const statuses = ["pending", "succeeded", "failed"] as const

const decodeDelivery = (row: Row): DeliveryRow => {
  const status = stringOf(row, "status")
  return {
    id: stringOf(row, "id"),
    webhookId: stringOrNull(row, "webhook_id"),
    accountId: stringOf(row, "account_id"),
    eventId: stringOf(row, "event_id"),
    eventType: eventTypeOf(row, "event_type"),
    url: stringOf(row, "url"),
    payload: stringOf(row, "payload"),
    status: (statuses as ReadonlyArray<string>).includes(status) ? status as DeliveryStatus : bad("status", "unknown"),
    attempts: numberOf(row, "attempts"),
    lastStatusCode: numberOrNull(row, "last_status_code"),
    lastError: stringOrNull(row, "last_error"),
    nextAttemptAt: numberOrNull(row, "next_attempt_at"),
    leaseOwner: stringOrNull(row, "lease_owner"),
    leaseExpiresAt: numberOrNull(row, "lease_expires_at"),
    fence: numberOf(row, "fence"),
    createdAt: numberOf(row, "created_at")
  }
}

const decodeAttempt = (row: Row): AttemptRow => ({
  deliveryId: stringOf(row, "delivery_id"),
  attempt: numberOf(row, "attempt"),
  statusCode: numberOrNull(row, "status_code"),
  error: stringOrNull(row, "error"),
  durationMs: numberOf(row, "duration_ms"),
  responseExcerpt: stringOrNull(row, "response_excerpt"),
  at: numberOf(row, "at")
})

const encodeWebhook = (w: WebhookRow): Record<string, unknown> => ({
  id: w.id,
  account_id: w.accountId,
  url: w.url,
  events: JSON.stringify(w.events),
  description: w.description,
  enabled: w.enabled ? 1 : 0,
  secret: w.secret,
  created_at: Math.floor(w.createdAt),
  deleted_at: w.deletedAt
})

const encodeDelivery = (d: DeliveryRow): Record<string, unknown> => ({
  id: d.id,
  webhook_id: d.webhookId,
  account_id: d.accountId,
  event_id: d.eventId,
  event_type: d.eventType,
  url: d.url,
  payload: d.payload,
  status: d.status,
  attempts: d.attempts,
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  next_attempt_at: d.nextAttemptAt,
  lease_owner: d.leaseOwner,
  lease_expires_at: d.leaseExpiresAt,
  fence: d.fence,
  created_at: d.createdAt
})

/** No stored identifier contains NUL (PostgreSQL refuses NUL in text): such an argument matches nothing. */
const hasNul = (...values: ReadonlyArray<string | undefined>): boolean =>
  values.some((s) => s !== undefined && s.includes("\u0000"))

/** Storage failures become {@link PersistenceError}. */
const persistence = persistenceOf(storeName)

/** Options of the SQL storage. */
export interface SqlOptions extends PrefixOptions {
  /** The storage clock (tests: `Clock.currentTimeMillis` to follow the `TestClock`); default the database clock. */
  readonly clock?: Effect.Effect<number>
}

const cursorName = "outbox"

/**
 * Builds the SQL storage on the `SqlClient` in context, after running the migrations, with its tables under
 * `options.prefix` (default `mediagate_`; an invalid prefix fails with a `PersistenceError`).
 */
export const makeSql = (options: SqlOptions = {}): Effect.Effect<
  WebhookStore["Type"],
  SqlError | Migrator.MigrationError | PersistenceError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const prefix = yield* resolvePrefix(storeName, options)
    const { pg, sql } = yield* storeClient(storeName)
    yield* migrator(migrations(prefix), migrationsTable(prefix))
    const t = identifiers(sql, tables(prefix))

    const now: Effect.Effect<number, PersistenceError> = options.clock !== undefined
      ? Effect.map(options.clock, Math.floor)
      : databaseNow(sql, pg).pipe(persistence("now"))

    const selectWebhooks = (accountId: string) =>
      sql<Row>`SELECT * FROM ${t.webhooks} WHERE account_id = ${accountId} AND deleted_at IS NULL ORDER BY id`.pipe(
        Effect.flatMap(decodeAll(decodeWebhook))
      )
    const selectWebhook = (id: string) =>
      sql<Row>`SELECT * FROM ${t.webhooks} WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeAll(decodeWebhook)),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )
    const insertDelivery = (row: DeliveryRow) => sql`INSERT INTO ${t.deliveries} ${sql.insert(encodeDelivery(row))}`

    const service: WebhookStore["Type"] = {
      now,
      createWebhook: (webhook, claim) =>
        sql.withTransaction(Effect.gen(function*() {
          if (claim !== undefined) {
            const previous = yield* sql<Row>`SELECT fingerprint, webhook_id, created_at FROM ${t.idempotency}
              WHERE account_id = ${webhook.accountId} AND "key" = ${claim.key}${sql.literal(pg ? " FOR UPDATE" : "")}`.pipe(
              Effect.flatMap(decodeAll((row) => ({
                fingerprint: stringOf(row, "fingerprint"),
                webhookId: stringOf(row, "webhook_id"),
                createdAt: numberOf(row, "created_at")
              }))),
              Effect.map((rows) => rows[0])
            )
            if (previous !== undefined && previous.createdAt >= claim.notBefore) {
              if (previous.fingerprint !== claim.fingerprint) return yield* Effect.fail(reused())
              const original = yield* selectWebhook(previous.webhookId)
              if (Option.isSome(original)) return { _tag: "Replayed", webhook: original.value } as const
            }
            yield* sql`INSERT INTO ${t.idempotency} (account_id, "key", fingerprint, webhook_id, created_at)
              VALUES (${webhook.accountId}, ${claim.key}, ${claim.fingerprint}, ${webhook.id}, ${Math.floor(webhook.createdAt)})
              ON CONFLICT (account_id, "key") DO UPDATE SET fingerprint = excluded.fingerprint,
                webhook_id = excluded.webhook_id, created_at = excluded.created_at`
          }
          yield* sql`INSERT INTO ${t.webhooks} ${sql.insert(encodeWebhook(webhook))}`
          return { _tag: "Created", webhook } as const
        })).pipe(persistence("createWebhook")),
      listWebhooks: (accountId) =>
        Effect.suspend(() => hasNul(accountId) ? Effect.succeed([]) : selectWebhooks(accountId)).pipe(
          persistence("listWebhooks")
        ),
      getWebhook: (accountId, id) =>
        Effect.suspend(() =>
          hasNul(accountId, id)
            ? Effect.succeedNone
            : selectWebhook(id).pipe(Effect.map(Option.filter((w) => w.accountId === accountId && w.deletedAt === null)))
        ).pipe(persistence("getWebhook")),
      getWebhookById: (id) =>
        Effect.suspend(() => hasNul(id) ? Effect.succeedNone : selectWebhook(id)).pipe(persistence("getWebhookById")),
      removeWebhook: (accountId, id, at) =>
        Effect.suspend(() =>
          hasNul(accountId, id)
            ? Effect.succeed([])
            : sql<Row>`UPDATE ${t.webhooks} SET deleted_at = ${Math.floor(at)}, enabled = 0
                WHERE id = ${id} AND account_id = ${accountId} AND deleted_at IS NULL RETURNING id`
        ).pipe(Effect.map((rows) => rows.length > 0), persistence("removeWebhook")),
      setEnabled: (id, enabled) =>
        Effect.asVoid(sql`UPDATE ${t.webhooks} SET enabled = ${enabled ? 1 : 0} WHERE id = ${id}`).pipe(persistence("setEnabled")),
      listDeliveries: (accountId, webhookId, query) =>
        Effect.gen(function*() {
          const limit = Math.max(0, Math.floor(query.limit))
          if (hasNul(accountId, webhookId, query.beforeId)) return { items: [], hasMore: false, total: 0 }
          const scope = sql`account_id = ${accountId} AND webhook_id = ${webhookId}`
          const page = query.beforeId === undefined ? scope : sql`${scope} AND id < ${query.beforeId}`
          const rows = yield* sql<Row>`SELECT * FROM ${t.deliveries} WHERE ${page} ORDER BY id DESC LIMIT ${limit + 1}`.pipe(
            Effect.flatMap(decodeAll(decodeDelivery))
          )
          const total = yield* sql<Row>`SELECT COUNT(*) AS n FROM ${t.deliveries} WHERE ${scope}`.pipe(
            Effect.flatMap(decodeAll((row) => numberOf(row, "n")))
          )
          return { items: rows.slice(0, limit), hasMore: rows.length > limit, total: total[0] ?? 0 }
        }).pipe(persistence("listDeliveries")),
      getDelivery: (accountId, webhookId, id) =>
        Effect.suspend(() =>
          hasNul(accountId, webhookId, id)
            ? Effect.succeedNone
            : sql<Row>`SELECT * FROM ${t.deliveries}
                WHERE id = ${id} AND account_id = ${accountId} AND webhook_id = ${webhookId}`.pipe(
              Effect.flatMap(decodeAll(decodeDelivery)),
              Effect.map((rows) => Option.fromNullable(rows[0]))
            )
        ).pipe(persistence("getDelivery")),
      deliveriesOfEvent: (eventId) =>
        sql<Row>`SELECT * FROM ${t.deliveries} WHERE event_id = ${eventId} ORDER BY id`.pipe(
          Effect.flatMap(decodeAll(decodeDelivery)),
          persistence("deliveriesOfEvent")
        ),
      addDelivery: (delivery, at, addOptions) =>
        sql.withTransaction(Effect.gen(function*() {
          const row = newRow(delivery, Math.floor(at))
          yield* insertDelivery(row)
          if (addOptions.enableWebhook && delivery.webhookId !== null) {
            yield* sql`UPDATE ${t.webhooks} SET enabled = 1 WHERE id = ${delivery.webhookId} AND deleted_at IS NULL`
          }
          return row
        })).pipe(persistence("addDelivery")),
      readCursor: sql<Row>`SELECT position FROM ${t.cursor} WHERE name = ${cursorName}`.pipe(
        Effect.flatMap(decodeAll((row) => stringOf(row, "position"))),
        Effect.map((rows) => rows[0]),
        persistence("readCursor")
      ),
      fanOut: (expected, next, entries, at) =>
        sql.withTransaction(Effect.gen(function*() {
          // the compare-and-set first: on PostgreSQL it locks the cursor row, so a concurrent dispatcher waits and
          // then finds the cursor moved
          const moved = expected === undefined
            ? yield* sql<Row>`INSERT INTO ${t.cursor} (name, position) VALUES (${cursorName}, ${next})
                ON CONFLICT (name) DO NOTHING RETURNING name`
            : yield* sql<Row>`UPDATE ${t.cursor} SET position = ${next}
                WHERE name = ${cursorName} AND position = ${expected} RETURNING name`
          if (moved.length === 0) return Option.none<number>()
          const accounts = [...new Set(entries.map((entry) => entry.accountId))]
          const webhooks = accounts.length === 0 ? [] : yield* sql<Row>`SELECT * FROM ${t.webhooks}
            WHERE ${sql.in("account_id", accounts)} AND deleted_at IS NULL AND enabled = 1`.pipe(
            Effect.flatMap(decodeAll(decodeWebhook))
          )
          const rows = entries.flatMap((entry) => deliveriesFor(entry, webhooks)).map((d) => newRow(d, Math.floor(at)))
          for (let i = 0; i < rows.length; i += 200) {
            yield* sql`INSERT INTO ${t.deliveries} ${sql.insert(rows.slice(i, i + 200).map(encodeDelivery))}`
          }
          return Option.some(rows.length)
        })).pipe(persistence("fanOut")),
      claimDue: (owner, limit, leaseMs, at) =>
        Effect.suspend(() => {
          const n = Math.max(0, Math.floor(limit))
          if (n === 0) return Effect.succeed([])
          const time = Math.floor(at)
          return sql<Row>`UPDATE ${t.deliveries} SET fence = fence + 1, lease_owner = ${owner},
              lease_expires_at = ${time + Math.floor(leaseMs)}
            WHERE id IN (
              SELECT id FROM ${t.deliveries}
              WHERE status = 'pending' AND next_attempt_at <= ${time}
                AND (lease_expires_at IS NULL OR lease_expires_at <= ${time})
              ORDER BY next_attempt_at, id
              LIMIT ${n}${sql.literal(pg ? " FOR UPDATE SKIP LOCKED" : "")}
            )
            RETURNING *`.pipe(
            Effect.flatMap(decodeAll(decodeDelivery)),
            Effect.map((rows) => rows.sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt! || (a.id < b.id ? -1 : 1)))
          )
        }).pipe(persistence("claimDue")),
      settle: (id, fence, attempt, settlement) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!Number.isSafeInteger(fence) || hasNul(id)) return false
          const current = yield* sql<Row>`SELECT * FROM ${t.deliveries}
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND status = 'pending'`.pipe(
            Effect.flatMap(decodeAll(decodeDelivery))
          )
          const row = current[0]
          if (row === undefined) return false
          const next = settled(row, attempt, settlement)
          const updated = yield* sql<Row>`UPDATE ${t.deliveries} SET attempts = ${next.attempts},
              last_status_code = ${next.lastStatusCode}, last_error = ${next.lastError}, status = ${next.status},
              next_attempt_at = ${next.nextAttemptAt}, lease_owner = NULL, lease_expires_at = NULL
            WHERE id = ${id} AND fence = ${fence} AND lease_owner IS NOT NULL AND status = 'pending' RETURNING id`
          if (updated.length === 0) return false
          if (attempt !== undefined) {
            yield* sql`INSERT INTO ${t.attempts} ${
              sql.insert({
                delivery_id: id,
                attempt: next.attempts,
                status_code: attempt.statusCode,
                error: attempt.error,
                duration_ms: Math.round(attempt.durationMs),
                response_excerpt: attempt.responseExcerpt,
                at: Math.floor(attempt.at)
              })
            }`
          }
          if (settlement.status === "failed" && settlement.disableWebhook === true && row.webhookId !== null) {
            yield* sql`UPDATE ${t.webhooks} SET enabled = 0 WHERE id = ${row.webhookId}`
          }
          return true
        })).pipe(persistence("settle")),
      attempts: (id) =>
        sql<Row>`SELECT * FROM ${t.attempts} WHERE delivery_id = ${id} ORDER BY attempt`.pipe(
          Effect.flatMap(decodeAll(decodeAttempt)),
          persistence("attempts")
        ),
      nextDueAt: sql<Row>`SELECT MIN(CASE WHEN lease_expires_at IS NOT NULL AND lease_expires_at > next_attempt_at
          THEN lease_expires_at ELSE next_attempt_at END) AS due
        FROM ${t.deliveries} WHERE status = 'pending' AND next_attempt_at IS NOT NULL`.pipe(
        Effect.flatMap(decodeAll((row) => numberOrNull(row, "due"))),
        Effect.map((rows) => Option.fromNullable(rows[0] ?? null)),
        persistence("nextDueAt")
      ),
      releaseAll: (owner) =>
        sql<Row>`UPDATE ${t.deliveries} SET lease_owner = NULL, lease_expires_at = NULL
          WHERE lease_owner = ${owner} AND status = 'pending' RETURNING id`.pipe(
          Effect.map((rows) => rows.length),
          persistence("releaseAll")
        )
    }
    return service
  })

/** The SQL storage as a layer (runs the migrations). */
export const layerSql = (
  options: SqlOptions = {}
): Layer.Layer<WebhookStore, SqlError | Migrator.MigrationError | PersistenceError, SqlClient.SqlClient> =>
  Layer.effect(WebhookStore, makeSql(options))
