/**
 * Settings of the HTTP layer, from Effect `Config` (decisions.md §10) or given directly by an embedding app.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/** Settings of the HTTP layer. */
export interface ServerSettings {
  /** Largest request body in bytes (decisions.md §1: 1 MiB). */
  readonly maxBodyBytes: number
  /** Addresses/CIDRs of proxies whose `X-Forwarded-For` is honoured. */
  readonly trustedProxies: ReadonlyArray<string>
  /** Allow loopback/private webhook and media targets (development and tests). */
  readonly allowPrivateAddresses: boolean
  /** The operator token enabling `/admin/v1`; none turns the admin API off. */
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
}

/** Default settings: 1 MiB bodies, no trusted proxies, strict addresses, admin API off. */
export const defaults: ServerSettings = {
  maxBodyBytes: 1024 * 1024,
  trustedProxies: [],
  allowPrivateAddresses: false,
  adminToken: Option.none()
}

/** The settings of the HTTP layer. */
export class ServerConfig extends Context.Tag("@mediagate/server/ServerConfig")<ServerConfig, ServerSettings>() {}

/** Settings given directly (missing ones take {@link defaults}). */
export const layer = (settings: Partial<ServerSettings> = {}): Layer.Layer<ServerConfig> =>
  Layer.succeed(ServerConfig, { ...defaults, ...settings })

const list = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map((text) => text.split(",").map((s) => s.trim()).filter((s) => s.length > 0))
  )

/** The settings as Effect `Config`: the environment variables of decisions.md §10. */
export const config: Config.Config<ServerSettings> = Config.all({
  maxBodyBytes: Config.integer("MEDIAGATE_MAX_BODY_BYTES").pipe(Config.withDefault(defaults.maxBodyBytes)),
  trustedProxies: list("MEDIAGATE_TRUSTED_PROXIES"),
  allowPrivateAddresses: Config.boolean("MEDIAGATE_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
  adminToken: Config.option(Config.redacted("MEDIAGATE_ADMIN_TOKEN"))
})

/** The settings read from Effect `Config`. */
export const layerConfig: Layer.Layer<ServerConfig, ConfigError.ConfigError> = Layer.effect(
  ServerConfig,
  config
)
