/**
 * Submits without duplicates (docs/channels.md, "Submits without duplicates"): the worker, the channel router and
 * each HTTP transport against its protocol fake, with a fault injected into the submit (the connection cut before
 * the job is made; the job made and then the connection cut, no answer until the timeout, or a 500). Every task
 * still succeeds, and the fake holds one job for it where the upstream lets the job be found: ComfyUI by our key in
 * `extra_data`, fal and Replicate by the callback that names the job. The OpenAI-compatible API offers neither: there
 * the task waits the router's bounded time before it is sent again, which is the one case with a second job.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Services } from "@mediagate/contract"
import * as Billing from "@mediagate/engine/Billing"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import * as TaskStorage from "@mediagate/engine/TaskStorage"
import { markedAt, Upstream, UpstreamError } from "@mediagate/engine/Upstream"
import * as Worker from "@mediagate/engine/Worker"
import * as Ids from "@mediagate/persistence/Ids"
import { PersistenceError } from "@mediagate/persistence/PersistenceError"
import { startComfyFake, textToImageWorkflow } from "@mediagate/testing/fakes/comfyui"
import { type SubmitFault, submitFaults } from "@mediagate/testing/fakes/common"
import { startFalFake } from "@mediagate/testing/fakes/fal"
import { startOpenAiFake } from "@mediagate/testing/fakes/openai"
import { startReplicateFake } from "@mediagate/testing/fakes/replicate"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Channels from "../src/Channels.js"
import { type ChannelConfig, ChannelStore } from "../src/ChannelStore.js"
import * as Estimates from "../src/Estimates.js"
import * as FileStore from "../src/FileStore.js"
import { PriceBook } from "../src/Prices.js"
import * as ResultCopy from "../src/ResultCopy.js"
import * as Simulated from "../src/Simulated.js"
import * as UrlSigner from "../src/UrlSigner.js"
import { channel } from "./supportTransports.js"

const model = "vendor4-3-0-t2i"

/** A stored channel of a transport for vendor4, with a short call timeout. */
const channelOf = (
  transport: ChannelConfig["transport"],
  settings: ChannelConfig["settings"],
  apiKey: string | undefined
): ChannelConfig => channel(transport, { timeoutMs: 400, ...settings }, apiKey)

/** A channel store holding the given channels. */
const storeOf = (channels: ReadonlyArray<ChannelConfig>) =>
  ChannelStore.of({
    list: Effect.succeed(channels),
    get: (id) => Effect.succeed(Option.fromNullable(channels.find((channel) => channel.id === id))),
    create: () => Effect.dieMessage("not in these tests"),
    update: () => Effect.succeed(Option.none()),
    remove: () => Effect.succeed(false),
    changes: Stream.never
  })

/**
 * The router over `channels`, a memory storage and a running worker, with the upstreams' callbacks delivered: a
 * local server stands for our public URL and hands each callback to the router. Runs `body` with the storage.
 */
const withWorker = <A, E>(
  channels: ReadonlyArray<ChannelConfig>,
  body: (storage: TaskStorage.TaskStorage["Type"]) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    // eslint-disable-next-line prefer-const -- assigned below, once the router that answers callbacks is built
    let receive: ((callback: Services.UpstreamCallback) => Promise<string>) | undefined
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const url = new URL(request.url ?? "/", "http://callbacks")
        const [, , , channelId, taskId] = url.pathname.split("/").map(decodeURIComponent)
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value])
        )
        const answered = receive === undefined || channelId === undefined || taskId === undefined
          ? Promise.resolve("unknown")
          : receive({
            channelId,
            taskId,
            expires: url.searchParams.get("expires") ?? undefined,
            signature: url.searchParams.get("signature") ?? undefined,
            body: Buffer.concat(chunks).toString("utf8"),
            headers
          })
        void answered.then((outcome) => {
          response.writeHead(outcome === "accepted" ? 200 : 404)
          response.end()
        })
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.sync(() => {
          server.close()
          server.closeAllConnections()
        })
    )
    const publicBaseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const built = yield* Layer.build(
      Channels.layer({ submitWait: "1500 millis" }).pipe(
        Layer.provideMerge(TaskStorage.layerMemory()),
        Layer.provide(Layer.succeed(ChannelStore, storeOf(channels))),
        Layer.provide(Simulated.layer({ videoSeconds: 0.05, imageSeconds: 0.05 })),
        Layer.provide(PriceBook.layer()),
        Layer.provide(Estimates.layer),
        Layer.provide(
          ResultCopy.layer().pipe(Layer.provideMerge(Layer.mergeAll(
            FileStore.layerLocal({ directory: mkdtempSync(join(tmpdir(), "mg-recovery-")) }).pipe(
              Layer.provide(NodeContext.layer)
            ),
            UrlSigner.layer({ publicBaseUrl, secret: Redacted.make("recovery-secret") })
          )))
        ),
        Layer.provide(Billing.layerUnmetered)
      )
    )
    const callbacks = yield* Effect.provide(Services.UpstreamCallbacks, built)
    receive = (callback) => Effect.runPromise(callbacks.receive(callback))
    yield* Worker.run({
      concurrency: 4,
      idle: "50 millis",
      pollDelay: () => 40,
      // an uncertain submit's marker stays this long before the lookup: long enough for `ended`, which samples the
      // task every 20 ms, to see it on a loaded machine (250 ms was missed twice while the whole test run ran)
      retryDelay: () => 1000
    }).pipe(Effect.provide(built))
    return yield* body(yield* Effect.provide(TaskStorage.TaskStorage, built))
  }).pipe(Effect.scoped)

