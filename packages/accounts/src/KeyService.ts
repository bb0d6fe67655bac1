/**
 * The contract's `KeyService` on an {@link AccountStore}, an {@link IdempotencyStore} and billing's
 * `BillingAccounts`: authentication, key creation without escalation, listing and revocation (decisions.md §5).
 *
 * - Authentication reads ONE row (the key by its hash, through the unique index) and decides in the order of §5:
 *   header missing/empty → `AUTH_REQUIRED`; not `Bearer <mg_(live|test)_<32>>` or unknown hash → `AUTH_INVALID_TOKEN`;
 *   revoked → `KEY_REVOKED`; expired → `AUTH_TOKEN_EXPIRED`; client address outside a non-empty whitelist →
 *   `KEY_PERMISSION_DENIED`.
 * - Key rows may be cached for a short time (`cacheTtl`, off by default; the production server sets 5 s): a cached
 *   row spares the read, while revocation, expiry and the whitelist are still judged on every request. Revoking a
 *   key through this service drops it from this process's cache at once ({@link KeyCache} drops others); another
 *   process sees a revocation, or any other change to the row, within `cacheTtl`. Spend limits and balances are
 *   never read from the cache: billing checks them inside the transaction of each charge.
 * - `Principal.spentMicros` is not read on the hot path (it is billing's counter, checked atomically when a charge
 *   is made); authentication answers 0 there. Key creation reads the real counter through `BillingAccounts.keySpend`.
 * - Key tree (accounts.md "Key tree"): a key created through this service is derived from the calling key (parent
 *   and ancestors recorded; billing counts its spend against every ancestor's limit); its limits lie within the
 *   caller's (the IP whitelist inherited or narrowed); revoking a key revokes its descendants.
 * - Rate limits (security.md "Rate limits"): a key's own requests per minute and in-flight tasks (null: the
 *   configured defaults, `options.rateLimitDefaults`) ride on the principal; a derived key's lie within its parent's
 *   ({@link rateLimitWithin}). The limits themselves are enforced by the HTTP layer.
 * - `Idempotency-Key`: a record is the calling key's; the decision runs before any replay.
 * - `lastUsedAt` is not written per request: uses are buffered in memory (latest time per key) and written in one
 *   batch every `flushInterval` (default 10 s) and when the layer's scope closes. {@link KeyUsage} flushes on demand.
 *
 * @since 0.1.0
 */
import { BillingAccounts } from "@mediagate/billing/BillingAccounts"
import { ApiKey, Errors, Money, type Security, Services } from "@mediagate/contract"
import * as Ids from "@mediagate/persistence/Ids"
import type { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { AccountStore, type KeyRow } from "./AccountStore.js"
import * as Idempotency from "./Idempotency.js"
import * as Keys from "./Keys.js"

/**
 * The buffer of key uses (`lastUsedAt`).
 *
 * @since 0.1.0
 * @category services
 */
export class KeyUsage extends Context.Tag("@mediagate/accounts/KeyUsage")<KeyUsage, {
  /** Writes every buffered use in one batch. */
  readonly flush: Effect.Effect<void, PersistenceError>
  /** How many keys have a use waiting to be written. */
  readonly pending: Effect.Effect<number>
}>() {}

/**
 * The cache of key rows of this process (see {@link Options.cacheTtl}).
 *
 * @since 0.1.0
 * @category services
 */
export class KeyCache extends Context.Tag("@mediagate/accounts/KeyCache")<KeyCache, {
  /**
   * Drops a key and its descendants: their next requests read their rows again (revoking a key through the
   * service does this itself).
   */
  readonly invalidate: (keyId: string) => Effect.Effect<void>
  /** Drops every key. */
  readonly invalidateAll: Effect.Effect<void>
  /** How many keys are cached. */
  readonly size: Effect.Effect<number>
}>() {}

/**
 * Options of the key service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** How often buffered `lastUsedAt` values are written (default 10 s). */
  readonly flushInterval?: Duration.DurationInput
  /**
   * How long an authenticated key's row is reused before it is read again (default 0: every request reads it).
   * Revocation, expiry and the IP whitelist are judged on every request all the same. A revocation made through
   * this service takes effect at once in this process; other processes see it within this time.
   */
  readonly cacheTtl?: Duration.DurationInput
  /** How many keys the cache holds at most (default 10,000; the oldest entry makes room for a new one). */
  readonly cacheSize?: number
  /**
   * The server's default per-key rate limits (null or absent: unlimited), which apply to a key whose own limit is
   * null: the bound a key derived from such a key must stay within.
   */
  readonly rateLimitDefaults?: {
    readonly requestsPerMinute: number | null
    readonly maxInFlightTasks: number | null
  }
}

