/**
 * Signed, expiring file URLs (decisions.md §3): `<publicBaseUrl>/files/<key>?expires=<unix seconds>&signature=<hex
 * HMAC-SHA256 over "<key>:<expires>">`, checked in constant time; time from Effect's `Clock`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/**
 * Default lifetime of a signed URL: 7 days.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTtlSeconds = 7 * 24 * 60 * 60

/**
 * The outcome of checking a URL's signature.
 *
 * @since 0.1.0
 * @category models
 */
export type SignatureCheck = "valid" | "missing" | "invalid" | "expired"

/**
 * Signs and checks file URLs.
 *
 * @since 0.1.0
 * @category services
 */
export class UrlSigner extends Context.Tag("@mediagate/vendors/UrlSigner")<UrlSigner, {
  /** The absolute URL of `key`, valid for `ttlSeconds` (default: the signer's) from now (Effect `Clock`). */
  readonly sign: (key: string, ttlSeconds?: number) => Effect.Effect<string>
  /** Whether `signature` is the signature of `key` until `expires` and `expires` has not passed. Constant-time. */
  readonly verify: (key: string, expires: string | undefined, signature: string | undefined) => Effect.Effect<boolean>
  /** Like {@link verify}, with the reason of a refusal. */
  readonly check: (
    key: string,
    expires: string | undefined,
    signature: string | undefined
  ) => Effect.Effect<SignatureCheck>
}>() {}

/**
 * Settings of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Absolute http(s) base of file URLs, e.g. `https://media.example.com` (a trailing `/` is dropped). */
  readonly publicBaseUrl: string
  /** The HMAC key (its UTF-8 bytes). */
  readonly secret: Redacted.Redacted<string>
  readonly defaultTtlSeconds?: number | undefined
}

const isHttpUrl = (value: string) => {
  const url = URL.canParse(value) ? new URL(value) : undefined
  return (url?.protocol === "http:" || url?.protocol === "https:") && url.search === "" && url.hash === ""
}

/**
 * The hex HMAC-SHA256 of `"<key>:<expires>"`.
 *
 * @since 0.1.0
 * @category utils
 */
export const signatureOf = (secret: Redacted.Redacted<string>, key: string, expires: number): string =>
  createHmac("sha256", Redacted.value(secret)).update(`${key}:${expires}`).digest("hex")

/**
 * Builds a signer (dies when the base URL is not an absolute http(s) URL or the TTL is not a positive integer).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): UrlSigner["Type"] => {
  if (!isHttpUrl(options.publicBaseUrl)) {
    throw new Cause.IllegalArgumentException(`publicBaseUrl ${options.publicBaseUrl}: must be an absolute http(s) URL`)
  }
  const ttlDefault = options.defaultTtlSeconds ?? defaultTtlSeconds
  if (!Number.isSafeInteger(ttlDefault) || ttlDefault <= 0) {
    throw new Cause.IllegalArgumentException(`defaultTtlSeconds ${ttlDefault}: must be a positive integer`)
  }
  const base = options.publicBaseUrl.replace(/\/+$/, "")
  const nowSeconds = Effect.map(Clock.currentTimeMillis, (millis) => Math.floor(millis / 1000))

  const check = (key: string, expires: string | undefined, signature: string | undefined) =>
    Effect.map(nowSeconds, (now): SignatureCheck => {
      if (expires === undefined || signature === undefined || expires === "" || signature === "") return "missing"
      if (!/^\d{1,15}$/.test(expires) || !/^[0-9a-f]{64}$/i.test(signature)) return "invalid"
      const expected = Buffer.from(signatureOf(options.secret, key, Number(expires)), "hex")
      if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) return "invalid"
      return Number(expires) < now ? "expired" : "valid"
    })

  return UrlSigner.of({
    sign: (key, ttlSeconds) =>
      Effect.map(nowSeconds, (now) => {
        const expires = now + Math.max(1, Math.floor(ttlSeconds ?? ttlDefault))
        const path = key.split("/").map(encodeURIComponent).join("/")
        return `${base}/files/${path}?expires=${expires}&signature=${signatureOf(options.secret, key, expires)}`
      }),
    verify: (key, expires, signature) => Effect.map(check(key, expires, signature), (result) => result === "valid"),
    check
  })
}

/**
 * A signer with the given settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<UrlSigner> => Layer.sync(UrlSigner, () => make(options))

/**
 * The warning of a signer without `MEDIAGATE_FILE_SECRET`.
 *
 * @since 0.1.0
 * @category constants
 */
export const noSecret =
  "MEDIAGATE_FILE_SECRET is not set: file URLs are signed with a random per-process secret and stop working when this process exits"

/**
 * A signer from Effect `Config`: `MEDIAGATE_PUBLIC_BASE_URL` (default `http://localhost:$PORT`, `PORT` default
 * 3000) and `MEDIAGATE_FILE_SECRET`. Without a secret, a random one is generated when the layer is built: URLs then
 * stop working when the process exits, and processes sharing a database do not accept each other's URLs (a
 * warning is logged). URLs last 7 days.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<UrlSigner, ConfigError.ConfigError> = Layer.effect(
  UrlSigner,
  Effect.gen(function*() {
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    const publicBaseUrl = yield* Config.string("MEDIAGATE_PUBLIC_BASE_URL").pipe(
      Config.validate({ message: "must be an absolute http(s) URL without query", validation: isHttpUrl }),
      Config.withDefault(`http://localhost:${port}`)
    )
    const configured = yield* Config.option(Config.redacted("MEDIAGATE_FILE_SECRET"))
    const secret = Option.isSome(configured) && Redacted.value(configured.value).length > 0
      ? configured.value
      : yield* Effect.as(Effect.logWarning(noSecret), Redacted.make(randomBytes(32).toString("hex")))
    return make({ publicBaseUrl, secret, defaultTtlSeconds })
  })
)
