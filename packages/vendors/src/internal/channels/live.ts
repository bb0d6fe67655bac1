/**
 * A channel the router can call, and how one is built from its configuration: its transport's registry entry (or
 * the `adapters` option) given the channel's base URL, mapping, copy policy and signed callback URL.
 */
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import type { Upstream } from "@mediagate/engine/Upstream"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ChannelsOptions } from "../../Channels.js"
import type { ChannelConfig } from "../../ChannelStore.js"
import * as Mapping from "../../Mapping.js"
import { ResultCopier } from "../../ResultCopy.js"
import { SimulatedUpstream } from "../../Simulated.js"
import * as Transport from "../../Transport.js"
import * as Transports from "../../transports/index.js"
import type { UrlSigner } from "../../UrlSigner.js"
import { hostOf } from "../upstreamHttp.js"
import { defaultPollRate, PollRate } from "./routing.js"

/** A channel the router can call. */
export interface Live {
  readonly config: ChannelConfig
  readonly transport: Upstream["Type"]
  readonly stored: boolean
  /** Checks the upstream's own signature of a callback (absent: the transport's upstream signs none). */
  readonly verifyCallback?: Transport.Built["verifyCallback"]
  /** The job a genuine callback names (see {@link Transport.Built}). */
  readonly jobOfCallback?: Transport.Built["jobOfCallback"]
  /** Whether the channel's upstream reports the end of every job (callbacks): polls are then a safety net. */
  readonly notifies: boolean
  /**
   * Whether the upstream calls back over HTTP (fal, Replicate: on unless the channel turns callbacks off), retrying
   * a callback until it is answered: polls are then a slower safety net.
   */
  readonly callsBack: boolean
  /** How the job of an uncertain submit is found on the channel (its transport's). */
  readonly submitRecovery: Transport.SubmitRecovery
  /**
   * The channel's poll rate (see {@link PollRate}); none for the simulated upstream unless its settings give one (it
   * runs in this process: there is no upstream API to spare).
   */
  readonly pollRate: PollRate | undefined
}
/** The file-signing key a callback URL of a channel and task is signed under. */
export const callbackKey = (channelId: string, taskId: string) => `callbacks/${channelId}/${taskId}`

/** Largest result file copied by default: 2 GiB. */
const defaultMaxResultBytes = 2 * 1024 ** 3
/** What channels' transports are built with: the router's settings and the process's services. */
export interface BuildContext {
  readonly options: ChannelsOptions
  readonly simulated: SimulatedUpstream["Type"]
  readonly copier: ResultCopier["Type"]
  readonly signer: UrlSigner["Type"]
}

/** Makes the builder of channels (see {@link BuildContext}). */
export const makeBuild = ({ copier, options, signer, simulated }: BuildContext) => {
  const allowPrivate = options.inputChecks?.allowPrivate ?? false
  const transportRegistry = options.transportRegistry ?? Transports.registry

  /** The URL an upstream calls back for a task of a channel: signed for the channel and task, until after the deadline. */
  const callbackUrlOf = (channelId: string) => (task: TaskRecord) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // upstreams retry callbacks for hours (fal: up to 2 h)
      const ttlSeconds = Math.ceil(Math.max(0, task.deadlineAt - now) / 1000) + 3 * 3600
      const signed = new URL(yield* signer.sign(callbackKey(channelId, task.id), ttlSeconds))
      const base = signed.href.slice(0, signed.href.indexOf("/files/"))
      const query = `expires=${signed.searchParams.get("expires")}&signature=${signed.searchParams.get("signature")}`
      return `${base}/callbacks/v1/${encodeURIComponent(channelId)}/${encodeURIComponent(task.id)}?${query}`
    })

  /**
   * What a channel's transport is built from; none when the transport needs a base URL and the channel gives none
   * (and its transport has no default). The base URL is empty for a transport that takes none.
   */
  const contextOf = (config: ChannelConfig, definition: Transport.Any): Transport.Context | undefined => {
    const fallback = typeof definition.baseUrl === "object" ? definition.baseUrl.default : undefined
    const given = config.settings.baseUrl ?? fallback
    if (definition.baseUrl !== "none" && given === undefined) return undefined
    const baseUrl = definition.baseUrl === "none" || given === undefined ? "" : given.replace(/\/+$/, "")
    const callbacks = definition.callbacks && config.settings.callbacks !== false
    return {
      channel: config,
      baseUrl,
      mapping: Mapping.compile(config.settings.mapping),
      copier,
      policy: {
        trustedHosts: [...(baseUrl === "" ? [] : [hostOf(baseUrl)]), ...(config.settings.resultHosts ?? [])],
        allowPrivate,
        timeoutMs: config.settings.timeoutMs ?? 30_000,
        maxBytes: config.settings.maxResultBytes ?? defaultMaxResultBytes,
        lookup: options.inputChecks?.lookup
      },
      callbackUrl: callbacks ? callbackUrlOf(config.id) : () => Effect.succeed(undefined)
    }
  }

  /**
   * A channel's transport from its registry entry (or the `adapters` option); none when the registry does not know
   * its transport or the channel lacks what the transport needs.
   */
  const build = (config: ChannelConfig, stored: boolean): Effect.Effect<Option.Option<Live>> =>
    Effect.gen(function*() {
      const definition = Transport.find(transportRegistry, config.transport)
      const adapter = options.adapters?.[config.transport]
      const context = adapter !== undefined || definition === undefined ? undefined : contextOf(config, definition)
      const built = adapter !== undefined
        ? Option.some<Transport.Built>({ upstream: yield* adapter(config) })
        : definition === undefined || context === undefined
        ? Option.none<Transport.Built>()
        : yield* definition.build(context).pipe(
          Effect.provideService(SimulatedUpstream, simulated),
          Effect.provideService(ResultCopier, copier)
        )
      const inProcess = definition?.submitRecovery === "in-process"
      return Option.map(built, (built): Live => ({
        config,
        transport: built.upstream,
        stored,
        ...(built.verifyCallback === undefined ? {} : { verifyCallback: built.verifyCallback }),
        ...(built.jobOfCallback === undefined ? {} : { jobOfCallback: built.jobOfCallback }),
        notifies: built.upstream.notifiesChanges ||
          (definition?.callbacks === true && config.settings.callbacks !== false),
        callsBack: adapter === undefined && definition?.callbacks === true && config.settings.callbacks !== false,
        submitRecovery: definition?.submitRecovery ?? "wait",
        // a transport in this process has no upstream API to spare: its polls are limited only when asked
        pollRate: inProcess && config.settings.pollRate === undefined
          ? undefined
          : new PollRate(config.settings.pollRate ?? defaultPollRate)
      }))
    })

  return build
}
