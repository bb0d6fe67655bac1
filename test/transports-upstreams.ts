/**
 * The upstreams of the transports suites (`transports*.test.ts`): the protocol fakes of the four HTTP transports
 * (`@mediagate/testing/fakes/*`, started once per file) and servers of our own (a counted "internal" server on
 * 127.0.0.2, a redirector to it, a 1 byte/s result and a 400 MiB chunked one).
 */
import { afterAll, beforeAll } from "@effect/vitest"
import { type ComfyFake, startComfyFake } from "@mediagate/testing/fakes/comfyui"
import { close, mp4Bytes, pngBytes } from "@mediagate/testing/fakes/common"
import { type FalFake, startFalFake } from "@mediagate/testing/fakes/fal"
import { type OpenAiFake, startOpenAiFake } from "@mediagate/testing/fakes/openai"
import { type ReplicateFake, startReplicateFake } from "@mediagate/testing/fakes/replicate"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** The size of the large result: 400 MiB. */
export const bigBytes = 400 * 1024 * 1024

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
export const rssOf = (pid: number): number => {
  const found = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  if (found === null) throw new Error(`no VmRSS for process ${pid}`)
  return Number(found[1]) * 1024
}

// -----------------------------------------------------------------------------------------------------------------
// The fakes and servers of the file
// -----------------------------------------------------------------------------------------------------------------

export interface Upstreams {
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

/**
 * Starts the fakes and servers before the file's tests and stops them after; answers them (an error before they
 * started).
 */
export const useUpstreams = (): () => Upstreams => {
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
  return fakes
}
