/**
 * `Idempotency-Key` on creating POSTs, reusable by every resource that creates something (API keys today): the
 * shared window and rule of `IdempotencyWindow` (the same key with the same body within 24 h replays the original
 * answer, another body is `409 IDEMPOTENCY_KEY_REUSED`).
 *
 * A record belongs to the API key that made the request ({@link RunOptions.callerKeyId}, part of the record's
 * scope): only that key is ever answered a replay, and another key of the account sending the same Idempotency-Key
 * makes a request of its own (judged and authorized as any other). The caller runs its authorization before
 * {@link run}, so a replay also goes only to a key that may still make the request.
 *
 * Stored answers may carry secrets (a full API key, a webhook secret), so nothing readable is stored:
 * - the lookup column `key_hash` is the SHA-256 hex of the Idempotency-Key, never the key itself;
 * - the answer is sealed with AES-256-GCM under a key derived with HKDF-SHA256 from the Idempotency-Key itself
 *   (salt: account and scope), with the row's identity as additional data. The database alone cannot reveal it:
 *   only a client that presents the Idempotency-Key again can have it opened. (Its strength is the entropy of the
 *   Idempotency-Key: clients should use random keys such as UUIDs.)
 *
 * The port {@link IdempotencyStore} and its memory implementation live here; the SQL one (table
 * `<prefix>idempotent_responses`, created by the accounts migrations) in `SqlAccounts`.
 *
 * @since 0.1.0
 */
import { Errors } from "@mediagate/contract"
import * as IdempotencyWindow from "@mediagate/persistence/IdempotencyWindow"
import * as MemoryStore from "@mediagate/persistence/MemoryStore"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import * as SqlRows from "@mediagate/persistence/SqlRows"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto"

/**
 * A stored (sealed) answer: a row of `<prefix>idempotent_responses` in SQL.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StoredResponse = Schema.Struct({
  accountId: SqlRows.column("account_id", Schema.String),
  scope: Schema.String,
  /** SHA-256 hex of the Idempotency-Key. */
  keyHash: SqlRows.column("key_hash", Schema.String),
  /** SHA-256 hex of the canonical request. */
  fingerprint: Schema.String,
  /** `v1.` + base64 of IV (12) | tag (16) | AES-256-GCM ciphertext. */
  ciphertext: Schema.String,
  createdAt: SqlRows.column("created_at", SqlRows.Number)
})
/**
 * A stored (sealed) answer.
 *
 * @since 0.1.0
 * @category schemas
 */
export interface StoredResponse extends Schema.Schema.Type<typeof StoredResponse> {}

/**
 * Storage of sealed answers.
 *
 * @since 0.1.0
 * @category services
 */
export class IdempotencyStore extends Context.Tag("@mediagate/accounts/IdempotencyStore")<IdempotencyStore, {
  /** The record of a key in an account and scope, expired or not. */
  readonly find: (
    accountId: string,
    scope: string,
    keyHash: string
  ) => Effect.Effect<Option.Option<StoredResponse>, PersistenceError>
  /**
   * Stores an answer; false when a record created after `expiredBefore` already holds the key (a concurrent request
   * won). A record created at or before `expiredBefore` has expired and is replaced.
   */
  readonly insert: (record: StoredResponse, expiredBefore: number) => Effect.Effect<boolean, PersistenceError>
  /** Deletes records created before `before`; answers how many. */
  readonly prune: (before: number) => Effect.Effect<number, PersistenceError>
}>() {}

// -----------------------------------------------------------------------------------------------------------------
// hashing and sealing
// -----------------------------------------------------------------------------------------------------------------

const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex")

/**
 * The lookup hash of an Idempotency-Key.
 *
 * @since 0.1.0
 * @category utils
 */
export const hashKey = (idempotencyKey: string): string => sha256(`mediagate-idempotency-key:${idempotencyKey}`)

const canonical = (value: unknown): unknown => {
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)])
    )
  }
  return value
}

/**
 * The fingerprint of a request: SHA-256 of its canonical JSON (sorted keys, dates as ISO strings).
 *
 * @since 0.1.0
 * @category utils
 */
export const fingerprint = (request: unknown): string => sha256(JSON.stringify(canonical(request)))

const deriveKey = (idempotencyKey: string, accountId: string, scope: string): Buffer =>
  Buffer.from(hkdfSync(
    "sha256",
    Buffer.from(idempotencyKey, "utf8"),
    Buffer.from(`mediagate-idempotency:${accountId}:${scope}`, "utf8"),
    Buffer.from("idempotent-response aes-256-gcm v1", "utf8"),
    32
  ))

const aad = (accountId: string, scope: string, keyHash: string, fp: string) =>
  Buffer.from(`${accountId}\n${scope}\n${keyHash}\n${fp}`, "utf8")

/**
 * Seals an answer under the Idempotency-Key.
 *
 * @since 0.1.0
 * @category utils
 */
