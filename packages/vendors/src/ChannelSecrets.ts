/**
 * A channel's credentials at rest (docs/channels.md "Credentials at rest"): AES-256-GCM under the key of
 * `MEDIAGATE_CHANNEL_KEY`, which never reaches the database.
 *
 * - **The key**: 32 bytes as 64 hex characters or as base64 (standard or URL alphabet, padded or not), or any
 *   passphrase of at least 16 characters, stretched with scrypt (N 2^15, r 8, p 1; the fixed salt
 *   `mediagate channel credentials`). Its id is the first 8 hex characters of the SHA-256 of the 32 key bytes.
 * - **Rotation**: `MEDIAGATE_CHANNEL_KEY_PREVIOUS` (optional) only decrypts. A write re-encrypts the credentials it
 *   keeps with the current key (`ChannelStore.update` does so on every change of a channel).
 * - **Format** (versioned): `v1.<key id>.<iv>.<tag>.<ciphertext>`, the last three base64url; the plaintext is the
 *   credentials as JSON (`{"api_key":"..."}`), and the channel id is authenticated with it (a ciphertext copied to
 *   another channel's row does not decrypt there).
 * - **Without a key** nothing can be written with credentials; a channel whose stored credentials no configured key
 *   opens (key missing, changed, or a corrupt value) is read as disabled, with empty credentials and the reason in
 *   `disabledReason` ({@link openStored}): nothing crashes, and nothing is written back.
 *
 * The second half of the module is what both channel stores share: the stored form of a channel
 * ({@link StoredChannel}: sealed credentials and the clear hint) and the steps between it and `ChannelConfig`.
 *
 * @since 0.1.0
 */
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from "node:crypto"
import type { ChannelConfig, ChannelInput, ChannelPatch } from "./ChannelStore.js"

// -----------------------------------------------------------------------------------------------------------------
// keys
// -----------------------------------------------------------------------------------------------------------------

/**
 * The version tag of the stored format.
 *
 * @since 0.1.0
 * @category constants
 */
export const formatVersion = "v1"

/** The salt of a passphrase's scrypt and the authenticated prefix of every ciphertext. */
const label = "mediagate channel credentials"

/**
 * What a key setting must be, for error messages.
 *
 * @since 0.1.0
 * @category constants
 */
export const keyRule =
  "must be 32 bytes as 64 hex characters or base64, or a passphrase of at least 16 characters (docs/channels.md)"

/**
 * An encryption key: its 32 bytes and its id.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChannelKey {
  /** First 8 hex characters of the SHA-256 of the key bytes: names the key in stored values without revealing it. */
  readonly id: string
  readonly bytes: Buffer
}

const keyOf = (bytes: Buffer): ChannelKey => ({
  id: createHash("sha256").update(bytes).digest("hex").slice(0, 8),
  bytes
})

const base64Key = (text: string): Buffer | undefined => {
  if (!/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(text)) return undefined
  const bytes = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64")
  return bytes.length === 32 ? bytes : undefined
}

/**
 * The key of a setting: 64 hex characters, 32 bytes of base64, or a passphrase of at least 16 characters (scrypt).
 * Fails with {@link keyRule} otherwise.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseKey = (text: string): Either.Either<ChannelKey, string> => {
  const trimmed = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Either.right(keyOf(Buffer.from(trimmed, "hex")))
  const decoded = base64Key(trimmed)
  if (decoded !== undefined) return Either.right(keyOf(decoded))
  if (text.length >= 16) {
    return Either.right(keyOf(scryptSync(text, label, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })))
  }
  return Either.left(keyRule)
}

// -----------------------------------------------------------------------------------------------------------------
// sealing
// -----------------------------------------------------------------------------------------------------------------

/**
 * Why credentials cannot be sealed or opened.
 *
 * @since 0.1.0
 * @category errors
 */
export class ChannelSecretError extends Schema.TaggedError<ChannelSecretError>()("ChannelSecretError", {
  /** `no-key`: no (current) key configured; `unknown-key`: sealed by a key not configured; `corrupt`: does not open. */
  reason: Schema.Literal("no-key", "unknown-key", "corrupt"),
  message: Schema.String
}) {}

