/**
 * The channel router (`Channels.ts`) over fault-injecting adapters, on the memory task storage, under `TestClock`:
 * priority and weights, failover of submits (and none for refusals), idempotency keys per channel, concurrency
 * slots, the circuit breaker opening and closing, jobs given up when their channel fails, automatic disable after
 * authentication failures, the environment's defaults, and test tasks on the simulator.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import * as Billing from "@mediagate/engine/Billing"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import { type JobState, Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as Ids from "@mediagate/persistence/Ids"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Channels from "../src/Channels.js"
import { type ChannelConfig, type ChannelInput, ChannelRuntime, ChannelStore } from "../src/ChannelStore.js"
import * as Estimates from "../src/Estimates.js"
import * as FileStore from "../src/FileStore.js"
import { PriceBook } from "../src/Prices.js"
import * as ResultCopy from "../src/ResultCopy.js"
import * as Simulated from "../src/Simulated.js"
import * as UrlSigner from "../src/UrlSigner.js"

/** How a fake channel answers. */
type Mode = "ok" | "down" | "auth" | "refuse"

/** Fault-injecting upstreams, one per channel (by name), recording every call. */
const makeFakes = () => {
  const modes = new Map<string, Mode>()
  const calls: Array<{ readonly channel: string; readonly call: "submit" | "poll" | "cancel"; readonly key: string }> =
    []
  const fail = (mode: Mode, name: string): UpstreamError | undefined =>
    mode === "down"
      ? new UpstreamError({ message: `${name}: 503`, retryable: true, kind: "unavailable" })
      : mode === "auth"
      ? new UpstreamError({ message: `${name}: 401`, retryable: false, kind: "auth" })
      : mode === "refuse"
      ? new UpstreamError({ message: `${name}: content policy`, retryable: false, kind: "refused" })
      : undefined
  const adapter = (channel: ChannelConfig) =>
    Effect.succeed(Upstream.of({
      notifiesChanges: false,
      changes: Stream.empty,
      submit: (task) =>
        Effect.suspend(() => {
          calls.push({ channel: channel.name, call: "submit", key: `${task.id}.${task.channelId}` })
          const error = fail(modes.get(channel.name) ?? "ok", channel.name)
          return error === undefined ? Effect.succeed({ jobId: `${channel.name}-${task.id}` }) : Effect.fail(error)
        }),
      poll: (task) =>
        Effect.suspend((): Effect.Effect<JobState, UpstreamError> => {
          calls.push({ channel: channel.name, call: "poll", key: task.id })
          const error = fail(modes.get(channel.name) ?? "ok", channel.name)
          return error === undefined ? Effect.succeed({ _tag: "Running", progress: 50 }) : Effect.fail(error)
        }),
      cancel: (task) => Effect.sync(() => void calls.push({ channel: channel.name, call: "cancel", key: task.id }))
    }))
  return { modes, calls, adapter }
}

/** A channel store in memory (the router's port), enough for these tests. */
const makeStore = () =>
  Effect.gen(function*() {
    const channels = new Map<string, ChannelConfig>()
    const signal = yield* PubSub.unbounded<void>()
    const store = ChannelStore.of({
      list: Effect.sync(() => [...channels.values()]),
      get: (id) => Effect.sync(() => Option.fromNullable(channels.get(id))),
      create: (input: ChannelInput) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const channel: ChannelConfig = {
            id: `ch_${Ids.ulid()}`,
            name: input.name,
            transport: input.transport,
            settings: input.settings ?? {},
            credentials: input.credentials ?? {},
            families: input.families,
            models: input.models ?? [],
            priority: input.priority ?? 0,
            weight: input.weight ?? 1,
            concurrency: input.concurrency ?? 0,
            enabled: input.enabled ?? true,
            disabledReason: null,
            createdAt: now,
            updatedAt: now
          }
          channels.set(channel.id, channel)
          yield* PubSub.publish(signal, undefined)
          return channel
        }),
      update: (id, patch) =>
        Effect.gen(function*() {
          const channel = channels.get(id)
          if (channel === undefined) return Option.none()
          const { credentials, ...rest } = patch
          const updated: ChannelConfig = {
            ...channel,
            ...rest,
            ...(credentials === undefined ? {} : { credentials: credentials ?? {} }),
            disabledReason: patch.enabled === true ? null : patch.disabledReason ?? channel.disabledReason,
            updatedAt: channel.updatedAt + 1
          }
          channels.set(id, updated)
          yield* PubSub.publish(signal, undefined)
          return Option.some(updated)
        }),
      remove: (id) => Effect.sync(() => channels.delete(id)),
      changes: Stream.fromPubSub(signal)
    })
    return store
  })