export const seal = (
  idempotencyKey: string,
  identity: {
    readonly accountId: string
    readonly scope: string
    readonly keyHash: string
    readonly fingerprint: string
  },
  plaintext: string
): string => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", deriveKey(idempotencyKey, identity.accountId, identity.scope), iv)
  cipher.setAAD(aad(identity.accountId, identity.scope, identity.keyHash, identity.fingerprint))
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`
}

/**
 * Opens a sealed answer; undefined when it does not open (wrong key, tampered).
 *
 * @since 0.1.0
 * @category utils
 */
export const open = (idempotencyKey: string, record: StoredResponse): string | undefined => {
  try {
    if (!record.ciphertext.startsWith("v1.")) return undefined
    const bytes = Buffer.from(record.ciphertext.slice(3), "base64")
    const decipher = createDecipheriv(
      "aes-256-gcm",
      deriveKey(idempotencyKey, record.accountId, record.scope),
      bytes.subarray(0, 12)
    )
    decipher.setAAD(aad(record.accountId, record.scope, record.keyHash, record.fingerprint))
    decipher.setAuthTag(bytes.subarray(12, 28))
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

// -----------------------------------------------------------------------------------------------------------------
// running a creation idempotently
// -----------------------------------------------------------------------------------------------------------------

/** A concurrent request stored its answer between our lookup and our insert: ours is rolled back and replayed. */
class Race extends Schema.TaggedError<Race>()("IdempotencyRace", {}) {}

/**
 * What {@link run} needs to know about one creation.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions<A, I, E, R> {
  readonly accountId: string
  /**
   * The API key making the request: the record is that key's alone (stored under the scope `<scope>:<key id>`),
   * so no other key is ever answered its replay. Absent: the record is the account's.
   */
  readonly callerKeyId?: string | undefined
  /** The kind of creation, e.g. `api-keys` or `webhooks`. */
  readonly scope: string
  readonly idempotencyKey: string | undefined
  /** The request as received (its fingerprint decides "same body"). */
  readonly request: unknown
  /** The creation; runs inside `transaction` together with the insert of its sealed answer. */
  readonly create: Effect.Effect<A, E, R>
  /** The Schema of the answer: it is stored (sealed) as the JSON of its encoded form and replayed decoded. */
  readonly answer: Schema.Schema<A, I>
  /** A transaction of the store the creation writes to (identity for memory stores). */
  readonly transaction: <X, Y, Z>(self: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y | PersistenceError, Z>
}

/**
 * Runs a creation under an Idempotency-Key (none: just runs it), by the shared rule of `IdempotencyWindow`. The
 * answer is stored as the JSON of its `answer` encoding.
 *
 * @since 0.1.0
 * @category utils
 */
export const run = <A, I, E, R>(
  options: RunOptions<A, I, E, R>
): Effect.Effect<A, E | Errors.IdempotencyKeyReused | PersistenceError, R | IdempotencyStore> => {
  const idempotencyKey = options.idempotencyKey
  if (idempotencyKey === undefined) return options.create
  const json = Schema.parseJson(options.answer)
  return Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const keyHash = hashKey(idempotencyKey)
    const fp = fingerprint(options.request)
    const scope = options.callerKeyId === undefined ? options.scope : `${options.scope}:${options.callerKeyId}`
    const identity = { accountId: options.accountId, scope, keyHash, fingerprint: fp }

    const replay = (now: number) =>
      Effect.gen(function*() {
        const record = Option.getOrUndefined(yield* store.find(options.accountId, scope, keyHash))
        const verdict = IdempotencyWindow.judge(record, { fingerprint: fp, notBefore: IdempotencyWindow.start(now) })
        if (verdict === "Reused") {
          return yield* new Errors.IdempotencyKeyReused({ message: IdempotencyWindow.reusedMessage })
        }
        if (verdict === "Fresh" || record === undefined) return Option.none<A>()
        const plaintext = open(idempotencyKey, record)
        if (plaintext === undefined) {
          return yield* new PersistenceError({ message: "idempotent_responses: a stored answer does not open" })
        }
        return Option.some(
          yield* Schema.decode(json)(plaintext).pipe(
            Effect.mapError((cause) =>
              new PersistenceError({ message: "idempotent_responses: a stored answer does not decode", cause })
            )
          )
        )
      })

    const attempt = (tries: number): Effect.Effect<A, E | Errors.IdempotencyKeyReused | PersistenceError, R> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const previous = yield* replay(now)
        if (Option.isSome(previous)) return previous.value
        return yield* options.transaction(Effect.gen(function*() {
          const answer = yield* options.create
          const plaintext = yield* Schema.encode(json)(answer).pipe(
            Effect.mapError((cause) =>
              new PersistenceError({ message: "idempotency: the answer does not encode", cause })
            )
          )
          const inserted = yield* store.insert({
            ...identity,
            ciphertext: seal(idempotencyKey, identity, plaintext),
            createdAt: now
          }, IdempotencyWindow.start(now))
          if (!inserted) return yield* new Race()
          return answer
        })).pipe(
          Effect.catchIf(
            (e): e is Race => e instanceof Race,
            () => tries > 0 ? attempt(tries - 1) : new PersistenceError({ message: "idempotency: lost the race twice" })
          )
        )
      })
    return yield* attempt(2)
  })
}

// -----------------------------------------------------------------------------------------------------------------
// the memory store (the SQL one is in `SqlAccounts`)
// -----------------------------------------------------------------------------------------------------------------

/**
 * The memory store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): IdempotencyStore["Type"] => {
  const records = new Map<string, StoredResponse>()
  const id = (accountId: string, scope: string, keyHash: string) => `${accountId}\n${scope}\n${keyHash}`
  return {
    find: (accountId, scope, keyHash) =>
      Effect.sync(() => Option.fromNullable(records.get(id(accountId, scope, keyHash)))),
    insert: (record, expiredBefore) =>
      Effect.sync(() => {
        const key = id(record.accountId, record.scope, record.keyHash)
        const existing = records.get(key)
        if (existing !== undefined && IdempotencyWindow.isLive(existing.createdAt, expiredBefore)) return false
        records.set(key, record)
        return true
      }),
    prune: (before) => Effect.sync(() => MemoryStore.deleteWhere(records, (record) => record.createdAt < before))
  }
}