/**
 * The message refusing credentials without a key (the admin API answers it as a `VALIDATION_ERROR`).
 *
 * @since 0.1.0
 * @category constants
 */
export const noKeyMessage = "channel credentials need MEDIAGATE_CHANNEL_KEY (docs/channels.md)"

/**
 * A sealed value opened: its plaintext and the id of the key that opened it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Opened {
  readonly plaintext: string
  readonly keyId: string
}

/**
 * Sealing and opening credentials with the configured keys.
 *
 * @since 0.1.0
 * @category models
 */
export interface Secrets {
  /** Id of the current key (writes use it); null without `MEDIAGATE_CHANNEL_KEY`. */
  readonly keyId: string | null
  /** Encrypts `plaintext` for the record `context` (the channel id) with the current key. */
  readonly seal: (plaintext: string, context: string) => Either.Either<string, ChannelSecretError>
  /** Decrypts a sealed value of the record `context` with whichever configured key sealed it. */
  readonly open: (sealed: string, context: string) => Either.Either<Opened, ChannelSecretError>
}

const b64 = (bytes: Buffer) => bytes.toString("base64url")

const aad = (context: string) => Buffer.from(`${label} ${formatVersion} ${context}`, "utf8")

/**
 * The {@link Secrets} of a current key (none: nothing can be sealed) and older keys that still open values.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeSecrets = (current: ChannelKey | undefined, previous: ReadonlyArray<ChannelKey> = []): Secrets => {
  const keys = new Map<string, ChannelKey>()
  for (const key of [...(current === undefined ? [] : [current]), ...previous]) {
    if (!keys.has(key.id)) keys.set(key.id, key)
  }
  const corrupt = new ChannelSecretError({ reason: "corrupt", message: "the stored value is corrupt or was altered" })
  return {
    keyId: current?.id ?? null,
    seal: (plaintext, context) => {
      if (current === undefined) return Either.left(new ChannelSecretError({ reason: "no-key", message: noKeyMessage }))
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", current.bytes, iv)
      cipher.setAAD(aad(context))
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return Either.right([formatVersion, current.id, b64(iv), b64(cipher.getAuthTag()), b64(ciphertext)].join("."))
    },
    open: (sealed, context) => {
      const parts = sealed.split(".")
      if (parts.length !== 5 || parts[0] !== formatVersion) return Either.left(corrupt)
      const [, keyId, iv, tag, ciphertext] = parts as [string, string, string, string, string]
      const key = keys.get(keyId)
      if (key === undefined) {
        return Either.left(
          new ChannelSecretError({
            reason: keys.size === 0 ? "no-key" : "unknown-key",
            message: keys.size === 0
              ? `they were encrypted with key ${keyId} and MEDIAGATE_CHANNEL_KEY is not set`
              : `they were encrypted with key ${keyId}, which is neither MEDIAGATE_CHANNEL_KEY (${
                current?.id ?? "not set"
              }) ` +
                `nor MEDIAGATE_CHANNEL_KEY_PREVIOUS`
          })
        )
      }
      try {
        const decipher = createDecipheriv("aes-256-gcm", key.bytes, Buffer.from(iv, "base64url"))
        decipher.setAAD(aad(context))
        decipher.setAuthTag(Buffer.from(tag, "base64url"))
        const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()])
        return Either.right({ plaintext: plaintext.toString("utf8"), keyId: key.id })
      } catch {
        return Either.left(corrupt)
      }
    }
  }
}

/**
 * The key settings: `MEDIAGATE_CHANNEL_KEY` and `MEDIAGATE_CHANNEL_KEY_PREVIOUS` (blank counts as not set).
 *
 * @since 0.1.0
 * @category models
 */
export interface KeySettings {
  readonly current: Option.Option<Redacted.Redacted<string>>
  readonly previous: Option.Option<Redacted.Redacted<string>>
}

