/**
 * The gateway of the transports suites (`transports*.test.ts`, see `transports.test.ts` for the whole setup): the
 * models its channels serve, its channels to the fakes of `transports-upstreams.ts`, creating and awaiting tasks,
 * the expectations on their results and billing, and `describeTransports`, which runs a file's scenarios on a
 * gateway of its own per database (SQLite, and PostgreSQL unless none answers at 127.0.0.1:5432).
 */
import { afterAll, beforeAll, describe, expect } from "@effect/vitest"
import { Catalog, Examples } from "@mediagate/contract"
import { textToImageWorkflow } from "@mediagate/testing/fakes/comfyui"
import { rmSync } from "node:fs"
import { awaitBuild } from "./build.js"
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
  type NamedServer,
  ok,
  type OpenScope,
  openScope,
  readTask,
  readTasks,
  serverEnv,
  type TaskView,
  terminal,
  waitFor,
  withLogs
} from "./harness.js"
import { type RunningServer, runPostgres, startServer } from "./server.js"
import { type Upstreams, useUpstreams } from "./transports-upstreams.js"

if (!runPostgres) {
  console.warn("PostgreSQL is not running at 127.0.0.1:5432: the PostgreSQL transport scenarios are skipped")
}

/** The models each channel serves (one channel per model, but for the failover pair). */
export const models = {
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

/**
 * The gateway's task deadline (`MEDIAGATE_TASK_TIMEOUT`): long enough for the slow-result scenario to start its four
 * downloads and run a task of every transport before it, and for the 400 MiB result to be copied, also while other
 * suites load a slow machine (the copy took over 45 s there).
 */
export const deadlineMs = 90_000
/** The most the gateway's RSS may rise while it copies and serves the large result. */
export const rssHeadroom = 64 * 1024 * 1024
/** What an account is credited with. */
export const credit = 1000

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
export const createTask = async (base: string, keys: Keys, name: ModelName, prompt: string): Promise<string> => {
  const model = models[name]
  const request = requestOf(model)
  const reply = await http<Envelope<{ readonly id: string }>>(base, request.path, {
    token: keys.live,
    json: { model, input: { ...request.input, prompt } }
  })
  return ok(reply, `create a ${model} task`).id
}

/** Waits until every task ended; answers them. A timeout names the tasks still open, where they are. */
export const ended = async (base: string, ids: ReadonlyArray<string>, timeoutMs: number) => {
  let open: ReadonlyArray<unknown> = []
  try {
    return await waitFor(`${ids.length} task(s) to end`, timeoutMs, async () => {
      const tasks = await readTasks(base, ids)
      open = tasks.filter((task) => !terminal.has(task.status)).map((task) => ({
        id: task.id,
        status: task.status,
        channel: task.channel_id,
        job: task.upstream_job_id,
        polls: task.polls
      }))
      return open.length === 0 ? tasks : undefined
    }, 100)
  } catch (error) {
    throw new Error(`${(error as Error).message}; still open: ${JSON.stringify(open)}`)
  }
}

/** Waits until the task's job is on its upstream (or it ended); answers the task. */
export const submitted = (base: string, id: string) =>
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
export const expectCopied = async (base: string, task: TaskView, bytes: Uint8Array, contentType: string) => {
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
export const expectBilled = async (base: string, keys: Keys, tasks: ReadonlyArray<TaskView>, refunded: boolean) => {
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
export const expectProviderError = (task: TaskView, message: RegExp) => {
  expect(task.status, `${task.id}: ${task.status} ${JSON.stringify(task.error ?? null)}`).toBe("failed")
  expect(task.error?.code, `${task.id}: error code`).toBe("PROVIDER_ERROR")
  expect(task.error?.message ?? "", `${task.id}: error message`).toMatch(message)
}

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

export interface Gateway {
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
    // a call limit beyond the task deadline: a slow download is ended by the deadline, not dropped for its rate
    // (which a download is held to once it ran the call limit) and opened again
    guarded: channelTo("fal guarded", "fal", up.fal, falKey, ["guarded"], {
      callbacks: false,
      poll_interval_ms: 300,
      timeout_ms: 2 * deadlineMs,
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

/** Starts the gateway on a fresh database of `scope` and makes its channels to `up`. */
const startGateway = async (scope: OpenScope, postgres: boolean, up: Upstreams): Promise<Gateway> => {
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
  const wanted = channelsOf(up)
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

/** A database the gateway runs on. */
export type Database = (typeof databases)[number]

/** A test's body on the gateway and the fakes; when it fails, the gateway's log is kept. */
export type Step = (label: string, body: (gw: Gateway, up: Upstreams) => Promise<void>) => () => Promise<void>

/**
 * Registers `scenarios` once per database (or on `only` that one), each time in a describe block with a gateway of
 * its own (started before them on a fresh database, with every channel above); the fakes are started once for the
 * file.
 */
export const describeTransports = (
  scenarios: (database: Database, step: Step) => void,
  only?: Database["name"]
) => {
  awaitBuild()
  const fakes = useUpstreams()
  for (const database of databases.filter((database) => only === undefined || database.name === only)) {
    describe.skipIf(database.postgres && !runPostgres)(`channel transports, the gateway on ${database.name}`, () => {
      const scope = openScope()
      let started: Gateway | undefined
      const logs = (): ReadonlyArray<NamedServer> => scope.servers
      const step: Step = (label, body) => () =>
        withLogs(`${label} (${database.name})`, logs(), () => {
          if (started === undefined) throw new Error("the gateway did not start")
          return body(started, fakes())
        }, "mg-transports-")

      beforeAll(() =>
        withLogs(`gateway (${database.name})`, logs(), async () => {
          started = await startGateway(scope, database.postgres, fakes())
        }, "mg-transports-"), 90_000)
      afterAll(() => scope.close(), 60_000)

      scenarios(database, step)
    })
  }
}
