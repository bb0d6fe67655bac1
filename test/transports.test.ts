/**
 * The HTTP transports of channels end to end (docs/channels.md): `fal`, `replicate`, `comfyui` and `openai`, each
 * against its protocol fake (`@mediagate/testing/fakes/*`, started once for the file), through the built server's
 * HTTP API (`examples/server/dist`), with the gateway on SQLite and on PostgreSQL (a fresh database each; skipped
 * with a warning when no PostgreSQL answers at 127.0.0.1:5432, failing under `CI=true`).
 *
 * One gateway per database serves every scenario: its public base URL is its own address (the fakes call it back),
 * the SSRF guard is on (no `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE`: only each channel's `base_url` host, 127.0.0.1, and its
 * `result_hosts` are trusted), 2 workers, a task deadline of 30 s. Its channels each serve one model, so that routing
 * is unambiguous: fal, replicate (upstream callbacks on), comfyui (a stored workflow) and openai (an image model and
 * a video model), and the channels of the scenarios below. Each scenario uses an account of its own.
 *
 * 1. **Success**, every transport (openai: image and video): the task succeeds; its result is our signed `/files/`
 *    URL on the gateway, which answers the fake's bytes (PNG, or MP4) with their content type.
 * 2. **Upstream failure** (`[fake:fail=boom]`; openai on its video endpoint, where a job fails): `failed`,
 *    `PROVIDER_ERROR`, a message with `boom`; the account's ledger holds one charge and one refund per task and the
 *    balance is back where it was.
 * 3. **Cancel** of a `[fake:delay=20000]` task once the upstream has its job reaches the upstream: fal's job
 *    cancelled, Replicate's prediction canceled, ComfyUI's prompt deleted from its queue (or interrupted), the
 *    OpenAI video deleted; the task is `cancelled` and refunded.
 * 4. **Callbacks and polling** (fal, replicate): on a channel polling every 10 minutes only the upstream's callback
 *    can finish a task soon: it does, within a few seconds, and the fake sent it; on a channel with callbacks off
 *    polling every 300 ms the task finishes, no callback asked. A callback whose URL signature is wrong (fal), or
 *    whose Standard Webhooks signature is (replicate), answers 401; one for an unknown channel 404.
 * 5. **Failover across transports**: fal (priority 10, its fake down) and replicate (priority 0) serve one model:
 *    every task succeeds on replicate, charged once, never refunded.
 * 6. **Result URLs to internal addresses refused** (fal): outputs at `http://127.0.0.2:<port>/secret` (a server
 *    counting its requests), `http://169.254.169.254/latest/meta-data`, and a redirect from the trusted host
 *    (127.0.0.1) to the 127.0.0.2 server: each task `failed` `PROVIDER_ERROR`, refunded, and the 127.0.0.2 server got
 *    no request; on a channel with `result_hosts: ["127.0.0.2"]` the same URL is copied.
 * 7. **400 MB result without `Content-Length`** (chunked, from a server of ours): copied and served with
 *    `size_bytes` = 400 MiB, the bytes served back whole; the gateway's RSS (`VmRSS`, sampled every 50 ms) never
 *    more than 64 MB above where it was before the task until the task succeeded, and never more than 128 MB above
 *    it while the file is then served (a stream too: the garbage of its reads, never the file).
 * 8. **A 1 byte/s result holds no worker**: with 2 workers and 4 such downloads in flight, tasks on the other
 *    transports still finish within a few seconds; the slow tasks end by their deadline (`failed` or `expired`,
 *    refunded) and the gateway closes the slow downloads then.
 *
 * A test that fails keeps the gateway's log in a temporary directory (its path is printed).
 *
 * @since 0.1.0
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Catalog, Examples } from "@mediagate/contract"
import { type ComfyFake, startComfyFake, textToImageWorkflow } from "@mediagate/testing/fakes/comfyui"
import { close, mp4Bytes, pngBytes } from "@mediagate/testing/fakes/common"
import { type FalFake, startFalFake } from "@mediagate/testing/fakes/fal"
import { type OpenAiFake, startOpenAiFake } from "@mediagate/testing/fakes/openai"
import { type ReplicateFake, startReplicateFake } from "@mediagate/testing/fakes/replicate"
import { randomBytes } from "node:crypto"
import { readFileSync, rmSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import {
  allPages,
  type ChannelCreate,
  channelKey,
  type ChannelView,
  createChannel,
  type Envelope,
  freshDatabase,
  http,
  type Keys,
  type LedgerEntry,
  makeAccount,
  type NamedServer,
  ok,
  type OpenScope,
  openScope,
  readTask,
  readTasks,
  serverEnv,
  sleep,
  type TaskView,
  terminal,
  unsucceeded,
  waitFor,
  withLogs
} from "./harness.js"
import { type RunningServer, runPostgres, startServer } from "./server.js"

if (!runPostgres) {
  console.warn("PostgreSQL is not running at 127.0.0.1:5432: the PostgreSQL transport scenarios are skipped")
}

/** The models each channel serves (one channel per model, but for the failover pair). */
const models = {
  fal: "vendor4-3-0-t2i",
  replicate: "vendor4-4-0",
  comfyui: "vendor4-4-5",
  openaiImage: "vendor4-5-0-lite",
  openaiVideo: "vendor3-3_fast",
  falCallback: "vendor1-1-0-lite-t2v",
  falPolling: "vendor1-1-0-pro-fast",
  replicateCallback: "vendor2-v2-6",
  replicatePolling: "vendor2-v3",
  failover: "vendor5q3-turbo",
  guarded: "vendor3-3",
  resultHosts: "vendor5q3-pro"
} as const
type ModelName = keyof typeof models