/**
 * {@link KeySettings} from Effect `Config`.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<KeySettings> = Config.all({
  current: Config.option(Config.redacted("MEDIAGATE_CHANNEL_KEY")),
  previous: Config.option(Config.redacted("MEDIAGATE_CHANNEL_KEY_PREVIOUS"))
})

const settingKey = (name: string, value: Option.Option<Redacted.Redacted<string>>) =>
  Effect.suspend(() => {
    if (Option.isNone(value) || Redacted.value(value.value).trim() === "") return Effect.succeed(undefined)
    return Either.match(parseKey(Redacted.value(value.value)), {
      onLeft: (rule) => Effect.fail(ConfigError.InvalidData([name], rule)),
      onRight: (key) => Effect.succeed(key)
    })
  })

/**
 * The {@link Secrets} of key settings; a key that is not a key fails with a `ConfigError` naming its variable.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromSettings = (settings: KeySettings): Effect.Effect<Secrets, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    const current = yield* settingKey("MEDIAGATE_CHANNEL_KEY", settings.current)
    const previous = yield* settingKey("MEDIAGATE_CHANNEL_KEY_PREVIOUS", settings.previous)
    return makeSecrets(current, previous === undefined ? [] : [previous])
  })

/**
 * The configured {@link Secrets} of the channel stores.
 *
 * @since 0.1.0
 * @category services
 */
export class ChannelSecrets extends Context.Tag("@mediagate/vendors/ChannelSecrets")<ChannelSecrets, Secrets>() {}

/**
 * {@link ChannelSecrets} of the given keys (text as in the environment; absent: not set).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  keys: { readonly current?: string | undefined; readonly previous?: string | undefined } = {}
): Layer.Layer<
  ChannelSecrets,
  ConfigError.ConfigError
> =>
  Layer.effect(
    ChannelSecrets,
    fromSettings({
      current: Option.map(Option.fromNullable(keys.current), Redacted.make),
      previous: Option.map(Option.fromNullable(keys.previous), Redacted.make)
    })
  )

/**
 * {@link ChannelSecrets} from `MEDIAGATE_CHANNEL_KEY` and `MEDIAGATE_CHANNEL_KEY_PREVIOUS`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<ChannelSecrets, ConfigError.ConfigError> = Layer.effect(
  ChannelSecrets,
  Effect.flatMap(config, fromSettings)
)

// -----------------------------------------------------------------------------------------------------------------
// stored channels
// -----------------------------------------------------------------------------------------------------------------

/**
 * A channel as the stores keep it: its credentials sealed, and their hint in clear.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredChannel extends Omit<ChannelConfig, "credentials" | "credentialsHint"> {
  /** The sealed credentials ({@link Secrets.seal}), or null. */
  readonly credentials: string | null
  readonly credentialsHint: string | null
}

/**
 * The hint of an API key: `…` and its last 4 characters (only `…` below 12 characters: too much of a short key).
 *
 * @since 0.1.0
 * @category utils
 */
export const hintOf = (apiKey: string): string => apiKey.length >= 12 ? `…${apiKey.slice(-4)}` : "…"

/**
 * Seals a channel's credentials (none: null) with their hint.
 *
 * @since 0.1.0
 * @category utils
 */
export const sealCredentials = (
  secrets: Secrets,
  id: string,
  credentials: ChannelConfig["credentials"] | null | undefined
): Either.Either<{ readonly sealed: string | null; readonly hint: string | null }, ChannelSecretError> => {
  if (credentials?.apiKey === undefined) return Either.right({ sealed: null, hint: null })
  const apiKey = Redacted.value(credentials.apiKey)
  return Either.map(
    secrets.seal(JSON.stringify({ api_key: apiKey }), id),
    (sealed) => ({ sealed, hint: hintOf(apiKey) })
  )
}

/**
 * Opens sealed credentials (the JSON of {@link sealCredentials}).
 *
 * @since 0.1.0
 * @category utils
 */
export const openCredentials = (
  secrets: Secrets,
  id: string,
  sealed: string
): Either.Either<{ readonly credentials: ChannelConfig["credentials"]; readonly keyId: string }, ChannelSecretError> =>
  Either.flatMap(secrets.open(sealed, id), ({ keyId, plaintext }) => {
    try {
      const parsed: unknown = JSON.parse(plaintext)
      if (typeof parsed === "object" && parsed !== null) {
        const apiKey = (parsed as { readonly api_key?: unknown }).api_key
        return Either.right({
          credentials: typeof apiKey === "string" ? { apiKey: Redacted.make(apiKey) } : {},
          keyId
        })
      }
    } catch {
      // not JSON: below
    }
    return Either.left(new ChannelSecretError({ reason: "corrupt", message: "the stored value is not credentials" }))
  })

