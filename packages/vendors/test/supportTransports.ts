/**
 * What the transport tests share: a result copier on a fresh local store and signer, a live image task and a
 * channel of a transport, a transport built from a channel's context, a poll loop to a job's end, the bytes of a
 * result URL of ours, and a throwaway HTTP server.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, expect } from "@effect/vitest"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import type { JobState } from "@mediagate/engine/Upstream"
import * as Fixtures from "@mediagate/testing/fixtures"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChannelConfig } from "../src/ChannelStore.js"
import * as FileStore from "../src/FileStore.js"
import type { Transport, TransportContext } from "../src/internal/upstreamHttp.js"
import * as Mapping from "../src/Mapping.js"
import * as ResultCopy from "../src/ResultCopy.js"
import * as UrlSigner from "../src/UrlSigner.js"

export const publicBase = "http://gateway.test"

/** A store on a fresh directory, a signer, and the copier over them. */
export const copierLayer = (options: ResultCopy.CopierOptions = {}) => {
  const directory = mkdtempSync(join(tmpdir(), "mg-transports-"))
  return {
    directory,
    layer: ResultCopy.layer({ retryDelay: () => "20 millis", ...options }).pipe(
      Layer.provideMerge(Layer.mergeAll(
        FileStore.layerLocal({ directory }).pipe(Layer.provide(NodeContext.layer)),
        UrlSigner.layer({ publicBaseUrl: publicBase, secret: Redacted.make("transports-secret") })
      ))
    )
  }
}

/** A live image task as the worker hands it to a transport. */
export const task = (overrides: Partial<TaskRecord> = {}): TaskRecord => {
  const now = Date.now()
  return Fixtures.taskRecord({
    accountId: "acct_t",
    keyId: "key_t",
    endpoint: "vendor4/text-to-image",
    provider: "vendor4",
    operation: "text-to-image",
    mediaType: "image",
    model: "vendor4-3-0-t2i",
    status: "queued",
    input: { prompt: "a lighthouse", size: "512x512" },
    metadata: { ref: "r1" },
    chargedMicros: 30_000,
    estimatedSeconds: 10,
    fence: 1,
    leaseOwner: "w",
    leaseExpiresAt: now + 30_000,
    nextRunAt: null,
    deadlineAt: now + 120_000,
    createdAt: now,
    startedAt: now,
    ...overrides
  })
}

/** A channel of a transport. */
export const channel = (
  transport: ChannelConfig["transport"],
  settings: ChannelConfig["settings"],
  apiKey?: string
): ChannelConfig => ({
  id: `ch_${transport}`,
  name: transport,
  transport,
  settings,
  credentials: apiKey === undefined ? {} : { apiKey: Redacted.make(apiKey) },
  families: ["vendor4"],
  models: [],
  priority: 0,
  weight: 1,
  concurrency: 0,
  enabled: true,
  disabledReason: null,
  createdAt: 0,
  updatedAt: 0
})

/** Builds a transport on the copier in context, its callbacks going to `callback` (none when undefined). */
export const build = (
  make: (context: TransportContext) => Transport,
  config: ChannelConfig,
  baseUrl: string,
  callback?: string
) =>
  Effect.map(ResultCopy.ResultCopier, (copier) =>
    make({
      channel: config,
      baseUrl,
      mapping: Mapping.compile(config.settings.mapping),
      copier,
      policy: {
        trustedHosts: ["127.0.0.1", ...(config.settings.resultHosts ?? [])],
        allowPrivate: false,
        timeoutMs: 2000,
        maxBytes: config.settings.maxResultBytes ?? 10 * 1024 * 1024
      },
      callbackUrl: () => Effect.succeed(callback)
    }))

/** Polls a job until it ends (a copy in progress answers Running); the states seen on the way. */
export const pollToEnd = (transport: Transport, record: TaskRecord, jobId: string) =>
  Effect.gen(function*() {
    const seen: Array<JobState["_tag"]> = []
    const states: Array<JobState> = []
    for (let i = 0; i < 400; i++) {
      const state = yield* transport.upstream.poll(record, jobId)
      seen.push(state._tag)
      states.push(state)
      if (state._tag === "Succeeded" || state._tag === "Failed" || state._tag === "Lost") return { state, seen, states }
      yield* Effect.sleep("15 millis")
    }
    return yield* Effect.dieMessage(`job ${jobId} did not end`)
  })

/** The bytes of a result URL of ours, read from the store's directory. */
export const storedBytes = (directory: string, url: string) => {
  const parsed = new URL(url)
  expect(parsed.origin).toBe(publicBase)
  expect(parsed.searchParams.get("signature")).toMatch(/^[0-9a-f]{64}$/)
  return readFileSync(join(directory, decodeURIComponent(parsed.pathname.replace(/^\/files\//, ""))))
}

export const succeeded = (state: JobState) => {
  assert(state._tag === "Succeeded", `expected Succeeded, got ${JSON.stringify(state)}`)
  return state
}

/** A server on `host` answering with `handler`; its URL and hit count. */
export const serve = (host: string, handler: (request: IncomingMessage, response: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ server: Server; url: string; hits: () => number }>((resume) => {
      let hits = 0
      const server = createServer((request, response) => {
        hits++
        handler(request, response)
      })
      server.listen(0, host, () =>
        resume(Effect.succeed({
          server,
          url: `http://${host}:${(server.address() as AddressInfo).port}`,
          hits: () => hits
        })))
    }),
    ({ server }) =>
      Effect.sync(() => {
        server.close()
        server.closeAllConnections()
      })
  )