/** Accepts a live task of the model whose prompt names it (the fakes count its jobs by its id); its id. */
const accept = (storage: TaskStorage.TaskStorage["Type"], prompt: string) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const id = Ids.taskId(now)
    yield* storage.accept({
      task: Fixtures.newTask({
        id,
        accountId: "acct_r",
        keyId: "key_r",
        endpoint: "vendor4/text-to-image",
        provider: "vendor4",
        operation: "text-to-image",
        mediaType: "image",
        model,
        input: { prompt: `${id} ${prompt}`, size: "512x512" },
        estimatedSeconds: 1,
        deadlineAt: now + 60_000,
        createdAt: now
      }),
      charge: undefined,
      idempotency: undefined
    })
    return id
  })

/** The task once it ended, and whether an uncertain submit's marker was seen on the way. */
const ended = (storage: TaskStorage.TaskStorage["Type"], id: string) =>
  Effect.gen(function*() {
    let marked = false
    for (let i = 0; i < 1000; i++) {
      const task: TaskRecord = Option.getOrThrow(yield* storage.getById(id))
      if (markedAt(task.upstreamJobId) !== undefined) marked = true
      if (task.status !== "pending" && task.status !== "queued" && task.status !== "running") return { task, marked }
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.dieMessage(`task ${id} did not end`)
  })

/** Runs one task per fault; the fake's job count and the task's end for each. */
const runFaults = (
  fake: { readonly submitFaults: Array<SubmitFault>; readonly jobCount: (text: string) => number },
  storage: TaskStorage.TaskStorage["Type"],
  prompt = ""
) =>
  Effect.forEach(submitFaults, (fault) =>
    Effect.gen(function*() {
      fake.submitFaults.push(fault)
      const id = yield* accept(storage, prompt)
      const { marked, task } = yield* ended(storage, id)
      return { fault, status: task.status, marked, jobs: fake.jobCount(id) }
    }))

/** A fake, closed with the scope. */
const started = <F extends { readonly close: () => Promise<void> }>(start: () => Promise<F>) =>
  Effect.acquireRelease(Effect.promise(start), (fake) => Effect.promise(fake.close))

/** What every fault gives where the job can be found: the task succeeds with one job. */
const oneJobEach = submitFaults.map((fault) => ({ fault, status: "succeeded", marked: true, jobs: 1 }))
/**
 * The same where a callback names the job: a callback that comes before the lost submit's answer times out records
 * the job at once (no marker is ever written), so whether a marker was seen depends on the timing.
 */
const oneJobEachCalledBack = submitFaults.map((fault) => ({ fault, status: "succeeded", jobs: 1 }))
const withoutMarked = (results: ReadonlyArray<{ readonly marked: boolean }>) =>
  results.map(({ marked: _, ...rest }) => rest)

describe("submits without duplicates: a fault at each step of a submit", () => {
  it.live(
    "comfyui: the prompt is found by our key in extra_data (queue or history); one prompt per task",
    () =>
      Effect.gen(function*() {
        const fake = yield* started(() => startComfyFake())
        const channel = channelOf("comfyui", {
          baseUrl: fake.url,
          workflows: { flux: { graph: textToImageWorkflow, inputs: { prompt: "6.text" } } },
          mapping: { [model]: { target: "flux" } }
        }, undefined)
        const results = yield* withWorker([channel], (storage) => runFaults(fake, storage))
        expect(results).toEqual(oneJobEach)
        // every prompt carries the key of its task and channel in its extra_data
        expect(fake.jobCount(`.${channel.id}"`)).toBe(fake.jobs.size)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "fal: the callback names the request the lost submit made; one request per task",
    () =>
      Effect.gen(function*() {
        const fake = yield* started(() => startFalFake({ key: "fal-key" }))
        const mapping = { [model]: { target: "fal-ai/flux/dev" } }
        const channel = channelOf("fal", { baseUrl: fake.url, mapping }, "fal-key")
        const results = yield* withWorker([channel], (storage) => runFaults(fake, storage, "[fake:delay=200]"))
        expect(withoutMarked(results)).toEqual(oneJobEachCalledBack)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "replicate: the signed callback names the prediction the lost create made; one prediction per task",
    () =>
      Effect.gen(function*() {
        const fake = yield* started(() => startReplicateFake())
        const channel = channelOf("replicate", {
          baseUrl: fake.url,
          mapping: { [model]: { target: "black-forest-labs/flux-schnell" } }
        }, fake.token)
        const results = yield* withWorker([channel], (storage) => runFaults(fake, storage, "[fake:delay=200]"))
        expect(withoutMarked(results)).toEqual(oneJobEachCalledBack)
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "openai: no way to find the image, so the task waits the bounded time before it is sent again",
    () =>
      Effect.gen(function*() {
        const fake = yield* started(() => startOpenAiFake())
        const channel = channelOf("openai", {
          baseUrl: fake.url,
          mapping: { [model]: { target: "gpt-image-1", input: `{ "prompt": input.prompt }` } }
        }, fake.key)
        const results = yield* withWorker([channel], (storage) => runFaults(fake, storage))
        // cut before the request made anything: one image; made and then lost: the wait, then a second
        expect(results).toEqual(submitFaults.map((fault) => ({
          fault,
          status: "succeeded",
          marked: true,
          jobs: fault === "reset-before" ? 1 : 2
        })))
      }).pipe(Effect.scoped),
    60_000
  )
})

/** Relay channels `primary` (priority 10) and `backup` on adapters: `primary`'s submits are lost, `backup`'s succeed. */
const lossyRouter = Effect.gen(function*() {
  const calls: Array<string> = []
  const adapter = (channel: ChannelConfig) =>
    Effect.succeed(Upstream.of({
      notifiesChanges: false,
      changes: Stream.empty,
      submit: (task) =>
        Effect.suspend(() => {
          calls.push(`submit ${channel.name}`)
          return channel.name === "backup"
            ? Effect.succeed({ jobId: `backup-${task.id}` })
            : Effect.fail(
              new UpstreamError({ message: "reset", retryable: true, kind: "unavailable", uncertain: true })
            )
        }),
      find: (task) =>
        Effect.sync(() => {
          calls.push(`find ${channel.name}`)
          return { _tag: "Found", jobId: `job-of-${task.id}` } as const
        }),
      poll: () => Effect.succeed({ _tag: "Queued" } as const),
      cancel: () => Effect.sync(() => void calls.push(`cancel ${channel.name}`))
    }))
  const relayChannel = (name: string, priority: number): ChannelConfig => ({
    ...channelOf("relay", { baseUrl: `http://${name}.example` }, "k"),
    id: `ch_${name}`,
    name,
    priority
  })
  const built = yield* Layer.build(
    Channels.layer({ adapters: { relay: adapter }, breaker: { failures: 3, cooldown: "1 hour" } }).pipe(
      Layer.provideMerge(TaskStorage.layerMemory()),
      Layer.provide(Layer.succeed(ChannelStore, storeOf([relayChannel("primary", 10), relayChannel("backup", 0)]))),
      Layer.provide(Simulated.layer({ videoSeconds: 0.05, imageSeconds: 0.05 })),
      Layer.provide(PriceBook.layer()),
      Layer.provide(Estimates.layer),
      Layer.provide(
        ResultCopy.layer({ inlineWait: 0 }).pipe(Layer.provideMerge(Layer.mergeAll(
          FileStore.layerLocal({ directory: mkdtempSync(join(tmpdir(), "mg-recovery-")) }).pipe(
            Layer.provide(NodeContext.layer)
          ),
          UrlSigner.layer({ publicBaseUrl: "http://localhost:3000", secret: Redacted.make("s") })
        )))
      ),
      Layer.provide(Billing.layerUnmetered)
    )
  )
  const upstream = yield* Effect.provide(Upstream, built)
  const storage = yield* Effect.provide(TaskStorage.TaskStorage, built)
  /** Claims the task due first and runs its step (a failed call due again after `retryMs`). */
  const stepAfter = (retryMs: number) =>
    Effect.gen(function*() {
      const [task] = yield* storage.claim("w", 1, 60_000)
      yield* Worker.runStep(task!, { pollDelay: () => 0, retryDelay: () => retryMs }).pipe(
        Effect.provide(TaskStorage.portsOf(storage)),
        Effect.provideService(Upstream, upstream)
      )
    })
  return { calls, upstream, storage, step: stepAfter(0), stepAfter }
})

describe("the router after an uncertain submit", () => {
  it.effect("does not fail over: the error names the channel, and the router looks there for the job", () =>
    Effect.gen(function*() {
      const { calls, step, storage, upstream } = yield* lossyRouter
      const id = yield* accept(storage, "")
      const [task] = yield* storage.claim("w", 1, 60_000)
      const error = yield* Effect.flip(upstream.submit(task!))
      expect(error).toMatchObject({ retryable: true, uncertain: true, channelId: "ch_primary" })
      expect(calls).toEqual(["submit primary"])
      // the worker records the marker on that channel; the next step finds the job there and follows it
      yield* storage.step(task!.id, task!.fence, { nextRunAt: 0, resubmit: true })
      yield* step
      const marked = Option.getOrThrow(yield* storage.getById(id))
      expect(markedAt(marked.upstreamJobId)).toBeTypeOf("number")
      expect(marked.channelId).toBe("ch_primary")
      // a cancel of the marker reaches no upstream
      yield* upstream.cancel(marked, marked.upstreamJobId!)
      yield* step
      expect(Option.getOrThrow(yield* storage.getById(id)).upstreamJobId).toBe(`job-of-${id}`)
      expect(calls).toEqual(["submit primary", "submit primary", "find primary"])
    }).pipe(Effect.scoped))

  it.effect("a worker that died while submitting: the next claim looks for the job on the task's route first", () =>
    Effect.gen(function*() {
      const { calls, step, storage, upstream } = yield* lossyRouter
      const id = yield* accept(storage, "")
      // a claim begins the submit (it reaches primary), and its worker dies: nothing recorded, the lease runs out
      const [task] = yield* storage.claim("w", 1, 1000)
      expect(task!.submitFence).toBe(task!.fence)
      yield* Effect.flip(upstream.submit(task!))
      yield* TestClock.adjust("2 seconds")
      // the next claim finds the task without a job under a newer fence: looked for on the route, found on primary
      yield* step
      const found = Option.getOrThrow(yield* storage.getById(id))
      expect(found.upstreamJobId).toBe(`job-of-${id}`)
      expect(found.channelId).toBe("ch_primary")
      expect(calls).toEqual(["submit primary", "find primary"])
    }).pipe(Effect.scoped))

  it.effect("a channel whose breaker opened is left: the task goes to the next one, its lost job not looked for", () =>
    Effect.gen(function*() {
      const { calls, step, stepAfter, storage } = yield* lossyRouter
      // two lost submits on primary: both tasks marked there, due again in 20 s
      const first = yield* accept(storage, "")
      yield* stepAfter(20_000)
      const second = yield* accept(storage, "")
      yield* stepAfter(20_000)
      expect(calls).toEqual(["submit primary", "submit primary"])
      // the third failure opens primary's breaker: that task goes to backup at once
      const third = yield* accept(storage, "")
      yield* stepAfter(20_000)
      expect(calls.slice(2)).toEqual(["submit primary", "submit backup"])
      expect(Option.getOrThrow(yield* storage.getById(third)).upstreamJobId).toBe(`backup-${third}`)
      // the marked tasks are not looked for on the failing channel: submitted to backup
      yield* TestClock.adjust("30 seconds")
      // (the third task's poll is due too)
      yield* step
      yield* step
      yield* step
      expect(calls.slice(4)).toEqual(["submit backup", "submit backup"])
      for (const id of [first, second]) {
        expect(Option.getOrThrow(yield* storage.getById(id))).toMatchObject({
          upstreamJobId: `backup-${id}`,
          channelId: "ch_backup"
        })
      }
    }).pipe(Effect.scoped))
})

describe("a submitted job while storage is down", () => {
  it.live("its record is written again until storage answers: the job is kept, not submitted a second time", () =>
    Effect.gen(function*() {
      const { calls, storage, upstream } = yield* lossyRouter
      const id = yield* accept(storage, "")
      // storage fails the first two writes that record a job (a database restart), then answers
      let failures = 0
      const flaky: TaskStorage.TaskStorage["Type"] = {
        ...storage,
        step: (taskId, fence, update) =>
          Effect.suspend(() =>
            update.upstreamJobId !== undefined && failures++ < 2
              ? Effect.fail(new PersistenceError({ message: "connection lost" }))
              : storage.step(taskId, fence, update)
          )
      }
      const [task] = yield* storage.claim("w", 1, 60_000)
      // on the backup channel (the primary's submits are lost)
      const onBackup = { ...task!, channelId: "ch_backup" }
      yield* Worker.runStep(onBackup, { pollDelay: () => 1000, retryDelay: () => 0 }).pipe(
        Effect.provide(TaskStorage.portsOf(flaky)),
        Effect.provideService(Upstream, upstream)
      )
      expect(failures).toBe(3)
      expect(Option.getOrThrow(yield* storage.getById(id)).upstreamJobId).toBe(`backup-${id}`)
      expect(calls.filter((call) => call.startsWith("submit backup"))).toEqual(["submit backup"])
    }).pipe(Effect.scoped))
})