const files = () =>
  Layer.mergeAll(
    FileStore.layerLocal({ directory: mkdtempSync(join(tmpdir(), "mg-ch-")) }).pipe(Layer.provide(NodeContext.layer)),
    UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("test-secret") })
  )

/** The router on fake adapters, a memory storage and a memory channel store; runs `body` with them. */
const withRouter = <A, E>(
  body: (env: {
    readonly fakes: ReturnType<typeof makeFakes>
    readonly store: ChannelStore["Type"]
    readonly upstream: Upstream["Type"]
    readonly runtime: ChannelRuntime["Type"]
    readonly storage: TaskStorage.TaskStorage["Type"]
    readonly copier: ResultCopy.ResultCopier["Type"]
  }) => Effect.Effect<A, E, never>,
  options: Channels.ChannelsOptions = {}
) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(Date.UTC(2026, 10, 24, 12))
    const fakes = makeFakes()
    const store = yield* makeStore()
    const built = yield* Layer.build(
      Channels.layer({
        adapters: { simulated: fakes.adapter, relay: fakes.adapter },
        breaker: { failures: 3, cooldown: "30 seconds" },
        ...options
      }).pipe(
        Layer.provideMerge(TaskStorage.layerMemory()),
        Layer.provide(Layer.succeed(ChannelStore, store)),
        Layer.provide(Simulated.layer({ videoSeconds: 0.05, imageSeconds: 0.05 })),
        Layer.provide(PriceBook.layer()),
        Layer.provide(Estimates.layer),
        // the copy answers its polls at once (the test clock would never end an inline wait)
        Layer.provideMerge(ResultCopy.layer({ inlineWait: 0 }).pipe(Layer.provideMerge(files()))),
        Layer.provide(Billing.layerUnmetered)
      )
    )
    const upstream = yield* Effect.provide(Upstream, built)
    const runtime = yield* Effect.provide(ChannelRuntime, built)
    const storage = yield* Effect.provide(TaskStorage.TaskStorage, built)
    const copier = yield* Effect.provide(ResultCopy.ResultCopier, built)
    return yield* body({ fakes, store, upstream, runtime, storage, copier })
  }).pipe(Effect.scoped)

/** Accepts and claims `n` live vendor3 tasks (each with its claim's fence). */
const claimTasks = (storage: TaskStorage.TaskStorage["Type"], n: number, environment: "live" | "test" = "live") =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) {
      const now = yield* Clock.currentTimeMillis
      yield* storage.accept({
        task: Fixtures.newTask({
          environment,
          input: { prompt: "a cat", aspect_ratio: "16:9" },
          estimatedSeconds: 30,
          createdAt: now
        }),
        charge: undefined,
        idempotency: undefined
      })
    }
    return yield* storage.claim("w1", n, 600_000)
  })

const relay = (name: string, extra: Partial<ChannelInput> = {}): ChannelInput => ({
  name,
  transport: "relay",
  settings: { baseUrl: `http://${name}.example` },
  credentials: { apiKey: Redacted.make(`key-${name}`) },
  families: ["vendor3"],
  ...extra
})

/** A relay channel `primary` (priority 10) and a `backup` (priority 0) for vendor3, routed by at once. */
const primaryAndBackup = (store: ChannelStore["Type"], runtime: ChannelRuntime["Type"]) =>
  Effect.gen(function*() {
    const primary = yield* store.create(relay("primary", { priority: 10 }))
    const backup = yield* store.create(relay("backup"))
    yield* runtime.refresh
    return { primary, backup }
  })

