/**
 * What the two halves of finishing a fal task cost, apart (the parts of `bench/upstream-fal.ts`'s finishing):
 *
 * 1. **callback**: the built example server as `npm start` runs it (its V8 flags, access log on and read from a
 *    pipe), a `fal` channel, and `--callbacks` completion callbacks with valid URL signatures, 32 at a time, for
 *    tasks it does not have (each is checked, noted and made due: the whole route but the poll it causes). Prints the
 *    server's CPU per callback (`/proc/<pid>/stat`).
 * 2. **poll**: the `fal` transport in this process (the result copier on a local store), the fal fake in a child
 *    process: `--polls` jobs submitted and done, then polled once each, 32 at a time: the status, the result and
 *    the copy of its image. Prints this process's CPU per poll (`process.cpuUsage`, every thread).
 *
 *   npm run build && tsx bench/upstream-costs.ts -- [--parts callback,poll] [--callbacks 6000] [--polls 4000]
 *     [--rounds 2]
 *
 * Rounds alternate the parts; figures are per round (a shared machine moves them by 10–20%). Asserts nothing.
 */
import { NodeContext } from "@effect/platform-node"
import { type FalFake, startFalFake } from "@mediagate/testing/fakes/fal"
import * as Fixtures from "@mediagate/testing/fixtures"
import type { ChannelConfig } from "@mediagate/vendors/ChannelStore"
import * as Fal from "@mediagate/vendors/FalUpstream"
import * as FileStore from "@mediagate/vendors/FileStore"
import * as Mapping from "@mediagate/vendors/Mapping"
import * as ResultCopy from "@mediagate/vendors/ResultCopy"
import * as UrlSigner from "@mediagate/vendors/UrlSigner"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { fork } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { adminToken, arg, call, cpuMs, mainScript, serverEnv, start } from "./support.js"

const fileSecret = "bench-file-secret"
const channelKey = "0123456789abcdef0123456789abcdef"

/** The fal fake, when this file runs as its child process: its URL goes to the parent. */
const serveFake = async () => {
  const fake: FalFake = await startFalFake({ key: "bench-fal-key" })
  process.send?.(fake.url)
}