/**
 * The idempotency scope of key creation.
 *
 * @since 0.1.0
 * @category constants
 */
export const idempotencyScope = "api-keys"

/**
 * Maps storage failures to `SERVICE_UNAVAILABLE` (the cause is logged, never shown).
 *
 * @since 0.1.0
 * @category errors
 */
export const unavailable = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Extract<E, PersistenceError>> | Errors.ServiceUnavailable, R> =>
  Effect.catchIf(
    self,
    (e): e is Extract<E, PersistenceError> => Predicate.isTagged(e, "PersistenceError"),
    (e) =>
      Effect.zipRight(
        Effect.logWarning("accounts: storage failure", e),
        Effect.fail(new Errors.ServiceUnavailable({ message: "storage is unavailable, try again later" }))
      )
  )

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * A key row as the API shows it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toRecord = (
  row: KeyRow,
  spentMicros: number,
  lastUsedAt: number | null = row.lastUsedAt
): ApiKey.ApiKeyRecord => ({
  id: row.id,
  name: row.name,
  environment: row.environment,
  maskedKey: row.maskedKey,
  permissions: row.permissions,
  ipWhitelist: row.ipWhitelist,
  spendLimit: row.spendLimitMicros === null ? null : Money.fromMicros(row.spendLimitMicros),
  spent: Money.fromMicros(spentMicros),
  expiresAt: row.expiresAt === null ? null : iso(row.expiresAt),
  createdAt: iso(row.createdAt),
  lastUsedAt: lastUsedAt === null ? null : iso(lastUsedAt),
  rateLimit: { requestsPerMinute: row.requestsPerMinute, maxInFlightTasks: row.maxInFlightTasks }
})

/**
 * A new key, fully decided (rules already applied).
 *
 * @since 0.1.0
 * @category models
 */
export interface NewKey {
  readonly accountId: string
  readonly name: string
  readonly environment: ApiKey.Environment
  readonly permissions: ApiKey.Permissions
  readonly ipWhitelist: ReadonlyArray<string>
  readonly spendLimitMicros: number | null
  readonly expiresAt: number | null
  /** The key's requests per minute (absent or null: the configured default). */
  readonly requestsPerMinute?: number | null
  /** The key's most active tasks at once (absent or null: the configured default). */
  readonly maxInFlightTasks?: number | null
}

/**
 * The most keys above a derived key (a root's descendants reach ten levels); every charge writes each one's spend.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxAncestors = 9

/** A refusal of the key (`KEY_PERMISSION_DENIED`) saying why. */
const denied = (message: string) => new Errors.KeyPermissionDenied({ message })

/** The refusal of a derivation whose calling key (or an ancestor of it) was revoked meanwhile. */
const ancestorRevoked = () => denied("the calling key or one of its ancestors has been revoked")

/**
 * Stores a key derived by the last of `ancestors` (root first) and registers its spend limit and ancestors with
 * billing, in one transaction. It is stored only while every ancestor is unrevoked (their rows are locked against a
 * concurrent revocation, which then revokes the new key too): otherwise `KEY_PERMISSION_DENIED`.
 *
 * @since 0.1.0
 * @category utils
 */