/** A plain channel is its own routing fields. */
const same = <C>(channel: C): C => channel

describe("routeOrder", () => {
  it("puts higher priorities first and splits equal priorities by weight", () => {
    const channels = [
      { id: "ch_low", priority: 0, weight: 100 },
      { id: "ch_a", priority: 5, weight: 3 },
      { id: "ch_b", priority: 5, weight: 1 }
    ]
    const first = new Map<string, number>()
    const n = 20_000
    for (let i = 0; i < n; i++) {
      const order = Channels.routeOrder(Ids.taskId(Date.UTC(2026, 0, 1) + i), channels, same)
      expect(order[2]!.id).toBe("ch_low")
      first.set(order[0]!.id, (first.get(order[0]!.id) ?? 0) + 1)
    }
    // 3:1 within 2 points of 75%
    expect(Math.abs(first.get("ch_a")! / n - 0.75)).toBeLessThan(0.02)
    // the same task meets the channels in the same order every time
    const id = Ids.taskId(Date.UTC(2026, 0, 2))
    expect(Channels.routeOrder(id, channels, same)).toEqual(Channels.routeOrder(id, [...channels].reverse(), same))
  })
})

describe("PollRate", () => {
  it("lets a second's worth of polls go at once, and at most that many in any 1.1 s", () => {
    const rate = new Channels.PollRate(10)
    expect(Array.from({ length: 10 }, () => rate.take(0))).toEqual(Array(10).fill(0))
    const wait = rate.take(0)
    expect(wait).toBeGreaterThanOrEqual(1100)
    expect(wait).toBeLessThanOrEqual(2100)
    // three polls asked every 7 ms for 5 s
    const went: Array<number> = []
    for (let now = 1000; now < 6000; now += 7) {
      for (let i = 0; i < 3; i++) if (rate.take(now) === 0) went.push(now)
    }
    const most = Math.max(...went.map((at) => went.filter((t) => t >= at && t < at + 1100).length))
    expect(most).toBe(10)
    // at 1.1 s, 2.2 s, ... 5.5 s: a poll reaching the upstream up to 100 ms late still keeps to its seconds
    expect(went.length).toBe(50)
    expect(went[0]).toBeGreaterThanOrEqual(1100)
  })
})

