/**
 * API keys: the key format, permissions, and the key record and creation Schemas (decisions.md §5).
 *
 * @since 0.1.0
 */
import * as Rec from "effect/Record"
import * as Schema from "effect/Schema"
import ipaddr from "ipaddr.js"
import { taskFamilies } from "./Catalog.js"
import { boolean, integer, list, oneOf, optional, strictParse, text } from "./Fields.js"
import * as Records from "./internal/records.js"
import { Usd } from "./Money.js"
import { IsoDate, Timestamp } from "./Timestamp.js"

/**
 * The fixed service word of every key.
 *
 * @since 0.1.0
 * @category constants
 */
export const keyPrefix = "mg"

/**
 * `live` keys are charged; `test` keys run in the free sandbox.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Environment = oneOf("live", "test").annotations({ identifier: "Environment" })
/**
 * Environment of a key.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Environment = typeof Environment.Type

/**
 * The shape of a full key: `mg_live_<32>` or `mg_test_<32>` with 32 characters of `[A-Za-z0-9]`.
 *
 * @since 0.1.0
 * @category constants
 */
export const keyPattern = /^mg_(live|test)_[A-Za-z0-9]{32}$/

/**
 * The environment of a well-formed key, or undefined for a malformed one.
 *
 * @since 0.1.0
 * @category utils
 */
export const environmentOfKey = (key: string): Environment | undefined => {
  const match = keyPattern.exec(key)
  return match === null ? undefined : match[1] === "live" ? "live" : "test"
}

/**
 * Permission names (decisions.md §5).
 *
 * @since 0.1.0
 * @category constants
 */
export const permissionNames = [
  "video:create",
  "image:create",
  "tasks:read",
  "tasks:write",
  "voices:read",
  "balance:read",
  "api-keys:write",
  "webhooks:write"
] as const
/**
 * A permission name.
 *
 * @since 0.1.0
 * @category models
 */
export type PermissionName = typeof permissionNames[number]

/**
 * Permissions of a key. Absent or `{}` means full access; otherwise only names set to `true` are granted, and
 * `providers` (when given) restricts the families a key may create tasks for.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Permissions = Schema.Struct({
  ...Rec.map(Records.indexBy(permissionNames, (name) => name), () => optional(boolean)),
  providers: optional(list(oneOf(...taskFamilies), { min: 0, max: taskFamilies.length, noun: "providers" }))
}).annotations({
  identifier: "Permissions",
  ...strictParse,
  description: "Absent or {} grants everything; otherwise only names set to true are granted"
})
/**
 * Permissions of a key.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Permissions = typeof Permissions.Type

/**
 * Whether permissions grant everything (absent or `{}`).
 *
 * @since 0.1.0
 * @category guards
 */
export const isFullAccess = (permissions: Permissions): boolean =>
  permissionNames.every((name) => permissions[name] === undefined) && permissions.providers === undefined

/**
 * Whether permissions grant one permission (and, when given, one provider).
 *
 * @since 0.1.0
 * @category utils
 */
export const grants = (permissions: Permissions, name: PermissionName, provider?: string): boolean => {
  if (isFullAccess(permissions)) return true
  const named = permissionNames.some((n) => permissions[n] !== undefined)
  if (named && permissions[name] !== true) return false
  return provider === undefined || permissions.providers === undefined ||
    permissions.providers.some((p) => p === provider)
}

/**
 * Whether `inner` grants nothing that `outer` does not (the no-escalation rule).
 *
 * @since 0.1.0
 * @category guards
 */
export const isWithin = (inner: Permissions, outer: Permissions): boolean => {
  if (isFullAccess(outer)) return true
  if (isFullAccess(inner)) return false
  const innerNamed = permissionNames.some((n) => inner[n] !== undefined)
  const names = innerNamed ? permissionNames.filter((n) => inner[n] === true) : permissionNames
  if (!names.every((name) => grants(outer, name))) return false
  const providers = outer.providers
  return providers === undefined || (inner.providers ?? taskFamilies).every((p) => providers.includes(p))
}

/**
 * An IPv4/IPv6 address or CIDR range.
 *
 * @since 0.1.0
 * @category schemas
 */
export const IpRange = Schema.String.pipe(
  Schema.filter((value) => ipaddr.isValid(value) || ipaddr.isValidCIDR(value) || "must be an IP address or CIDR range")
).annotations({ title: "IpRange", description: "IPv4/IPv6 address or CIDR range" })

