/**
 * Channel credentials at rest (`ChannelSecrets.ts`): the key forms (hex, base64, passphrase) and their ids, the
 * sealed format, what fails to open (another record, an altered value, an unknown or missing key), rotation with a
 * previous key, the settings from `Config`, and the stored-channel steps the stores share (hint, unreadable
 * credentials read as a disabled channel, re-encryption on a write).
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { createHash } from "node:crypto"
import * as ChannelSecrets from "../src/ChannelSecrets.js"

const hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
const otherHexKey = "ff".repeat(32)

const keyOf = (text: string) => Either.getOrThrow(ChannelSecrets.parseKey(text))

const secretsOf = (current?: string, previous?: string) =>
  ChannelSecrets.makeSecrets(
    current === undefined ? undefined : keyOf(current),
    previous === undefined ? [] : [keyOf(previous)]
  )

const errorOf = <A>(result: Either.Either<A, ChannelSecrets.ChannelSecretError>) => {
  assert.isTrue(Either.isLeft(result), "expected a failure")
  return (result as Either.Left<ChannelSecrets.ChannelSecretError, A>).left
}

describe("channel keys", () => {
  it("reads 64 hex characters and the same 32 bytes in base64 (standard or URL, padded or not) as one key", () => {
    const bytes = Buffer.from(hexKey, "hex")
    const expectedId = createHash("sha256").update(bytes).digest("hex").slice(0, 8)
    const hex = keyOf(hexKey)
    expect(hex.id).toBe(expectedId)
    expect(hex.bytes.equals(bytes)).toBe(true)
    for (
      const text of [bytes.toString("base64"), bytes.toString("base64url"), bytes.toString("base64").replace(/=$/, "")]
    ) {
      expect(keyOf(text).id, text).toBe(expectedId)
    }
    expect(keyOf(hexKey.toUpperCase()).id).toBe(expectedId)
  })

  it("stretches a passphrase of 16 characters or more, the same way every time", () => {
    const first = keyOf("correct horse battery staple")
    expect(first.bytes.length).toBe(32)
    expect(first.id).toMatch(/^[0-9a-f]{8}$/)
    expect(keyOf("correct horse battery staple").id).toBe(first.id)
    expect(keyOf("correct horse battery stapler").id).not.toBe(first.id)
  })

  it("refuses anything shorter than 16 characters that is not a key", () => {
    for (const text of ["", "short", "0123456789abcde", "   padded    "]) {
      expect(ChannelSecrets.parseKey(text), text).toEqual(Either.left(ChannelSecrets.keyRule))
    }
  })
})

describe("sealing", () => {
  it("seals as v1.<key id>.<iv>.<tag>.<ciphertext>, a new IV each time, and opens what it sealed", () => {
    const secrets = secretsOf(hexKey)
    const sealed = Either.getOrThrow(secrets.seal("sk_live_the_secret", "ch_1"))
    const parts = sealed.split(".")
    expect(parts).toHaveLength(5)
    expect(parts[0]).toBe("v1")
    expect(parts[1]).toBe(keyOf(hexKey).id)
    expect(parts.slice(2).every((part) => /^[A-Za-z0-9_-]+$/.test(part))).toBe(true)
    expect(sealed).not.toContain("secret")
    const again = Either.getOrThrow(secrets.seal("sk_live_the_secret", "ch_1"))
    expect(again).not.toBe(sealed)
    expect(Either.getOrThrow(secrets.open(sealed, "ch_1"))).toEqual({
      plaintext: "sk_live_the_secret",
      keyId: keyOf(hexKey).id
    })
  })

  it("does not open a value for another record, an altered value, or a value of another format", () => {
    const secrets = secretsOf(hexKey)
    const sealed = Either.getOrThrow(secrets.seal("sk_live_the_secret", "ch_1"))
    expect(errorOf(secrets.open(sealed, "ch_2")).reason).toBe("corrupt")
    const [version, id, iv, tag, ciphertext] = sealed.split(".") as [string, string, string, string, string]
    const flipped = Buffer.from(ciphertext, "base64url")
    flipped[0] = flipped[0]! ^ 1
    expect(errorOf(secrets.open([version, id, iv, tag, flipped.toString("base64url")].join("."), "ch_1")).reason).toBe(
      "corrupt"
    )
    expect(errorOf(secrets.open([version, id, iv, "AAAA", ciphertext].join("."), "ch_1")).reason).toBe("corrupt")
    expect(errorOf(secrets.open(["v2", id, iv, tag, ciphertext].join("."), "ch_1")).reason).toBe("corrupt")
    expect(errorOf(secrets.open("sk_live_the_secret", "ch_1")).reason).toBe("corrupt")
  })

  it("names the key that sealed a value no configured key opens", () => {
    const sealed = Either.getOrThrow(secretsOf(hexKey).seal("x", "ch_1"))
    const writer = keyOf(hexKey).id
    const other = errorOf(secretsOf(otherHexKey).open(sealed, "ch_1"))
    expect(other.reason).toBe("unknown-key")
    expect(other.message).toContain(writer)
    expect(other.message).toContain(keyOf(otherHexKey).id)
    const none = errorOf(secretsOf().open(sealed, "ch_1"))
    expect(none.reason).toBe("no-key")
    expect(none.message).toBe(`they were encrypted with key ${writer} and MEDIAGATE_CHANNEL_KEY is not set`)
  })

  it("seals nothing without a current key, and opens with the previous one", () => {
    expect(errorOf(secretsOf().seal("x", "ch_1"))).toMatchObject({
      reason: "no-key",
      message: ChannelSecrets.noKeyMessage
    })
    const sealed = Either.getOrThrow(secretsOf(hexKey).seal("x", "ch_1"))
    const rotated = secretsOf(otherHexKey, hexKey)
    expect(rotated.keyId).toBe(keyOf(otherHexKey).id)
    expect(Either.getOrThrow(rotated.open(sealed, "ch_1"))).toEqual({ plaintext: "x", keyId: keyOf(hexKey).id })
    // only the previous key: reads, never writes
    const previousOnly = secretsOf(undefined, hexKey)
    expect(previousOnly.keyId).toBeNull()
    expect(Either.getOrThrow(previousOnly.open(sealed, "ch_1")).plaintext).toBe("x")
    expect(errorOf(previousOnly.seal("x", "ch_1")).reason).toBe("no-key")
  })
})

describe("key settings", () => {
  const fromMap = (entries: ReadonlyArray<readonly [string, string]>) =>
    Effect.flatMap(ChannelSecrets.config, ChannelSecrets.fromSettings).pipe(
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(entries)))
    )

  it.effect("reads MEDIAGATE_CHANNEL_KEY and MEDIAGATE_CHANNEL_KEY_PREVIOUS; blank or absent is no key", () =>
    Effect.gen(function*() {
      expect((yield* fromMap([])).keyId).toBeNull()
      expect((yield* fromMap([["MEDIAGATE_CHANNEL_KEY", "  "]])).keyId).toBeNull()
      const both = yield* fromMap([["MEDIAGATE_CHANNEL_KEY", otherHexKey], ["MEDIAGATE_CHANNEL_KEY_PREVIOUS", hexKey]])
      expect(both.keyId).toBe(keyOf(otherHexKey).id)
      const old = Either.getOrThrow(secretsOf(hexKey).seal("x", "ch_1"))
      expect(Either.isRight(both.open(old, "ch_1"))).toBe(true)
    }))

  it.effect("refuses a key that is not one, naming its variable", () =>
    Effect.gen(function*() {
      const current = yield* Effect.flip(fromMap([["MEDIAGATE_CHANNEL_KEY", "too short"]]))
      expect(String(current)).toContain("MEDIAGATE_CHANNEL_KEY")
      expect(String(current)).toContain(ChannelSecrets.keyRule)
      const previous = yield* Effect.flip(
        fromMap([["MEDIAGATE_CHANNEL_KEY", hexKey], ["MEDIAGATE_CHANNEL_KEY_PREVIOUS", "nope"]])
      )
      expect(String(previous)).toContain("MEDIAGATE_CHANNEL_KEY_PREVIOUS")
    }))
})

describe("stored channels", () => {
  const now = 1_700_000_000_000
  const relay = {
    name: "gateway A",
    transport: "relay" as const,
    settings: { baseUrl: "https://a.example.com" },
    credentials: { apiKey: Redacted.make("sk_live_0123456789abcdef") },
    families: ["vendor1" as const]
  }

  it("hints the last 4 characters of a key of 12 or more, nothing of a shorter one", () => {
    expect(ChannelSecrets.hintOf("sk_live_0123456789abcdef")).toBe("…cdef")
    expect(ChannelSecrets.hintOf("123456789012")).toBe("…9012")
    expect(ChannelSecrets.hintOf("12345678901")).toBe("…")
  })

  it("stores a channel with its credentials sealed and reads it back", () => {
    const secrets = secretsOf(hexKey)
    const stored = Either.getOrThrow(ChannelSecrets.storeInput(secrets, "ch_1", relay, now))
    expect(stored).toMatchObject({
      id: "ch_1",
      credentialsHint: "…cdef",
      models: [],
      priority: 0,
      weight: 1,
      concurrency: 0,
      enabled: true,
      disabledReason: null,
      createdAt: now,
      updatedAt: now
    })
    expect(stored.credentials).toMatch(/^v1\./)
    expect(JSON.stringify(stored)).not.toContain("0123456789abcdef")
    const read = ChannelSecrets.openStored(secrets, stored)
    expect(Redacted.value(read.credentials.apiKey!)).toBe("sk_live_0123456789abcdef")
    expect(read.enabled).toBe(true)
  })

  it("reads credentials no key opens as a disabled channel with the reason, and leaves them as they are on a write", () => {
    const stored = Either.getOrThrow(ChannelSecrets.storeInput(secretsOf(hexKey), "ch_1", relay, now))
    const other = secretsOf(otherHexKey)
    const read = ChannelSecrets.openStored(other, stored)
    expect(read.credentials).toEqual({})
    expect(read.enabled).toBe(false)
    expect(read.disabledReason).toContain("cannot be decrypted")
    expect(read.disabledReason).toContain(keyOf(hexKey).id)
    expect(read.credentialsHint).toBe("…cdef")
    const changed = Either.getOrThrow(ChannelSecrets.storePatch(other, stored, { priority: 5 }, now))
    expect(changed.credentials).toBe(stored.credentials)
    expect(changed.enabled).toBe(true)
    expect(changed.priority).toBe(5)
  })

  it("re-encrypts kept credentials with the current key on a write, and moves updatedAt forward", () => {
    const stored = Either.getOrThrow(ChannelSecrets.storeInput(secretsOf(hexKey), "ch_1", relay, now))
    const rotated = secretsOf(otherHexKey, hexKey)
    const changed = Either.getOrThrow(ChannelSecrets.storePatch(rotated, stored, { name: "renamed" }, now))
    expect(changed.credentials!.split(".")[1]).toBe(keyOf(otherHexKey).id)
    expect(changed.credentialsHint).toBe("…cdef")
    expect(changed.updatedAt).toBe(now + 1)
    const onlyNew = ChannelSecrets.openStored(secretsOf(otherHexKey), changed)
    expect(Redacted.value(onlyNew.credentials.apiKey!)).toBe("sk_live_0123456789abcdef")
    // disable with a reason, then enable: the reason goes
    const disabled = Either.getOrThrow(
      ChannelSecrets.storePatch(rotated, changed, { enabled: false, disabledReason: "why" }, now)
    )
    expect([disabled.enabled, disabled.disabledReason, disabled.updatedAt]).toEqual([false, "why", now + 2])
    const enabled = Either.getOrThrow(ChannelSecrets.storePatch(rotated, disabled, { enabled: true }, now + 10))
    expect([enabled.enabled, enabled.disabledReason, enabled.updatedAt]).toEqual([true, null, now + 10])
    // credentials removed
    const removed = Either.getOrThrow(ChannelSecrets.storePatch(rotated, enabled, { credentials: null }, now + 10))
    expect([removed.credentials, removed.credentialsHint]).toEqual([null, null])
  })

  it("refuses to store credentials without a key; a channel without credentials needs none", () => {
    const none = secretsOf()
    expect(errorOf(ChannelSecrets.storeInput(none, "ch_1", relay, now)).message).toBe(ChannelSecrets.noKeyMessage)
    const simulated = Either.getOrThrow(ChannelSecrets.storeInput(none, "ch_2", {
      name: "sim",
      transport: "simulated",
      families: ["vendor3"],
      enabled: false,
      disabledReason: "disabled by an operator"
    }, now))
    expect(simulated).toMatchObject({
      credentials: null,
      credentialsHint: null,
      enabled: false,
      disabledReason: "disabled by an operator"
    })
    expect(ChannelSecrets.openStored(none, simulated).credentials).toEqual({})
  })
})