describe("the channel router", () => {
  it.effect("polls a job whose upstream calls back first at twice its estimate (60 s to 10 min), then every 60 s", () =>
    withRouter(({ runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const fal = (name: string, settings: Partial<ChannelInput["settings"]> = {}) =>
          store.create({
            name,
            transport: "fal",
            settings: { baseUrl: `http://${name}.example`, ...settings },
            credentials: { apiKey: Redacted.make("key") },
            families: ["vendor3"]
          })
        const calling = yield* fal("calling")
        const quiet = yield* fal("quiet", { callbacks: false })
        const fixed = yield* fal("fixed", { pollIntervalMs: 5000 })
        const relayed = yield* store.create(relay("relayed"))
        yield* runtime.refresh
        const [task] = yield* claimTasks(storage, 1)
        const delay = (channelId: string, polls: number, estimatedSeconds: number) =>
          upstream.pollDelay!(polls, { ...task!, channelId, estimatedSeconds })
        expect(delay(calling.id, 0, 10)).toBe(60_000)
        expect(delay(calling.id, 0, 100)).toBe(200_000)
        expect(delay(calling.id, 0, 3600)).toBe(600_000)
        expect(delay(calling.id, 3, 100)).toBe(60_000)
        // no callbacks, a channel's own interval, a transport that never calls back: the engine's schedules
        expect(delay(quiet.id, 0, 10)).toBeUndefined()
        expect(delay(fixed.id, 0, 10)).toBe(5000)
        expect(delay(relayed.id, 0, 10)).toBeUndefined()
        // test tasks run on the simulator
        expect(upstream.pollDelay!(0, { ...task!, channelId: calling.id, environment: "test" })).toBeUndefined()
        // a simulated job of no length is done when submitted: polled at once (a test task; a task submitted to
        // the simulator before channels existed); a channel's transport without a delay of its own keeps the rest
        const instant = { ...task!, input: { ...task!.input, prompt: "a lighthouse [sim:delay=0]" } }
        expect(upstream.pollDelay!(0, { ...instant, environment: "test" })).toBe(0)
        expect(upstream.pollDelay!(0, { ...instant, channelId: null })).toBe(0)
        expect(upstream.pollDelay!(1, { ...instant, channelId: null })).toBeUndefined()
        expect(upstream.pollDelay!(0, { ...instant, channelId: quiet.id })).toBeUndefined()
      })
    ))

  it.effect("fails a submit over to the next channel with its own idempotency key; a refusal does not fail over", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const { backup, primary } = yield* primaryAndBackup(store, runtime)
        const [a, b] = yield* claimTasks(storage, 2)
        fakes.modes.set("primary", "down")
        const submitted = yield* upstream.submit(a!)
        expect(submitted).toMatchObject({ jobId: `backup-${a!.id}`, channelId: backup.id })
        expect(fakes.calls.filter((c) => c.call === "submit")).toEqual([
          { channel: "primary", call: "submit", key: `${a!.id}.${primary.id}` },
          { channel: "backup", call: "submit", key: `${a!.id}.${backup.id}` }
        ])
        // the upstream refuses the request itself: no other channel is asked
        fakes.modes.set("primary", "refuse")
        const refused = yield* Effect.flip(upstream.submit(b!))
        expect(refused).toMatchObject({ retryable: false, kind: "refused" })
        expect(fakes.calls.filter((c) => c.key.startsWith(b!.id)).map((c) => c.channel)).toEqual(["primary"])
      })
    ))

  it.effect("opens a failing channel's breaker, skips it, probes it after the cooldown and closes it again", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const { primary } = yield* primaryAndBackup(store, runtime)
        const tasks = yield* claimTasks(storage, 6)
        fakes.modes.set("primary", "down")
        // three failures in a row (the test's threshold) open it
        for (const task of tasks.slice(0, 3)) yield* upstream.submit(task)
        expect(yield* runtime.health(primary.id)).toMatchObject({ breaker: "open", consecutiveFailures: 3 })
        // open: the next task goes straight to the backup
        const before = fakes.calls.filter((c) => c.channel === "primary").length
        expect((yield* upstream.submit(tasks[3]!)).jobId).toBe(`backup-${tasks[3]!.id}`)
        expect(fakes.calls.filter((c) => c.channel === "primary").length).toBe(before)
        // after the cooldown one probe goes through; it succeeds and the breaker closes
        fakes.modes.set("primary", "ok")
        yield* TestClock.adjust("31 seconds")
        expect((yield* upstream.submit(tasks[4]!)).jobId).toBe(`primary-${tasks[4]!.id}`)
        expect(yield* runtime.health(primary.id)).toMatchObject({ breaker: "closed", consecutiveFailures: 0 })
        expect((yield* upstream.submit(tasks[5]!)).jobId).toBe(`primary-${tasks[5]!.id}`)
      })
    ))

  it.effect("a failed probe opens the breaker again for a doubled cooldown", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const { primary } = yield* primaryAndBackup(store, runtime)
        const tasks = yield* claimTasks(storage, 6)
        fakes.modes.set("primary", "down")
        for (const task of tasks.slice(0, 3)) yield* upstream.submit(task)
        yield* TestClock.adjust("31 seconds")
        // the probe fails: open again, and still open 31 s later (60 s cooldown now)
        yield* upstream.submit(tasks[3]!)
        expect((yield* runtime.health(primary.id)).breaker).toBe("open")
        yield* TestClock.adjust("31 seconds")
        const calls = fakes.calls.filter((c) => c.channel === "primary").length
        yield* upstream.submit(tasks[4]!)
        expect(fakes.calls.filter((c) => c.channel === "primary").length).toBe(calls)
        yield* TestClock.adjust("30 seconds")
        fakes.modes.set("primary", "ok")
        expect((yield* upstream.submit(tasks[5]!)).channelId).toBe(primary.id)
      })
    ))

  it.effect("when every channel fails, the task waits (retryable) and is charged nothing more", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        yield* store.create(relay("primary"))
        yield* store.create(relay("backup"))
        yield* runtime.refresh
        const [task] = yield* claimTasks(storage, 1)
        fakes.modes.set("primary", "down")
        fakes.modes.set("backup", "down")
        const error = yield* Effect.flip(upstream.submit(task!))
        expect(error).toMatchObject({ retryable: true, kind: "unavailable" })
        expect(error.message).toContain("every channel serving vendor3-3 failed")
      })
    ))

  it.effect("holds a channel's concurrency limit, moving tasks to the next channel and then making them wait", () =>
    withRouter(({ runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const small = yield* store.create(relay("small", { priority: 10, concurrency: 1 }))
        const other = yield* store.create(relay("other", { concurrency: 1 }))
        yield* runtime.refresh
        const [a, b, c] = yield* claimTasks(storage, 3)
        expect((yield* upstream.submit(a!)).channelId).toBe(small.id)
        // the step records the job on the channel (as the worker does)
        yield* storage.step(a!.id, a!.fence, {
          upstreamJobId: "j",
          channelId: small.id,
          nextRunAt: yield* Clock.currentTimeMillis
        })
        expect((yield* upstream.submit(b!)).channelId).toBe(other.id)
        const waiting = yield* Effect.flip(upstream.submit(c!))
        expect(waiting).toMatchObject({ retryable: true, retryAfterMs: 1000 })
        expect(waiting.message).toContain("concurrency limit")
        expect(yield* storage.channelLoad).toEqual(new Map([[small.id, 1], [other.id, 1]]))
      })
    ))

  it.effect("gives a job up when its channel's breaker opens and another channel can take the task", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const { primary } = yield* primaryAndBackup(store, runtime)
        const [task] = yield* claimTasks(storage, 1)
        const onPrimary: TaskRecord = { ...task!, channelId: primary.id }
        fakes.modes.set("primary", "down")
        // failures below the threshold: poll again later, the job may still be there
        for (let i = 0; i < 2; i++) {
          expect(yield* Effect.flip(upstream.poll(onPrimary, "job"))).toMatchObject({ retryable: true })
        }
        // the third opens the breaker: the job is lost, the task goes elsewhere
        expect(yield* upstream.poll(onPrimary, "job")).toMatchObject({ _tag: "Lost" })
        // with the breaker open, the channel is not even asked
        const calls = fakes.calls.length
        expect(yield* upstream.poll(onPrimary, "job")).toMatchObject({ _tag: "Lost" })
        expect(fakes.calls.length).toBe(calls)
      })
    ))

  it.effect("disables a stored channel after repeated authentication failures, with the reason", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const bad = yield* store.create(relay("bad", { priority: 10 }))
        const good = yield* store.create(relay("good"))
        yield* runtime.refresh
        const tasks = yield* claimTasks(storage, 4)
        fakes.modes.set("bad", "auth")
        for (const task of tasks.slice(0, 3)) expect((yield* upstream.submit(task)).channelId).toBe(good.id)
        const stored = Option.getOrThrow(yield* store.get(bad.id))
        expect(stored.enabled).toBe(false)
        expect(stored.disabledReason).toContain("3 authentication failures in a row")
        // disabled: never asked again
        const calls = fakes.calls.filter((c) => c.channel === "bad").length
        yield* upstream.submit(tasks[3]!)
        expect(fakes.calls.filter((c) => c.channel === "bad").length).toBe(calls)
      }), { breaker: { failures: 10 } }))

  it.effect("uses the environment's default only for models no stored channel serves; disabled channels fail fast", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        expect(runtime.defaults.map((c) => c.id)).toEqual(["default:simulated"])
        const [a, b, c] = yield* claimTasks(storage, 3)
        expect(yield* upstream.submit(a!)).toMatchObject({ channelId: "default:simulated" })
        const only = yield* store.create(relay("only"))
        yield* runtime.refresh
        expect(yield* upstream.submit(b!)).toMatchObject({ channelId: only.id })
        yield* store.update(only.id, { enabled: false, disabledReason: "disabled by an operator" })
        yield* runtime.refresh
        const error = yield* Effect.flip(upstream.submit(c!))
        expect(error).toMatchObject({ retryable: false, message: "no enabled upstream channel serves model vendor3-3" })
        expect(fakes.calls.filter((call) => call.key.startsWith(c!.id))).toEqual([])
      })
    ))

  it.effect("holds a channel's polls to its poll_rate; the simulated upstream's are not limited", () =>
    withRouter(({ runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        const [simulatedTask, task] = yield* claimTasks(storage, 2)
        const simulated = yield* upstream.submit(simulatedTask!)
        expect(simulated).toMatchObject({ channelId: "default:simulated" })
        const onSimulated = { ...simulatedTask!, channelId: simulated.channelId! }
        for (let i = 0; i < 3 * Channels.defaultPollRate; i++) yield* upstream.poll(onSimulated, simulated.jobId)
        yield* store.create(relay("limited", { settings: { baseUrl: "http://limited.example", pollRate: 3 } }))
        yield* runtime.refresh
        const submitted = yield* upstream.submit(task!)
        const on = { ...task!, channelId: submitted.channelId! }
        for (let i = 0; i < 3; i++) yield* upstream.poll(on, submitted.jobId)
        const error = yield* Effect.flip(upstream.poll(on, submitted.jobId))
        expect(error).toMatchObject({ retryable: true, message: expect.stringContaining("3 polls a second reached") })
        expect(error.retryAfterMs).toBeGreaterThanOrEqual(1100)
        // a poll counts for 1.1 s (the time it may take to reach the upstream)
        yield* TestClock.adjust("1 second")
        expect(yield* Effect.flip(upstream.poll(on, submitted.jobId))).toMatchObject({ retryable: true })
        yield* TestClock.adjust("100 millis")
        expect(yield* upstream.poll(on, submitted.jobId)).toMatchObject({ _tag: "Running" })
      })
    ))

  it.effect("the poll a finished copy caused is answered from the copy, without asking the upstream again", () =>
    withRouter(({ copier, fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        yield* store.create(relay("primary", { settings: { baseUrl: "http://primary.example", costPerSecond: 0.01 } }))
        yield* runtime.refresh
        const [task] = yield* claimTasks(storage, 1)
        const submitted = yield* upstream.submit(task!)
        const on = { ...task!, channelId: submitted.channelId! }
        const policy = { trustedHosts: [], allowPrivate: false, timeoutMs: 1000, maxBytes: 1024 }
        const png =
          "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        expect(yield* copier.collect(on, submitted.jobId, [{ url: png }], policy, { seconds: 4 })).toEqual({
          _tag: "Copying"
        })
        // the copy writes to the disk: real time, not the test clock
        while (copier.ended(on, submitted.jobId) === undefined) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
        }
        const polls = fakes.calls.filter((call) => call.call === "poll").length
        const answered = yield* upstream.poll(on, submitted.jobId)
        // the job's seconds kept with the copy, priced at the channel's cost per second
        expect(answered).toMatchObject({
          _tag: "Succeeded",
          seconds: 4,
          costMicros: 40_000,
          result: [{ format: "png" }]
        })
        expect(fakes.calls.filter((call) => call.call === "poll").length).toBe(polls)
      })
    ))

  it.effect("test tasks run on the simulator on no channel", () =>
    withRouter(({ fakes, runtime, storage, store, upstream }) =>
      Effect.gen(function*() {
        yield* store.create(relay("primary"))
        yield* runtime.refresh
        const [task] = yield* claimTasks(storage, 1, "test")
        const submitted = yield* upstream.submit(task!)
        assert.isUndefined(submitted.channelId)
        expect(fakes.calls).toEqual([])
      })
    ))
})