/** The gateway's task deadline (`MEDIAGATE_TASK_TIMEOUT`). */
const deadlineMs = 30_000
/** The size of the large result: 400 MiB. */
const bigBytes = 400 * 1024 * 1024
/** The most the gateway's RSS may rise while it copies and serves the large result. */
const rssHeadroom = 64 * 1024 * 1024
/** What an account is credited with. */
const credit = 1000

// -----------------------------------------------------------------------------------------------------------------
// Requests
// -----------------------------------------------------------------------------------------------------------------

/** The generation path, family and minimal input of a model (its text-to-… endpoint when it has several). */
const requestOf = (model: string) => {
  const all = Examples.minimalRequests.filter((request) => request.model === model)
  const chosen = all.find((request) => request.endpoint.includes("/text-to-")) ?? all[0]
  if (chosen === undefined) throw new Error(`no example request for ${model}`)
  const endpoint = Catalog.endpointList.find((candidate) => candidate.key === chosen.endpoint)!
  return { path: `/api/v1${endpoint.path}`, family: endpoint.family, input: chosen.body.input }
}

/** Creates a live task of `models[name]` with `prompt` (the fakes read its directives); answers its id. */
const createTask = async (base: string, keys: Keys, name: ModelName, prompt: string): Promise<string> => {
  const model = models[name]
  const request = requestOf(model)
  const reply = await http<Envelope<{ readonly id: string }>>(base, request.path, {
    token: keys.live,
    json: { model, input: { ...request.input, prompt } }
  })
  return ok(reply, `create a ${model} task`).id
}

/** Waits until every task ended; answers them. */
const ended = (base: string, ids: ReadonlyArray<string>, timeoutMs: number) =>
  waitFor(`${ids.length} task(s) to end`, timeoutMs, async () => {
    const tasks = await readTasks(base, ids)
    return tasks.every((task) => terminal.has(task.status)) ? tasks : undefined
  }, 100)

/** Waits until the task's job is on its upstream (or it ended); answers the task. */
const submitted = (base: string, id: string) =>
  waitFor(`${id} to be submitted`, 15_000, async () => {
    const task = await readTask(base, id)
    return task.upstream_job_id !== null || terminal.has(task.status) ? task : undefined
  }, 100)

/** Fetches a result URL: status, content type and bytes. */
const download = async (url: string) => {
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000) })
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    bytes: new Uint8Array(await response.arrayBuffer())
  }
}

/** The task's one result is our signed file URL, answering `bytes` as `contentType`. */
const expectCopied = async (base: string, task: TaskView, bytes: Uint8Array, contentType: string) => {
  expect(task.status, `${task.id}: ${task.status} ${JSON.stringify(task.error ?? null)}`).toBe("succeeded")
  expect(task.result?.length, `${task.id}: result items`).toBe(1)
  const item = task.result![0]!
  expect(item.url.startsWith(`${base}/files/`), `${task.id}: result URL ${item.url}`).toBe(true)
  expect(item.url).toMatch(/[?&]signature=/)
  expect(item.size_bytes).toBe(bytes.length)
  const got = await download(item.url)
  expect(got.status, `${task.id}: GET ${item.url}`).toBe(200)
  expect(got.contentType, `${task.id}: content type`).toBe(contentType)
  expect(Buffer.from(got.bytes).equals(Buffer.from(bytes)), `${task.id}: the fake's bytes`).toBe(true)
}

/** The account's ledger entries of `kind` (`charge`, `refund`). */
const ledger = (base: string, keys: Keys, kind: "charge" | "refund") =>
  allPages<LedgerEntry>(base, `/api/v1/balance/ledger?kind=${kind}`, keys.live)

const balanceOf = async (base: string, keys: Keys) => {
  const reply = await http<Envelope<{ readonly balance: number }>>(base, "/api/v1/balance", { token: keys.live })
  return ok(reply, "balance").balance
}

/**
 * The account (which ran `tasks` and nothing else) was charged once per task and, when `refunded`, refunded each
 * once (its balance back to the credit); otherwise never refunded.
 */
