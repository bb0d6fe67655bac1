/**
 * Upstream channels in memory (one process, nothing persisted): the same `ChannelStore` as `SqlChannels`, for
 * tests and the in-memory setups. Credentials are kept sealed with the configured {@link ChannelSecrets} as in the
 * database, so that a missing key behaves the same (credentials refused, nothing else affected).
 *
 * @since 0.1.0
 */
import * as Ids from "@mediagate/persistence/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { ChannelSecrets, openStored, refused, type StoredChannel, storeInput, storePatch } from "./ChannelSecrets.js"
import { ChannelStore } from "./ChannelStore.js"

/**
 * Options of the memory store.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryOptions {
  /**
   * The table to keep the channels in (default: a new one). Two stores given one table see the same channels,
   * each with its own keys: how tests play a restart with another key.
   */
  readonly table?: Map<string, StoredChannel>
}

/** Oldest first (ids break ties: ULIDs of one process are increasing). */
const byAge = (a: StoredChannel, b: StoredChannel) =>
  a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * Builds a memory store on the {@link ChannelSecrets} in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: MemoryOptions = {}): Effect.Effect<ChannelStore["Type"], never, ChannelSecrets> =>
  Effect.gen(function*() {
    const secrets = yield* ChannelSecrets
    const table = options.table ?? new Map<string, StoredChannel>()
    const written = yield* PubSub.sliding<void>(1)
    const signal = PubSub.publish(written, undefined)

    return ChannelStore.of({
      list: Effect.sync(() => [...table.values()].sort(byAge).map((stored) => openStored(secrets, stored))),
      get: (id) =>
        Effect.sync(() => Option.map(Option.fromNullable(table.get(id)), (stored) => openStored(secrets, stored))),
      create: (input) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const stored = yield* Either.mapLeft(
            storeInput(secrets, `ch_${Ids.ulid(now)}`, input, now),
            refused("create")
          )
          table.set(stored.id, stored)
          yield* signal
          return openStored(secrets, stored)
        }),
      update: (id, patch) =>
        Effect.gen(function*() {
          const stored = table.get(id)
          if (stored === undefined) return Option.none()
          const now = yield* Clock.currentTimeMillis
          const changed = yield* Either.mapLeft(storePatch(secrets, stored, patch, now), refused("update"))
          table.set(id, changed)
          yield* signal
          return Option.some(openStored(secrets, changed))
        }),
      remove: (id) =>
        Effect.suspend(() => {
          if (!table.delete(id)) return Effect.succeed(false)
          return Effect.as(signal, true)
        }),
      changes: Stream.fromPubSub(written)
    })
  })

/**
 * A memory store (a fresh table) as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: MemoryOptions = {}): Layer.Layer<ChannelStore, never, ChannelSecrets> =>
  Layer.effect(ChannelStore, make(options))