export const insertDerivedKey = (
  key: NewKey,
  ancestors: ReadonlyArray<string>
): Effect.Effect<ApiKey.ApiKeyCreated, Errors.KeyPermissionDenied | PersistenceError, AccountStore | BillingAccounts> =>
  Effect.gen(function*() {
    const store = yield* AccountStore
    const billing = yield* BillingAccounts
    const now = yield* Clock.currentTimeMillis
    const full = Keys.generateKey(key.environment)
    const row: KeyRow = {
      id: `key_${Ids.ulid(now)}`,
      accountId: key.accountId,
      name: key.name,
      environment: key.environment,
      keyHash: Keys.hashKey(full),
      maskedKey: ApiKey.maskKey(full),
      permissions: key.permissions,
      ipWhitelist: key.ipWhitelist,
      spendLimitMicros: key.spendLimitMicros,
      expiresAt: key.expiresAt,
      createdAt: now,
      revokedAt: null,
      lastUsedAt: null,
      parentId: ancestors.length === 0 ? null : ancestors[ancestors.length - 1]!,
      ancestors,
      requestsPerMinute: key.requestsPerMinute ?? null,
      maxInFlightTasks: key.maxInFlightTasks ?? null
    }
    yield* store.transaction(Effect.gen(function*() {
      if (ancestors.length > 0 && !(yield* store.lockAncestors(key.accountId, ancestors))) {
        return yield* ancestorRevoked()
      }
      yield* store.insertKey(row)
      yield* billing.registerKey(key.accountId, row.id, key.spendLimitMicros, ancestors)
    }))
    return { ...toRecord(row, 0), key: full }
  })

/**
 * Stores a new root key (admin API, bootstrap) and registers its spend limit with billing, in one transaction;
 * answers the record and the full key (the only time it exists outside the client).
 *
 * @since 0.1.0
 * @category utils
 */
export const insertKey = (
  key: NewKey
): Effect.Effect<ApiKey.ApiKeyCreated, PersistenceError, AccountStore | BillingAccounts> =>
  insertDerivedKey(key, []).pipe(Effect.catchTag("KeyPermissionDenied", Effect.die))

/**
 * Refuses an `expiresAt` that is not in the future.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkNotPast = (expiresAt: Date | null | undefined, now: number) =>
  expiresAt !== undefined && expiresAt !== null && expiresAt.getTime() <= now
    ? Effect.fail(new Errors.ValidationError({ message: "expiresAt: must be in the future" }))
    : Effect.void

/** A value that is absent, null (none), or mapped by `f`. */
const mapPresent = <A, B>(value: A | null | undefined, f: (a: A) => B): B | null | undefined =>
  value === undefined ? undefined : value === null ? null : f(value)

/**
 * A limit of a new key within the calling key's `bound` (null: none): absent takes the bound; an explicit value,
 * none included, must lie within it (`refusal` says why not).
 */
const within = (value: number | null | undefined, bound: number | null, refusal: (bound: number) => string) =>
  bound === null
    ? Effect.succeed(value ?? null)
    : value === undefined
    ? Effect.succeed(bound)
    : value === null || value > bound
    ? Effect.fail(denied(refusal(bound)))
    : Effect.succeed(value)

/**
 * A rate limit of a derived key within its parent's (security.md "Rate limits"): `parent` is the parent's own value
 * (null: the configured default `fallback`, itself null when unlimited). Absent inherits the parent's value; null
 * (the default) is allowed when the default lies within the parent's bound; a number must not exceed the bound.
 *
 * @since 0.1.0
 * @category utils
 */