const expectBilled = async (base: string, keys: Keys, tasks: ReadonlyArray<TaskView>, refunded: boolean) => {
  const charges = await ledger(base, keys, "charge")
  const refunds = await ledger(base, keys, "refund")
  const ids = tasks.map((task) => task.id).sort()
  expect(charges.map((entry) => entry.task_id).sort(), "one charge per task").toEqual(ids)
  expect(refunds.map((entry) => entry.task_id).sort(), refunded ? "one refund per task" : "no refund").toEqual(
    refunded ? ids : []
  )
  for (const task of tasks) {
    const charge = charges.find((entry) => entry.task_id === task.id)!
    expect(charge.amount, `${task.id}: its charge`).toBeLessThan(0)
    expect(task.charged, `${task.id}: charged`).toBeCloseTo(-charge.amount, 6)
    expect(task.refunded, `${task.id}: refunded`).toBeCloseTo(refunded ? -charge.amount : 0, 6)
    const refund = refunds.find((entry) => entry.task_id === task.id)
    if (refunded) expect(refund?.amount, `${task.id}: its refund`).toBeCloseTo(-charge.amount, 6)
  }
  const charged = charges.reduce((sum, entry) => sum - entry.amount, 0)
  expect(await balanceOf(base, keys), "the balance").toBeCloseTo(refunded ? credit : credit - charged, 6)
}

/** A task's `failed` `PROVIDER_ERROR` with a message matching `message`. */
const expectProviderError = (task: TaskView, message: RegExp) => {
  expect(task.status, `${task.id}: ${task.status} ${JSON.stringify(task.error ?? null)}`).toBe("failed")
  expect(task.error?.code, `${task.id}: error code`).toBe("PROVIDER_ERROR")
  expect(task.error?.message ?? "", `${task.id}: error message`).toMatch(message)
}

// -----------------------------------------------------------------------------------------------------------------
// Servers of our own: a counted "internal" server, a redirector, a slow and a large file
// -----------------------------------------------------------------------------------------------------------------

