/**
 * A channel transport as one value (docs/extending.md, "A new transport"): its name, what a channel of it takes
 * (base URL, API key, model mapping, workflows) and its own settings rules, how the job of a submit whose answer was
 * lost is found, whether its upstream calls back, and the builder of its upstream from a channel. The registry
 * (`transports/index.ts`) lists them; the channel router (`Channels.ts`), the admin checks (`ChannelAdmin.ts`), the
 * CLI and the docs read it, so a transport is stated once.
 *
 * The contract's `Channel.channelTransports` (the admin API's Schema, the SQL store's rows) names the shipped
 * transports: it cannot import this package, so the compiler (in `transports/index.ts`) and a test hold it to the
 * registry.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ChannelConfig } from "./ChannelStore.js"
import type { Transport as BuiltTransport, TransportContext } from "./internal/upstreamHttp.js"
import type { ResultCopier } from "./ResultCopy.js"
import type { SimulatedUpstream } from "./Simulated.js"

/**
 * What a transport is built from: the channel, its base URL, compiled mapping, copier, copy policy, callback URL.
 *
 * @since 0.1.0
 * @category models
 */
export type Context = TransportContext

/**
 * A built transport: the upstream port of one channel, and how it checks and reads its upstream's callbacks.
 *
 * @since 0.1.0
 * @category models
 */
export type Built = BuiltTransport

/**
 * How the job of an uncertain submit (its answer lost) is found before the task is submitted again (docs/channels.md,
 * "Submits without duplicates"): `in-process` (the transport runs in this process: no submit is ever uncertain, and
 * its polls are not rate-limited unless the channel sets `poll_rate`), `idempotency-key` (the upstream answers a
 * repeated submit with the job it made), `lookup` (the transport's `find` looks the job up by our key), `callback`
 * (the upstream's callback names the job; without one the task waits `submitWait`), `wait` (no way: the task waits
 * `submitWait`, then is submitted again).
 *
 * @since 0.1.0
 * @category models
 */
export type SubmitRecovery = "in-process" | "idempotency-key" | "lookup" | "callback" | "wait"

/**
 * The services a transport's builder may use besides its context.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = SimulatedUpstream | ResultCopier

/**
 * A transport: the facts the router, the admin checks, the CLI and the docs read, and its builder.
 *
 * @since 0.1.0
 * @category models
 */
export interface Definition<Name extends string = string> {
  /** The channel's `transport`. */
  readonly name: Name
  /** What it reaches, in a few words (the CLI's help): `another service speaking this API`. */
  readonly summary: string
  /** `settings.base_url`: taken by none, required, or optional with a default (the upstream's public API). */
  readonly baseUrl: "none" | "required" | { readonly default: string }
  /** `credentials.api_key`: taken by none, optional, or required. */
  readonly apiKey: "none" | "optional" | "required"
  /** Whether a channel takes `settings.mapping`. */
  readonly mapping: boolean
  /** Whether a channel takes `settings.workflows`. */
  readonly workflows: boolean
  /** Whether the upstream calls back when a job ends (unless the channel sets `callbacks: false`). */
  readonly callbacks: boolean
  readonly submitRecovery: SubmitRecovery
  /** The transport's own rules on a channel's settings, checked when it is saved: the first one broken. */
  readonly check?: (settings: ChannelConfig["settings"]) => string | undefined
  /**
   * Builds the transport of a channel; none when the channel lacks what it needs (then the router skips it). The
   * context's `baseUrl` is empty for a transport that takes none.
   */
  readonly build: (context: Context) => Effect.Effect<Option.Option<Built>, never, Services>
}

/**
 * A transport of the registry, whatever its name.
 *
 * @since 0.1.0
 * @category models
 */
export type Any = Definition<string>

/**
 * Every transport a router knows, in the order the CLI and the docs show them.
 *
 * @since 0.1.0
 * @category models
 */
export type Registry = ReadonlyArray<Any>

/**
 * Defines a transport.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Name extends string>(definition: Definition<Name>): Definition<Name> => definition

/**
 * The builder of a transport made by a plain function of its context (the HTTP transports: `FalUpstream.make`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromContext = (make: (context: Context) => Built): Definition["build"] => (context) =>
  Effect.succeed(Option.some(make(context)))

/**
 * The transport of a name in a registry, if any.
 *
 * @since 0.1.0
 * @category utils
 */
export const find = (registry: Registry, name: string): Any | undefined =>
  registry.find((transport) => transport.name === name)

/**
 * "a relay channel", "an openai channel".
 *
 * @since 0.1.0
 * @category utils
 */
export const aChannel = (name: string): string => `${/^[aeiou]/.test(name) ? "an" : "a"} ${name} channel`