export const rateLimitWithin = (
  value: number | null | undefined,
  parent: number | null,
  fallback: number | null,
  field: string
): Effect.Effect<number | null, Errors.KeyPermissionDenied> => {
  if (value === undefined) return Effect.succeed(parent)
  const bound = parent ?? fallback
  if (bound === null) return Effect.succeed(value)
  const effective = value ?? fallback
  return effective !== null && effective <= bound
    ? Effect.succeed(value)
    : Effect.fail(denied(`rateLimit.${field}: must be at most ${bound} (the limit of the calling key)`))
}

/** The refusals of a known key's row. */
type Judged = Errors.KeyRevoked | Errors.AuthTokenExpired | Errors.KeyPermissionDenied

/** A cached key row: until when it may be reused, and its whitelist compiled. */
interface CachedKey {
  readonly row: KeyRow
  readonly until: number
  readonly allows: (clientAddress: string | undefined) => boolean
  readonly rateLimit: Security.Principal["rateLimit"]
}

/**
 * Builds the key service, its usage buffer (the flusher runs in the scope) and its cache.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<
  {
    readonly service: Services.KeyService["Type"]
    readonly usage: KeyUsage["Type"]
    readonly cache: KeyCache["Type"]
  },
  never,
  AccountStore | Idempotency.IdempotencyStore | BillingAccounts | Scope.Scope
> =>
  Effect.gen(function*() {
    const store = yield* AccountStore
    const billing = yield* BillingAccounts
    const context = yield* Effect.context<AccountStore | Idempotency.IdempotencyStore | BillingAccounts>()

    // ---- lastUsedAt buffer -----------------------------------------------------------------------------------
    let buffer = new Map<string, number>()
    const flush: Effect.Effect<void, PersistenceError> = Effect.suspend(() => {
      if (buffer.size === 0) return Effect.void
      const batch = buffer
      buffer = new Map()
      return store.touchKeys(batch).pipe(
        Effect.tapError(() =>
          Effect.sync(() => {
            // keep the uses for the next flush (the newest time wins)
            for (const [id, at] of batch) if ((buffer.get(id) ?? -Infinity) < at) buffer.set(id, at)
          })
        )
      )
    })
    const usage: KeyUsage["Type"] = { flush, pending: Effect.sync(() => buffer.size) }
    const interval = Duration.decode(options.flushInterval ?? "10 seconds")
    yield* flush.pipe(
      Effect.catchAll((e) => Effect.logWarning("accounts: lastUsedAt flush failed", e)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.delay(interval),
      Effect.interruptible,
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() =>
      Effect.catchAll(flush, (e) => Effect.logWarning("accounts: final flush failed", e))
    )

    // ---- key cache -------------------------------------------------------------------------------------------
    const ttl = Duration.toMillis(Duration.decode(options.cacheTtl ?? 0))
    const capacity = Math.max(0, Math.floor(options.cacheSize ?? 10_000))
    const caching = ttl > 0 && capacity > 0
    /** Key rows by key hash, oldest first. */
    const cached = new Map<string, CachedKey>()
    /** Bumped by every invalidation: a read that began before one must not fill the cache with what it read. */
    let epoch = 0
    const remember = (keyHash: string, row: KeyRow, now: number, readIn: number): CachedKey => {
      const entry: CachedKey = {
        row,
        until: now + ttl,
        allows: Keys.whitelist(row.ipWhitelist),
        rateLimit: row.requestsPerMinute === null && row.maxInFlightTasks === null
          ? undefined
          : { requestsPerMinute: row.requestsPerMinute, maxInFlightTasks: row.maxInFlightTasks }
      }
      if (caching && readIn === epoch) {
        cached.delete(keyHash)
        const oldest = cached.keys().next()
        if (cached.size >= capacity && oldest.done !== true) cached.delete(oldest.value)
        cached.set(keyHash, entry)
      }
      return entry
    }
    /** Drops a key and its descendants. */
    const invalidate = (keyId: string) => {
      epoch++
      for (const [keyHash, entry] of cached) {
        if (entry.row.id === keyId || entry.row.ancestors.includes(keyId)) cached.delete(keyHash)
      }
    }
    const cache: KeyCache["Type"] = {
      invalidate: (keyId) => Effect.sync(() => invalidate(keyId)),
      invalidateAll: Effect.sync(() => {
        epoch++
        cached.clear()
      }),
      size: Effect.sync(() => cached.size)
    }

    // ---- authenticate ------------------------------------------------------------------------------------------
    /** The decision of §5 on a key's row (revoked, expired, IP), and the principal. */
    const judge = (
      entry: CachedKey,
      clientAddress: string | undefined,
      now: number
    ): Effect.Effect<Security.Principal, Judged> => {
      const row = entry.row
      if (row.revokedAt !== null) return Effect.fail(new Errors.KeyRevoked({ message: "API key has been revoked" }))
      if (row.expiresAt !== null && row.expiresAt <= now) {
        return Effect.fail(new Errors.AuthTokenExpired({ message: "API key has expired" }))
      }
      if (!entry.allows(clientAddress)) {
        return Effect.fail(denied("IP address not allowed for this key"))
      }
      if ((buffer.get(row.id) ?? -Infinity) < now) buffer.set(row.id, now)
      const principal: Security.Principal = {
        accountId: row.accountId,
        keyId: row.id,
        environment: row.environment,
        permissions: row.permissions,
        spendLimitMicros: row.spendLimitMicros,
        spentMicros: 0,
        expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt),
        clientAddress,
        ...(entry.rateLimit === undefined ? undefined : { rateLimit: entry.rateLimit })
      }
      return Effect.succeed(principal)
    }

    const authenticate: Services.KeyService["Type"]["authenticate"] = ({ authorization, clientAddress }) => {
      if (authorization === undefined || authorization.trim() === "") {
        return Effect.fail(new Errors.AuthRequired({ message: "API key required: send Authorization: Bearer <key>" }))
      }
      const key = Keys.bearerKey(authorization)
      if (key === undefined) return Effect.fail(new Errors.AuthInvalidToken({ message: "malformed API key" }))
      const keyHash = Keys.hashKey(key)
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const hit = cached.get(keyHash)
        if (hit !== undefined) {
          if (hit.until > now) return judge(hit, clientAddress, now)
          cached.delete(keyHash)
        }
        const readIn = epoch
        return Effect.flatMap(
          unavailable(store.keyByHash(keyHash)),
          (found): Effect.Effect<Security.Principal, Errors.AuthInvalidToken | Judged> =>
            Option.isNone(found)
              ? Effect.fail(new Errors.AuthInvalidToken({ message: "unknown API key" }))
              : judge(remember(keyHash, found.value, now, readIn), clientAddress, now)
        )
      })
    }

    // ---- create ------------------------------------------------------------------------------------------------
    const decide = (caller: Security.Principal, body: ApiKey.ApiKeyCreate) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* checkNotPast(body.expiresAt, now)
        const own = yield* store.findKey(caller.accountId, caller.keyId)
        if (Option.isNone(own) || own.value.revokedAt !== null) return yield* ancestorRevoked()
        const parent = own.value
        if (parent.ancestors.length >= maxAncestors) {
          return yield* denied(`a key ${maxAncestors + 1} levels below its root cannot create keys`)
        }
        const environment = body.environment ?? caller.environment
        if (caller.environment === "test" && environment !== "test") {
          return yield* denied("environment: a test key can only create test keys")
        }
        // absent fields default to the caller's own bounds; explicit values must lie within them
        const permissions = body.permissions ?? caller.permissions
        if (!ApiKey.isWithin(permissions, caller.permissions)) {
          return yield* denied("permissions: must be within the permissions of the calling key")
        }
        const remaining = caller.spendLimitMicros === null
          ? null
          : Math.max(0, caller.spendLimitMicros - (yield* billing.keySpend(caller.keyId)).spentMicros)
        const spendLimitMicros = yield* within(
          mapPresent(body.spendLimit, Money.toMicros),
          remaining,
          (bound) =>
            `spendLimit: must be at most ${Money.fromMicros(bound)} (the remaining spend limit of the calling key)`
        )
        const expiresAt = yield* within(
          mapPresent(body.expiresAt, (date) => date.getTime()),
          caller.expiresAt?.getTime() ?? null,
          (bound) => `expiresAt: must not be later than the expiry of the calling key (${iso(bound)})`
        )
        // the whitelist is inherited when absent; an explicit one (empty: any address) must lie within it
        const ipWhitelist = body.ipWhitelist ?? parent.ipWhitelist
        if (!Keys.withinWhitelist(ipWhitelist, parent.ipWhitelist)) {
          return yield* denied("ipWhitelist: must be within the IP whitelist of the calling key")
        }
        const rateLimit = (field: "requestsPerMinute" | "maxInFlightTasks") =>
          rateLimitWithin(body.rateLimit?.[field], parent[field], options.rateLimitDefaults?.[field] ?? null, field)
        const requestsPerMinute = yield* rateLimit("requestsPerMinute")
        const maxInFlightTasks = yield* rateLimit("maxInFlightTasks")
        const key: NewKey = {
          accountId: caller.accountId,
          name: body.name,
          environment,
          permissions,
          ipWhitelist,
          spendLimitMicros,
          expiresAt,
          requestsPerMinute,
          maxInFlightTasks
        }
        return { key, ancestors: [...parent.ancestors, parent.id] }
      })

    // the decision runs first, on every request: a replay is answered only to the key that made the original
    // request (the record is the calling key's, see `Idempotency.run`) and only while it may still make it
    const create: Services.KeyService["Type"]["create"] = (caller, body, idempotencyKey) =>
      Effect.flatMap(decide(caller, body), ({ ancestors, key }) =>
        Idempotency.run({
          accountId: caller.accountId,
          callerKeyId: caller.keyId,
          scope: idempotencyScope,
          idempotencyKey,
          request: body,
          transaction: store.transaction,
          create: insertDerivedKey(key, ancestors),
          answer: ApiKey.ApiKeyCreated
        })).pipe(unavailable, Effect.provide(context))

    // ---- list, revoke ------------------------------------------------------------------------------------------
    const list: Services.KeyService["Type"]["list"] = (caller) =>
      Effect.gen(function*() {
        const rows = yield* store.listKeys(caller.accountId)
        return yield* Effect.forEach(rows, (row) =>
          Effect.map(billing.keySpend(row.id), (spend) => {
            const buffered = buffer.get(row.id)
            const lastUsedAt = buffered === undefined ? row.lastUsedAt : Math.max(buffered, row.lastUsedAt ?? buffered)
            return toRecord(row, spend.spentMicros, lastUsedAt)
          }), { concurrency: 8 })
      }).pipe(unavailable)

    const revoke: Services.KeyService["Type"]["revoke"] = (caller, id) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const revoked = yield* store.transaction(store.revokeKey(caller.accountId, id, now))
        if (!revoked) return yield* new Errors.ApiKeyNotFound({ message: `API key ${id} not found` })
        invalidate(id)
        return { id, deleted: true as const }
      }).pipe(unavailable)

    return { service: { authenticate, create, list, revoke }, usage, cache }
  })

/**
 * The key service, its usage buffer and its cache as a scoped layer (the last buffered uses are written on close).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  Services.KeyService | KeyUsage | KeyCache,
  never,
  AccountStore | Idempotency.IdempotencyStore | BillingAccounts
> =>
  Layer.scopedContext(
    Effect.map(make(options), ({ cache, service, usage }) =>
      Context.make(Services.KeyService, service).pipe(Context.add(KeyUsage, usage), Context.add(KeyCache, cache)))
  )