/** Server CPU per callback: `n` signed callbacks for unknown tasks of a fal channel. */
const callbackCost = async (n: number) => {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-bench-callbacks-"))
  const server = await start(
    mainScript,
    serverEnv(dir, undefined, { MEDIAGATE_PUBLIC_BASE_URL: "http://127.0.0.1:9", MEDIAGATE_CHANNEL_KEY: channelKey }),
    { log: () => {} }
  )
  try {
    const created = await call(server.base, "/admin/v1/channels", {
      method: "POST",
      token: adminToken,
      body: {
        name: "fal",
        transport: "fal",
        settings: { base_url: "http://127.0.0.1:9" },
        credentials: { api_key: "bench-fal-key" },
        families: ["vendor4"],
        models: ["vendor4-3-0-t2i"]
      }
    }) as { data: { id: string } }
    const channel = created.data.id
    const expires = Math.floor(Date.now() / 1000) + 3600
    const urls = Array.from({ length: n }, (_, i) => {
      const task = `task_bench${String(i).padStart(20, "0")}`
      const signature = UrlSigner.signatureOf(Redacted.make(fileSecret), `callbacks/${channel}/${task}`, expires)
      return `${server.base}/callbacks/v1/${channel}/${task}?expires=${expires}&signature=${signature}`
    })
    const body = JSON.stringify({ request_id: "r1", gateway_request_id: "r1", status: "OK", payload: {} })
    let next = 0
    let refused = 0
    const before = cpuMs(server.child.pid)
    const began = performance.now()
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (next < n) {
        const answer = await fetch(urls[next++]!, {
          method: "POST",
          body,
          headers: { "content-type": "application/json" }
        })
        await answer.arrayBuffer()
        if (answer.status !== 200) refused++
      }
    }))
    const cpu = cpuMs(server.child.pid) - before
    return `callback: ${n} (${refused} not 200) in ${Math.round(performance.now() - began)} ms; server CPU ${
      Math.round((cpu * 1000) / n)
    } µs per callback`
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** This process's CPU per fal poll of a done job: status, result, copy. */
const pollCost = async (n: number, fakeUrl: string) => {
  const directory = mkdtempSync(join(tmpdir(), "mediagate-bench-polls-"))
  const layer = ResultCopy.layer({ tempDirectory: join(directory, "downloads") }).pipe(Layer.provideMerge(
    Layer.mergeAll(
      FileStore.layerLocal({ directory: join(directory, "store") }).pipe(Layer.provide(NodeContext.layer)),
      UrlSigner.layer({ publicBaseUrl: "http://gateway.test", secret: Redacted.make(fileSecret) })
    )
  ))
  const channel: ChannelConfig = {
    id: "ch_bench",
    name: "fal",
    transport: "fal",
    settings: { mapping: { "vendor4-3-0-t2i": { target: "fal-ai/flux" } } },
    credentials: { apiKey: Redacted.make("bench-fal-key") },
    families: ["vendor4"],
    models: [],
    priority: 0,
    weight: 1,
    concurrency: 0,
    enabled: true,
    disabledReason: null,
    createdAt: 0,
    updatedAt: 0
  }
  const now = Date.now()
  const tasks = Array.from({ length: n }, (_, i) =>
    Fixtures.taskRecord({
      id: `task_bench${String(i).padStart(20, "0")}`,
      endpoint: "vendor4/text-to-image",
      provider: "vendor4",
      operation: "text-to-image",
      mediaType: "image",
      model: "vendor4-3-0-t2i",
      status: "queued",
      input: { prompt: "a lighthouse [fake:delay=0]" },
      estimatedSeconds: 10,
      deadlineAt: now + 600_000,
      createdAt: now,
      startedAt: now
    }))
  try {
    return await Effect.runPromise(
      Effect.gen(function*() {
        const copier = yield* ResultCopy.ResultCopier
        const fal = Fal.make({
          channel,
          baseUrl: fakeUrl,
          mapping: Mapping.compile(channel.settings.mapping),
          copier,
          policy: { trustedHosts: ["127.0.0.1"], allowPrivate: false, timeoutMs: 10_000, maxBytes: 100 * 1024 * 1024 },
          callbackUrl: () => Effect.succeed(undefined)
        })
        const jobs = yield* Effect.forEach(tasks, (task) => fal.upstream.submit(task), { concurrency: 32 })
        yield* Effect.sleep("500 millis")
        const before = process.cpuUsage()
        const began = performance.now()
        const states = yield* Effect.forEach(tasks, (task, i) => fal.upstream.poll(task, jobs[i]!.jobId), {
          concurrency: 32
        })
        const used = process.cpuUsage(before)
        const succeeded = states.filter((state) => state._tag === "Succeeded").length
        return `poll: ${n} (${succeeded} succeeded) in ${Math.round(performance.now() - began)} ms; CPU ${
          Math.round((used.user + used.system) / n)
        } µs per poll`
      }).pipe(Effect.provide(layer), Effect.scoped, Effect.withTracerEnabled(false))
    )
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

if (process.argv.includes("--fake-child")) {
  await serveFake()
} else {
  const parts = arg("parts", "callback,poll").split(",")
  const rounds = Number(arg("rounds", "2"))
  const child = parts.includes("poll")
    ? fork(fileURLToPath(import.meta.url), ["--fake-child"], { execArgv: ["--import", "tsx"] })
    : undefined
  const fakeUrl = child === undefined
    ? ""
    : await new Promise<string>((resolve) => child.once("message", (url) => resolve(String(url))))
  try {
    for (let round = 1; round <= rounds; round++) {
      if (parts.includes("callback")) {
        console.log(`round ${round} ${await callbackCost(Number(arg("callbacks", "6000")))}`)
      }
      if (parts.includes("poll")) console.log(`round ${round} ${await pollCost(Number(arg("polls", "4000")), fakeUrl)}`)
    }
  } finally {
    child?.kill()
  }
}