/**
 * The largest per-key rate limit value (requests per minute, tasks in flight).
 *
 * @since 0.1.0
 * @category constants
 */
export const maxRateLimitValue = 1_000_000

/**
 * Extension: the rate limits of a key (security.md "Rate limits"). Absent or null: the server's configured default.
 * A derived key's limits lie within its creator's (absent inherits them).
 *
 * @since 0.1.0
 * @category schemas
 */
export const KeyRateLimit = Schema.Struct({
  requestsPerMinute: optional(
    Schema.NullOr(integer(1, maxRateLimitValue)).annotations({
      description: "Requests per minute of this key (null: the configured default)"
    })
  ),
  maxInFlightTasks: optional(
    Schema.NullOr(integer(1, maxRateLimitValue)).annotations({
      description: "Tasks of this key pending, queued or running at once (null: the configured default)"
    })
  )
}).annotations({
  identifier: "KeyRateLimit",
  ...strictParse,
  description: "Extension: per-key rate limits; absent or null takes the configured default"
})
/**
 * The rate limits of a key as given.
 *
 * @since 0.1.0
 * @category schemas
 */
export type KeyRateLimit = typeof KeyRateLimit.Type

/**
 * The rate limits stored with a key (null: the configured default applies).
 *
 * @since 0.1.0
 * @category schemas
 */
export const KeyRateLimitRecord = Schema.Struct({
  requestsPerMinute: Schema.NullOr(Schema.Number),
  maxInFlightTasks: Schema.NullOr(Schema.Number)
}).annotations({
  identifier: "KeyRateLimitRecord",
  description: "Extension: the key's own rate limits (null: the configured default applies)"
})
/**
 * The rate limits stored with a key.
 *
 * @since 0.1.0
 * @category schemas
 */
export type KeyRateLimitRecord = typeof KeyRateLimitRecord.Type

/**
 * Body of `POST /api/v1/api-keys` (and of the admin key creation).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApiKeyCreate = Schema.Struct({
  name: text(100, 1),
  spendLimit: optional(Schema.NullOr(Usd).annotations({ description: "Maximum spend of the key in USD" })),
  expiresAt: optional(Schema.NullOr(IsoDate).annotations({ description: "Expiry (ISO 8601)" })),
  permissions: optional(Permissions),
  ipWhitelist: optional(list(IpRange, { min: 0, max: 100, noun: "entries" })),
  environment: optional(Environment.annotations({ description: "Extension; default: the calling key's" })),
  rateLimit: optional(KeyRateLimit)
}).annotations({ identifier: "ApiKeyCreate", ...strictParse })
/**
 * Body of `POST /api/v1/api-keys`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ApiKeyCreate = typeof ApiKeyCreate.Type

/**
 * An API key record (never the full key).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApiKeyRecord = Schema.Struct({
  id: Schema.String.annotations({ description: "`key_` + ULID" }),
  name: Schema.String,
  environment: Environment,
  maskedKey: Schema.String.annotations({ description: "e.g. mg_live_AbCd…wXyZ" }),
  permissions: Permissions,
  ipWhitelist: Schema.Array(Schema.String),
  spendLimit: Schema.NullOr(Schema.Number),
  spent: Schema.Number,
  expiresAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  lastUsedAt: Schema.NullOr(Timestamp),
  rateLimit: KeyRateLimitRecord
}).annotations({ identifier: "ApiKeyRecord" })
/**
 * An API key record.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ApiKeyRecord = typeof ApiKeyRecord.Type

/**
 * The answer of key creation: the record plus the full key, shown only once.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApiKeyCreated = Schema.Struct({
  ...ApiKeyRecord.fields,
  key: Schema.String.annotations({ description: "The full key; shown only in this response" })
}).annotations({ identifier: "ApiKeyCreated" })
/**
 * The answer of key creation.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ApiKeyCreated = typeof ApiKeyCreated.Type

/**
 * The masked form of a key: prefix, environment and the first and last four random characters.
 *
 * @since 0.1.0
 * @category utils
 */
export const maskKey = (key: string): string => {
  const env = environmentOfKey(key) ?? "live"
  const random = key.slice(`${keyPrefix}_${env}_`.length)
  return `${keyPrefix}_${env}_${random.slice(0, 4)}…${random.slice(-4)}`
}