/**
 * A write a channel store refuses for the credentials (no key to seal them), as the failure of its `operation`.
 *
 * @since 0.1.0
 * @category utils
 */
export const refused = (operation: string) => (error: ChannelSecretError) =>
  new PersistenceError({ message: `channel storage: ${operation} failed: ${error.message}`, cause: error })

/**
 * The `disabledReason` of a channel whose credentials cannot be decrypted.
 *
 * @since 0.1.0
 * @category utils
 */
export const unreadableReason = (error: ChannelSecretError): string =>
  `its credentials cannot be decrypted: ${error.message}; set the key that wrote them, or write new credentials ` +
  `(docs/channels.md)`

/**
 * A stored channel as the router and the admin service read it: credentials opened; when they cannot be, empty
 * credentials, `enabled: false` and the reason (the stored row is left as it is).
 *
 * @since 0.1.0
 * @category utils
 */
export const openStored = (secrets: Secrets, stored: StoredChannel): ChannelConfig => {
  const base = { ...stored }
  if (stored.credentials === null) return { ...base, credentials: {} }
  const opened = openCredentials(secrets, stored.id, stored.credentials)
  return Either.isRight(opened)
    ? { ...base, credentials: opened.right.credentials }
    : { ...base, credentials: {}, enabled: false, disabledReason: unreadableReason(opened.left) }
}

/**
 * A new channel as stored (`id` and `now` given by the store).
 *
 * @since 0.1.0
 * @category utils
 */
export const storeInput = (
  secrets: Secrets,
  id: string,
  input: ChannelInput,
  now: number
): Either.Either<StoredChannel, ChannelSecretError> =>
  Either.map(sealCredentials(secrets, id, input.credentials), ({ hint, sealed }) => ({
    id,
    name: input.name,
    transport: input.transport,
    settings: input.settings ?? {},
    credentials: sealed,
    credentialsHint: hint,
    families: input.families,
    models: input.models ?? [],
    priority: input.priority ?? 0,
    weight: input.weight ?? 1,
    concurrency: input.concurrency ?? 0,
    enabled: input.enabled ?? true,
    disabledReason: input.enabled === false ? input.disabledReason ?? null : null,
    createdAt: now,
    updatedAt: now
  }))

/**
 * A stored channel changed by `patch` at `now`: the fields given replace theirs; `enabled: true` clears the
 * reason; credentials kept are re-encrypted with the current key when an older key sealed them (rotation), and
 * left as they are when they cannot be opened. `updatedAt` always moves forward (at least 1 ms), so that the
 * router sees every change.
 *
 * @since 0.1.0
 * @category utils
 */
export const storePatch = (
  secrets: Secrets,
  stored: StoredChannel,
  patch: ChannelPatch,
  now: number
): Either.Either<StoredChannel, ChannelSecretError> => {
  const credentials: Either.Either<
    { readonly sealed: string | null; readonly hint: string | null },
    ChannelSecretError
  > = patch.credentials !== undefined
    ? sealCredentials(secrets, stored.id, patch.credentials)
    : (() => {
      const kept = { sealed: stored.credentials, hint: stored.credentialsHint }
      if (stored.credentials === null || secrets.keyId === null) return Either.right(kept)
      const opened = openCredentials(secrets, stored.id, stored.credentials)
      if (Either.isLeft(opened) || opened.right.keyId === secrets.keyId) return Either.right(kept)
      return Either.map(
        sealCredentials(secrets, stored.id, opened.right.credentials),
        ({ sealed }) => ({ sealed, hint: stored.credentialsHint })
      )
    })()
  return Either.map(credentials, ({ hint, sealed }) => ({
    ...stored,
    ...MemoryStore.given(patch, ["name", "settings", "families", "models", "priority", "weight", "concurrency"]),
    credentials: sealed,
    credentialsHint: hint,
    enabled: patch.enabled ?? stored.enabled,
    disabledReason: patch.enabled === true
      ? null
      : patch.disabledReason !== undefined
      ? patch.disabledReason
      : stored.disabledReason,
    updatedAt: Math.max(now, stored.updatedAt + 1)
  }))
}