/** A plain HTTP server on `host`, recording the paths asked. */
const startPlain = async (host: string, handle: (request: IncomingMessage, response: ServerResponse) => void) => {
  const paths: Array<string> = []
  const server: Server = createServer((request, response) => {
    paths.push(request.url ?? "/")
    handle(request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    /** Requests received for `path`. */
    hits: (path: string) => paths.filter((asked) => asked === path).length,
    server
  }
}

/** One byte a second, forever (chunked, no `Content-Length`); counts connections opened and closed per path. */
const startSlow = async () => {
  const opened = new Map<string, number>()
  const closed = new Map<string, number>()
  const timers = new Set<ReturnType<typeof setInterval>>()
  const plain = await startPlain("127.0.0.1", (request, response) => {
    const path = request.url ?? "/"
    opened.set(path, (opened.get(path) ?? 0) + 1)
    response.writeHead(200, { "content-type": "video/mp4" })
    response.write(mp4Bytes.subarray(0, 1))
    const timer = setInterval(() => response.write(Buffer.from([0])), 1000)
    timers.add(timer)
    response.on("close", () => {
      clearInterval(timer)
      timers.delete(timer)
      closed.set(path, (closed.get(path) ?? 0) + 1)
    })
  })
  return {
    ...plain,
    opened: (path: string) => opened.get(path) ?? 0,
    closed: (path: string) => closed.get(path) ?? 0,
    stop: () => {
      for (const timer of timers) clearInterval(timer)
    }
  }
}

/** `bigBytes` of MP4-looking bytes, chunked (no `Content-Length`), written as fast as the reader takes them. */
const startBig = () =>
  startPlain("127.0.0.1", (_request, response) => {
    response.writeHead(200, { "content-type": "video/mp4" })
    const chunk = Buffer.alloc(1024 * 1024)
    const first = Buffer.concat([Buffer.from(mp4Bytes), Buffer.alloc(chunk.length - mp4Bytes.length)])
    let sent = 0
    const pump = () => {
      while (sent < bigBytes) {
        const part = sent === 0 ? first : chunk
        sent += part.length
        if (!response.write(part)) return void response.once("drain", pump)
      }
      response.end()
    }
    pump()
  })

/** The resident set size of a process, bytes (`/proc/<pid>/status`). */
const rssOf = (pid: number): number => {
  const found = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  if (found === null) throw new Error(`no VmRSS for process ${pid}`)
  return Number(found[1]) * 1024
}

// -----------------------------------------------------------------------------------------------------------------
// The fakes and servers of the file
// -----------------------------------------------------------------------------------------------------------------

interface Upstreams {
  readonly fal: FalFake
  /** A second fal fake, down (503) for good: the failing side of the failover. */
  readonly falDown: FalFake
  readonly replicate: ReplicateFake
  readonly comfy: ComfyFake
  readonly openai: OpenAiFake
  /** The "internal" server on 127.0.0.2. */
  readonly internal: Awaited<ReturnType<typeof startPlain>>
  /** On 127.0.0.1 (trusted): answers `302 Location: <internal>/secret…` for `/to/secret…`. */
  readonly redirector: Awaited<ReturnType<typeof startPlain>>
  readonly slow: Awaited<ReturnType<typeof startSlow>>
  readonly big: Awaited<ReturnType<typeof startBig>>
}

let upstreams: Upstreams | undefined
const fakes = (): Upstreams => {
  if (upstreams === undefined) throw new Error("the fakes did not start")
  return upstreams
}

beforeAll(async () => {
  const falDown = await startFalFake({ key: "fal-down-key" })
  falDown.down = true
  const internal = await startPlain("127.0.0.2", (_request, response) => {
    response.writeHead(200, { "content-type": "image/png", "content-length": pngBytes.length })
    response.end(pngBytes)
  })
  upstreams = {
    fal: await startFalFake(),
    falDown,
    replicate: await startReplicateFake(),
    comfy: await startComfyFake(),
    openai: await startOpenAiFake(),
    internal,
    redirector: await startPlain("127.0.0.1", (request, response) => {
      const location = `${internal.url}${(request.url ?? "/").replace(/^\/to/, "")}`
      response.writeHead(302, { location, "content-length": 0 })
      response.end()
    }),
    slow: await startSlow(),
    big: await startBig()
  }
})

afterAll(async () => {
  if (upstreams === undefined) return
  const { big, comfy, fal, falDown, internal, openai, redirector, replicate, slow } = upstreams
  slow.stop()
  await Promise.all([fal.close(), falDown.close(), replicate.close(), comfy.close(), openai.close()])
  await Promise.all([internal, redirector, slow, big].map((plain) => close(plain.server)))
})

// -----------------------------------------------------------------------------------------------------------------
// The gateway
// -----------------------------------------------------------------------------------------------------------------

type ChannelName =
  | "fal"
  | "replicate"
  | "comfyui"
  | "openai"
  | "falCallback"
  | "falPolling"
  | "replicateCallback"
  | "replicatePolling"
  | "failoverFal"
  | "failoverReplicate"
  | "guarded"
  | "resultHosts"

interface Gateway {
  readonly server: RunningServer
  readonly base: string
  readonly channels: Readonly<Record<ChannelName, ChannelView>>
}

/** What a channel of a transport to a fake takes: its base URL and key, and the models it serves. */
const channelTo = (
  name: string,
  transport: "fal" | "replicate" | "comfyui" | "openai",
  fake: { readonly url: string },
  key: string | undefined,
  served: ReadonlyArray<ModelName>,
  settings: NonNullable<ChannelCreate["settings"]> = {},
  routing: Partial<ChannelCreate> = {}
): ChannelCreate => ({
  name,
  transport,
  settings: { base_url: fake.url, ...settings },
  ...(key === undefined ? {} : { credentials: { api_key: key } }),
  families: [...new Set(served.map((model) => requestOf(models[model]).family))],
  models: served.map((model) => models[model]),
  ...routing
})

/** A mapping of the models to one upstream target each. */
const targets = (pairs: ReadonlyArray<readonly [ModelName, string]>) =>
  Object.fromEntries(pairs.map(([model, target]) => [models[model], { target }]))

/** The gateway's channels (see the module's comment). */
const channelsOf = (up: Upstreams): Record<ChannelName, ChannelCreate> => {
  const falKey = up.fal.key
  const token = up.replicate.token
  const flux = "fal-ai/flux/dev"
  const fluxReplicate = "black-forest-labs/flux-dev"
  return {
    fal: channelTo("fal", "fal", up.fal, falKey, ["fal"], { mapping: targets([["fal", flux]]) }),
    replicate: channelTo("replicate", "replicate", up.replicate, token, ["replicate"], {
      mapping: targets([["replicate", fluxReplicate]])
    }),
    comfyui: channelTo("comfyui", "comfyui", up.comfy, undefined, ["comfyui"], {
      poll_interval_ms: 300,
      workflows: { [models.comfyui]: { graph: textToImageWorkflow, inputs: { prompt: "6.text" } } }
    }),
    openai: channelTo("openai", "openai", up.openai, up.openai.key, ["openaiImage", "openaiVideo"], {
      poll_interval_ms: 300,
      mapping: targets([["openaiImage", "gpt-image-1"], ["openaiVideo", "sora-2"]])
    }),
    falCallback: channelTo("fal callbacks", "fal", up.fal, falKey, ["falCallback"], {
      poll_interval_ms: 600_000,
      mapping: targets([["falCallback", "fal-ai/fake-video/text-to-video"]])
    }),
    falPolling: channelTo("fal polling", "fal", up.fal, falKey, ["falPolling"], {
      callbacks: false,
      poll_interval_ms: 300,
      mapping: targets([["falPolling", "fal-ai/fake-video/text-to-video"]])
    }),
    replicateCallback: channelTo("replicate callbacks", "replicate", up.replicate, token, ["replicateCallback"], {
      poll_interval_ms: 600_000,
      mapping: targets([["replicateCallback", "fake/video"]])
    }),
    replicatePolling: channelTo("replicate polling", "replicate", up.replicate, token, ["replicatePolling"], {
      callbacks: false,
      poll_interval_ms: 300,
      mapping: targets([["replicatePolling", "fake/video"]])
    }),
    failoverFal: channelTo("failover fal (down)", "fal", up.falDown, up.falDown.key, ["failover"], {
      mapping: targets([["failover", "fal-ai/fake-video"]])
    }, { priority: 10 }),
    failoverReplicate: channelTo("failover replicate", "replicate", up.replicate, token, ["failover"], {
      mapping: targets([["failover", "fake/video"]])
    }, { priority: 0 }),
    guarded: channelTo("fal guarded", "fal", up.fal, falKey, ["guarded"], {
      callbacks: false,
      poll_interval_ms: 300,
      mapping: targets([["guarded", "fal-ai/fake-video"]])
    }),
    resultHosts: channelTo("fal with result hosts", "fal", up.fal, falKey, ["resultHosts"], {
      callbacks: false,
      poll_interval_ms: 300,
      result_hosts: ["127.0.0.2"],
      mapping: targets([["resultHosts", "fal-ai/fake-video"]])
    })
  }
}

/** Starts the gateway on a fresh database of `scope` and makes its channels. */
const startGateway = async (scope: OpenScope, postgres: boolean): Promise<Gateway> => {
  const database = freshDatabase(scope, postgres, "transports")
  scope.defer(() => rmSync(database["MEDIAGATE_DATA_DIR"]!, { recursive: true, force: true }))
  const server = scope.server(
    "gateway",
    await startServer(
      await serverEnv({
        ...database,
        MEDIAGATE_CHANNEL_KEY: channelKey,
        MEDIAGATE_WORKER_CONCURRENCY: "2",
        MEDIAGATE_TASK_TIMEOUT: `${deadlineMs}ms`
      })
    )
  )
  const wanted = channelsOf(fakes())
  const channels: Partial<Record<ChannelName, ChannelView>> = {}
  for (const [name, channel] of Object.entries(wanted) as Array<[ChannelName, ChannelCreate]>) {
    channels[name] = await createChannel(server.baseUrl, channel)
  }
  return { server, base: server.baseUrl, channels: channels as Record<ChannelName, ChannelView> }
}

// -----------------------------------------------------------------------------------------------------------------
// Scenarios
// -----------------------------------------------------------------------------------------------------------------

const databases = [{ name: "SQLite", postgres: false }, { name: "PostgreSQL", postgres: true }] as const

for (const database of databases) {
  describe.skipIf(database.postgres && !runPostgres)(`channel transports, the gateway on ${database.name}`, () => {
    const scope = openScope()
    let started: Gateway | undefined
    const logs = (): ReadonlyArray<NamedServer> => scope.servers
    /** A test's body on the gateway and the fakes; when it fails, the gateway's log is kept. */
    const step = (label: string, body: (gw: Gateway, up: Upstreams) => Promise<void>) => () =>
      withLogs(`${label} (${database.name})`, logs(), () => {
        if (started === undefined) throw new Error("the gateway did not start")
        return body(started, fakes())
      }, "mg-transports-")

    beforeAll(() =>
      withLogs(`gateway (${database.name})`, logs(), async () => {
        started = await startGateway(scope, database.postgres)
      }, "mg-transports-"), 90_000)
    afterAll(() => scope.close(), 60_000)

    it(
      "success: every transport's result is copied and served under our signed URL",
      step("success", async (gw, up) => {
        const keys = await makeAccount(gw.base, "success", credit)
        const cases = [
          { name: "fal", channel: "fal", bytes: pngBytes, type: "image/png" },
          { name: "replicate", channel: "replicate", bytes: pngBytes, type: "image/png" },
          { name: "comfyui", channel: "comfyui", bytes: pngBytes, type: "image/png" },
          { name: "openaiImage", channel: "openai", bytes: pngBytes, type: "image/png" },
          { name: "openaiVideo", channel: "openai", bytes: mp4Bytes, type: "video/mp4" }
        ] as const
        const ids = await Promise.all(cases.map((c) => createTask(gw.base, keys, c.name, `success on ${c.name}`)))
        const tasks = await ended(gw.base, ids, 20_000)
        for (const [i, c] of cases.entries()) {
          expect(tasks[i]!.channel_id, c.name).toBe(gw.channels[c.channel].id)
          await expectCopied(gw.base, tasks[i]!, c.bytes, c.type)
        }
        await expectBilled(gw.base, keys, tasks, false)
        // what the upstreams were sent: the mapped targets, our prompt
        const [fal, replicate, comfy, , video] = tasks.map((task) => task.upstream_job_id ?? "")
        const falJob = up.fal.jobs.get(fal!.split("|")[1]!)
        expect(falJob?.model).toBe("fal-ai/flux/dev")
        expect(falJob?.input["prompt"]).toBe("success on fal")
        expect(up.replicate.predictions.get(replicate!)?.model).toBe("black-forest-labs/flux-dev")
        expect(JSON.stringify(up.comfy.jobs.get(comfy!)?.graph["6"])).toContain("success on comfyui")
        expect(up.openai.images.at(-1)?.input["model"]).toBe("gpt-image-1")
        expect(up.openai.videos.get(video!)?.model).toBe("sora-2")
      }),
      60_000
    )

    it(
      "upstream failure: failed PROVIDER_ERROR with the upstream's message, charged and refunded once",
      step("failure", async (gw) => {
        const keys = await makeAccount(gw.base, "failure", credit)
        const names = ["fal", "replicate", "comfyui", "openaiVideo"] as const
        const ids = await Promise.all(names.map((name) => createTask(gw.base, keys, name, `[fake:fail=boom] ${name}`)))
        const tasks = await ended(gw.base, ids, 30_000)
        for (const task of tasks) expectProviderError(task, /boom/)
        await expectBilled(gw.base, keys, tasks, true)
      }),
      60_000
    )

    it(
      "cancel reaches the upstream: fal, replicate, comfyui, openai",
      step("cancel", async (gw, up) => {
        const keys = await makeAccount(gw.base, "cancel", credit)
        // ComfyUI runs one prompt at a time: a first one (of another account) keeps the cancelled one in its queue
        const other = await makeAccount(gw.base, "blocker", credit)
        const blocker = await createTask(gw.base, other, "comfyui", "[fake:delay=6000] blocker")
        await waitFor("the blocker to run on ComfyUI", 15_000, async () => {
          const job = up.comfy.jobs.get((await readTask(gw.base, blocker)).upstream_job_id ?? "")
          return job?.state === "running" ? true : undefined
        }, 100)
        const names = ["fal", "replicate", "comfyui", "openaiVideo"] as const
        const ids = await Promise.all(
          names.map((name) => createTask(gw.base, keys, name, `[fake:delay=20000] cancel ${name}`))
        )
        const jobs = await Promise.all(ids.map(async (id) => (await submitted(gw.base, id)).upstream_job_id))
        for (const [i, id] of ids.entries()) {
          expect(jobs[i], `${names[i]}: the upstream's job`).not.toBeNull()
          const reply = await http<Envelope<{ readonly status: string }>>(gw.base, `/api/v1/tasks/${id}/cancel`, {
            method: "POST",
            token: keys.live
          })
          expect(ok(reply, `cancel ${names[i]}`).status).toBe("cancelled")
        }
        const [fal, replicate, comfy, video] = jobs.map((job) => job ?? "")
        await waitFor("the upstreams to record the cancels", 10_000, async () => {
          const done = [
            up.fal.jobs.get(fal!.split("|")[1]!)?.cancelled === true,
            up.replicate.predictions.get(replicate!)?.canceledAt !== undefined,
            ["deleted", "interrupted"].includes(up.comfy.jobs.get(comfy!)?.state ?? ""),
            up.openai.videos.get(video!)?.deleted === true
          ]
          return done.every(Boolean) ? true : undefined
        }, 100)
        const tasks = await readTasks(gw.base, ids)
        expect(tasks.map((task) => task.status)).toEqual(names.map(() => "cancelled"))
        await expectBilled(gw.base, keys, tasks, true)
        const [first] = await ended(gw.base, [blocker], 20_000)
        expect(first!.status, "the blocker").toBe("succeeded")
      }),
      60_000
    )

    it(
      "callbacks finish tasks (fal, replicate), polling does without; wrong signatures 401, unknown channel 404",
      step("callbacks", async (gw, up) => {
        const keys = await makeAccount(gw.base, "callbacks", credit)
        const falHooks = up.fal.counts().webhooks
        const began = Date.now()
        const names = ["falCallback", "replicateCallback", "falPolling", "replicatePolling"] as const
        const ids = await Promise.all(
          names.map((name) => createTask(gw.base, keys, name, `[fake:video][fake:delay=1500] ${name}`))
        )
        // the callback channels poll every 10 minutes: only the callbacks can end their tasks this soon
        const tasks = await ended(gw.base, ids, 5000)
        console.info(`callbacks (${database.name}): 4 jobs of 1.5 s ended in ${Date.now() - began} ms`)
        for (const task of tasks) await expectCopied(gw.base, task, mp4Bytes, "video/mp4")
        const [falTask, replicateTask, falPolled, replicatePolled] = tasks
        expect(falTask!.polls, "polls of the fal callback task").toBeLessThanOrEqual(3)

        // the callbacks were asked for, sent and accepted
        const falJob = up.fal.jobs.get(falTask!.upstream_job_id!.split("|")[1]!)!
        const falUrl = falJob.webhook ?? ""
        expect(falUrl.startsWith(`${gw.base}/callbacks/v1/${gw.channels.falCallback.id}/${falTask!.id}?`), falUrl)
          .toBe(true)
        expect(up.fal.counts().webhooks - falHooks, "webhooks fal sent").toBeGreaterThanOrEqual(1)
        const prediction = up.replicate.predictions.get(replicateTask!.upstream_job_id!)!
        const replicateUrl = prediction.webhook ?? ""
        expect(replicateUrl.startsWith(`${gw.base}/callbacks/v1/${gw.channels.replicateCallback.id}/`), replicateUrl)
          .toBe(true)
        await waitFor("replicate's webhook answered 200", 5000, async () => {
          const hooks = up.replicate.webhooks.filter((hook) => hook.predictionId === prediction.id)
          return hooks.some((hook) => hook.status === 200) ? true : undefined
        })
        // the polling channels asked for none
        expect(up.fal.jobs.get(falPolled!.upstream_job_id!.split("|")[1]!)?.webhook).toBeUndefined()
        expect(up.replicate.predictions.get(replicatePolled!.upstream_job_id!)?.webhook).toBeUndefined()

        // a callback URL with a wrong signature, or none
        const body = { request_id: falJob.id, gateway_request_id: falJob.id, status: "OK", payload: {} }
        const forged = falUrl.replace(/signature=[^&]+/, `signature=${randomBytes(32).toString("base64url")}`)
        const wrong = await http<Envelope<unknown>>(forged, "", { json: body })
        expect(wrong.status, wrong.text).toBe(401)
        expect(wrong.body.error?.code).toBe("AUTH_INVALID_TOKEN")
        const unsigned = await http<Envelope<unknown>>(falUrl.slice(0, falUrl.indexOf("?")), "", { json: body })
        expect(unsigned.status, unsigned.text).toBe(401)
        // Replicate's own signature (Standard Webhooks) wrong, on a well-signed URL
        const replicateForged = await http<Envelope<unknown>>(replicateUrl, "", {
          json: up.replicate.view(prediction.id),
          headers: {
            "webhook-id": "msg_forged",
            "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
            "webhook-signature": `v1,${randomBytes(32).toString("base64")}`
          }
        })
        expect(replicateForged.status, replicateForged.text).toBe(401)
        expect(replicateForged.body.error?.code).toBe("AUTH_INVALID_TOKEN")
        // an unknown channel
        const query = new URL(falUrl).search
        const unknown = await http<Envelope<unknown>>(gw.base, `/callbacks/v1/ch_unknown/${falTask!.id}${query}`, {
          json: body
        })
        expect(unknown.status, unknown.text).toBe(404)
        expect(unknown.body.error?.code).toBe("CHANNEL_NOT_FOUND")
        expect((await readTask(gw.base, falTask!.id)).status, "the task after the forged callbacks").toBe("succeeded")
      }),
      60_000
    )

    it(
      "failover from a fal channel that is down to a replicate channel: succeeded, charged once",
      step("failover", async (gw, up) => {
        const keys = await makeAccount(gw.base, "failover", credit)
        const refusedBefore = up.falDown.requests.length
        const ids = await Promise.all([0, 1, 2, 3].map((i) => createTask(gw.base, keys, "failover", `failover ${i}`)))
        const tasks = await ended(gw.base, ids, 20_000)
        expect(unsucceeded(tasks), "tasks that did not succeed").toEqual([])
        for (const task of tasks) {
          expect(task.channel_id, task.id).toBe(gw.channels.failoverReplicate.id)
          expect(up.replicate.predictions.has(task.upstream_job_id ?? ""), `${task.id}: its prediction`).toBe(true)
        }
        expect(up.falDown.requests.length - refusedBefore, "submits the fal channel refused").toBeGreaterThan(0)
        expect(up.falDown.jobs.size, "jobs on the fal fake that is down").toBe(0)
        await expectBilled(gw.base, keys, tasks, false)
      }),
      60_000
    )

    it(
      "result URLs to internal addresses are refused; a result host of the channel is copied",
      step("ssrf", async (gw, up) => {
        const keys = await makeAccount(gw.base, "ssrf", credit)
        const secret = `/secret-${database.name}-${randomBytes(4).toString("hex")}`
        const outputs = [
          { url: `${up.internal.url}${secret}`, refused: /127\.0\.0\.2/ },
          { url: "http://169.254.169.254/latest/meta-data", refused: /169\.254\.169\.254/ },
          { url: `${up.redirector.url}/to${secret}`, refused: /127\.0\.0\.2/ }
        ]
        const ids = await Promise.all(
          outputs.map(({ url }) => createTask(gw.base, keys, "guarded", `[fake:output=${url}] ssrf`))
        )
        const tasks = await ended(gw.base, ids, 20_000)
        for (const [i, task] of tasks.entries()) {
          expectProviderError(task, /copying the upstream's result failed: .*not a public/)
          expect(task.error?.message, `${task.id}: the address refused`).toMatch(outputs[i]!.refused)
        }
        expect(up.redirector.hits(`/to${secret}`), "requests to the trusted redirector").toBe(1)
        expect(up.internal.hits(secret), "requests that reached 127.0.0.2").toBe(0)
        await expectBilled(gw.base, keys, tasks, true)

        // the operator's result host: the same URL is copied
        const other = await makeAccount(gw.base, "result hosts", credit)
        const id = await createTask(gw.base, other, "resultHosts", `[fake:output=${outputs[0]!.url}] allowed`)
        const [task] = await ended(gw.base, [id], 20_000)
        await expectCopied(gw.base, task!, pngBytes, "image/png")
        expect(up.internal.hits(secret), "requests that reached 127.0.0.2").toBe(1)
      }),
      60_000
    )

    it(
      "a 400 MiB result without Content-Length is copied and served; the gateway's RSS rises 64 MB at most copying it",
      step("large result", async (gw, up) => {
        const keys = await makeAccount(gw.base, "large", credit)
        const pid = gw.server.child.pid!
        const before: Array<number> = []
        for (let i = 0; i < 10; i++) {
          before.push(rssOf(pid))
          await sleep(50)
        }
        const baseline = Math.max(...before)
        const samples: Array<number> = []
        const sampler = setInterval(() => samples.push(rssOf(pid)), 50)
        const path = `/big-${database.name}.mp4`
        let served = 0
        let copied = 0
        const head: Array<Buffer> = []
        try {
          const id = await createTask(gw.base, keys, "guarded", `[fake:video][fake:output=${up.big.url}${path}] large`)
          const [task] = await ended(gw.base, [id], 60_000)
          copied = samples.length
          expect(task!.status, JSON.stringify(task!.error ?? null)).toBe("succeeded")
          const item = task!.result![0]!
          expect(item.size_bytes, "size_bytes").toBe(bigBytes)
          expect(item.format).toBe("mp4")
          expect(item.url.startsWith(`${gw.base}/files/`), item.url).toBe(true)
          const response = await fetch(item.url, { signal: AbortSignal.timeout(60_000) })
          expect(response.status).toBe(200)
          expect(response.headers.get("content-type")).toBe("video/mp4")
          const reader = response.body!.getReader()
          for (let read = await reader.read(); !read.done; read = await reader.read()) {
            if (served < 128) head.push(Buffer.from(read.value.subarray(0, 128)))
            served += read.value.length
          }
        } finally {
          clearInterval(sampler)
        }
        const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`
        const copying = Math.max(...samples.slice(0, copied))
        const serving = Math.max(...samples.slice(copied))
        console.info(
          `large result (${database.name}): RSS ${mb(baseline)} before the task, at most ${mb(copying)} until it ` +
            `succeeded, ${mb(serving)} while serving the file (${samples.length} samples)`
        )
        expect(up.big.hits(path), "downloads of the large file").toBe(1)
        expect(served, "bytes served").toBe(bigBytes)
        expect(Buffer.concat(head).subarray(0, mp4Bytes.length).equals(Buffer.from(mp4Bytes)), "the first bytes")
          .toBe(true)
        expect(copied, "RSS samples while copying").toBeGreaterThan(10)
        expect(copying - baseline, `RSS rise while copying: ${mb(copying - baseline)}`).toBeLessThanOrEqual(rssHeadroom)
        // serving streams the file too: garbage of its 64 KiB reads, never the file (400 MiB)
        expect(serving - baseline, `RSS rise while serving: ${mb(serving - baseline)}`)
          .toBeLessThanOrEqual(2 * rssHeadroom)
      }),
      120_000
    )

    it(
      "1 byte/s results hold no worker: other tasks finish; the slow ones end by their deadline",
      step("slow result", async (gw, up) => {
        const keys = await makeAccount(gw.base, "slow", credit)
        const path = `/slow-${database.name}.mp4`
        const createdAt = Date.now()
        const slowIds = await Promise.all(
          [0, 1, 2, 3].map((i) =>
            createTask(gw.base, keys, "guarded", `[fake:video][fake:output=${up.slow.url}${path}] slow ${i}`)
          )
        )
        await waitFor("4 slow downloads", 15_000, async () => (up.slow.opened(path) >= 4 ? true : undefined), 100)
        expect(up.slow.opened(path), "slow downloads").toBe(4)
        expect(up.slow.closed(path), "slow downloads closed").toBe(0)

        // the 2 workers are free: tasks on every transport finish at once
        const names = ["fal", "replicate", "comfyui", "openaiImage", "falPolling", "replicatePolling"] as const
        const began = Date.now()
        const others = await Promise.all(names.map((name) => createTask(gw.base, keys, name, `meanwhile on ${name}`)))
        const done = await ended(gw.base, others, 10_000)
        console.info(`slow result (${database.name}): ${names.length} other tasks ended in ${Date.now() - began} ms`)
        expect(unsucceeded(done), "other tasks that did not succeed").toEqual([])
        const slow = await readTasks(gw.base, slowIds)
        expect(slow.filter((task) => terminal.has(task.status)).map((task) => task.id), "slow tasks ended").toEqual([])
        expect(up.slow.closed(path), "slow downloads closed").toBe(0)

        // the deadline ends them: failed (the copy given up) or expired, refunded, their downloads closed
        const finished = await ended(gw.base, slowIds, createdAt + deadlineMs + 15_000 - Date.now())
        console.info(
          `slow result (${database.name}): the slow tasks ended ${Date.now() - createdAt} ms after creation: ` +
            finished.map((task) => `${task.status} ${task.error?.code ?? ""}`).join(", ")
        )
        for (const task of finished) {
          expect(["failed", "expired"], `${task.id}: ${JSON.stringify(task.error ?? null)}`).toContain(task.status)
          expect(task.refunded, `${task.id}: refunded`).toBeCloseTo(task.charged, 6)
        }
        await waitFor("the slow downloads to be closed", 5000, async () => {
          return up.slow.closed(path) >= 4 ? true : undefined
        })
        expect(up.slow.opened(path), "slow downloads, in all").toBe(4)
      }),
      90_000
    )
  })
}
