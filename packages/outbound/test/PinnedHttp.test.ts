import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as http from "node:http"
import * as PinnedHttp from "../src/PinnedHttp.js"

interface Seen {
  readonly path: string
  readonly host: string | undefined
  readonly method: string | undefined
  readonly body: string
}

/** A local server on 127.0.0.1 with a fixed set of routes, closed with the scope. */
const server = Effect.acquireRelease(
  Effect.async<
    { readonly port: number; readonly seen: Array<Seen>; readonly closed: Array<string>; readonly server: http.Server }
  >(
    (resume) => {
      const seen: Array<Seen> = []
      const closed: Array<string> = []
      let port = 0
      const routes: Record<string, (response: http.ServerResponse, body: string) => void> = {
        "/ok": (res) => res.writeHead(200, { "content-type": "text/plain" }).end("hello"),
        "/echo": (res, body) => res.writeHead(201).end(`got ${body}`),
        "/missing": (res) => res.writeHead(404).end("not found"),
        "/big": (res) => res.writeHead(200, { "content-length": 10_000 }).end(Buffer.alloc(10_000, 120)),
        "/stream": (res) => {
          // chunked: no Content-Length, the size shows only while reading
          res.writeHead(200)
          let sent = 0
          const timer = setInterval(() => {
            if (res.destroyed || sent >= 50) {
              clearInterval(timer)
              if (!res.destroyed) res.end()
              return
            }
            res.write(Buffer.alloc(1000, 120))
            sent++
          }, 2)
        },
        "/hang": () => undefined,
        "/hang-body": (res) => void res.writeHead(200).write("partial"),
        "/close": (res) => res.socket?.destroy(),
        // answers on a new connection only: on a reused one it does as a server closing it as idle just then
        "/fresh-only": (res) => {
          if (reused.has(res.socket!)) res.socket!.destroy()
          else res.writeHead(200).end("fresh")
        },
        "/r1": (res) => res.writeHead(302, { location: "/r2" }).end(),
        "/r2": (res) => res.writeHead(301, { location: `http://127.0.0.1:${port}/ok` }).end(),
        "/loop": (res) => res.writeHead(302, { location: "/loop" }).end(),
        "/to-name": (res) => res.writeHead(302, { location: `http://rebound.test:${port}/ok` }).end(),
        "/to-file": (res) => res.writeHead(302, { location: "file:///etc/passwd" }).end(),
        "/no-location": (res) => res.writeHead(302).end()
      }
      const served = new WeakSet<object>()
      const reused = new WeakSet<object>()
      const listener = http.createServer((req, res) => {
        if (served.has(req.socket)) reused.add(req.socket)
        served.add(req.socket)
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const path = req.url ?? "/"
          const body = Buffer.concat(chunks).toString("utf8")
          seen.push({ path, host: req.headers.host, method: req.method, body })
          req.socket.on("close", () => closed.push(path))
          const route = routes[path]
          if (route === undefined) res.writeHead(404).end()
          else route(res, body)
        })
      })
      listener.listen(0, "127.0.0.1", () => {
        const address = listener.address()
        port = address !== null && typeof address === "object" ? address.port : 0
        resume(Effect.succeed({ port, seen, closed, server: listener }))
      })
    }
  ),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

/** A resolver for made-up names (no real DNS in tests). */
const fakeDns = (table: Record<string, ReadonlyArray<string>>): PinnedHttp.Resolver => (host) => {
  const addresses = table[host]
  return addresses === undefined
    ? Promise.reject(new Error(`ENOTFOUND ${host}`))
    : Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })))
}

const base = { timeout: "2 seconds", maxBytes: 1024 * 1024 } as const
const dev = { ...base, allowPrivate: true } as const

const failure = <A>(effect: Effect.Effect<A, PinnedHttp.OutboundError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (result) => Either.isLeft(result) ? Effect.succeed(result.left) : Effect.dieMessage("expected an OutboundError")
  )

const text = (response: PinnedHttp.Response) => Buffer.from(response.body).toString("utf8")

describe("PinnedHttp address rules", () => {
  const refused = [
    "http://127.0.0.1/",
    "http://10.1.2.3/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://100.64.0.1/",
    "http://[::1]/",
    "http://[fd00::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://0.0.0.0/",
    "http://localhost/",
    "http://metadata.google.internal/",
    // IPv4 spellings the WHATWG parser turns into 127.0.0.1, and IPv6 forms that embed a non-global IPv4
    "http://2130706433/",
    "http://0x7f.1/",
    "http://127.1/",
    "http://[::127.0.0.1]/",
    "http://[::a9fe:a9fe]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::127.0.0.1]/",
    "http://[64:ff9b:1::808:808]/",
    "http://[2002:7f00:1::1]/",
    "http://[2001::1]/",
    "http://[fec0::1]/"
  ]
  for (const url of refused) {
    it.live(`refuses ${url}`, () =>
      Effect.gen(function*() {
        const error = yield* failure(PinnedHttp.request(url, base))
        expect(error).toMatchObject({ _tag: "OutboundError", reason: "address" })
      }))
  }

  it.live("refuses non-http schemes and garbage without a host", () =>
    Effect.gen(function*() {
      for (const url of ["ftp://example.com/a.png", "file:///etc/passwd", "not a url", "data:text/plain,x"]) {
        const error = yield* failure(PinnedHttp.request(url, base))
        expect(error.reason, url).toBe("url")
        assert.isUndefined(error.host)
      }
    }))

  it.live("a name resolving to 127.0.0.1 is refused unless allowPrivate; any bad address among several is enough", () =>
    Effect.gen(function*() {
      const { port, seen } = yield* server
      const url = `http://cdn.test:${port}/ok`
      const one = yield* failure(PinnedHttp.request(url, { ...base, lookup: fakeDns({ "cdn.test": ["127.0.0.1"] }) }))
      expect(one).toMatchObject({ reason: "address", host: "cdn.test" })
      expect(one.message).toContain("127.0.0.1")
      const mixed = yield* failure(
        PinnedHttp.request(url, { ...base, lookup: fakeDns({ "cdn.test": ["93.184.216.34", "10.0.0.5"] }) })
      )
      expect(mixed.reason).toBe("address")
      expect(seen).toHaveLength(0)
      const target = yield* failure(
        PinnedHttp.checkTarget(new URL(url), { lookup: fakeDns({ "cdn.test": ["fd00::1"] }) })
      )
      expect(target.reason).toBe("address")
    }).pipe(Effect.scoped))

  it.live("every resolved address must be global, whatever form it comes in", () =>
    Effect.gen(function*() {
      const url = new URL("http://cdn.test/ok")
      // glibc writes an IPv4-compatible answer as ::a.b.c.d
      for (
        const address of [
          "::127.0.0.1",
          "::7f00:1",
          "::a9fe:a9fe",
          "::ffff:169.254.169.254",
          "64:ff9b::a00:1",
          "64:ff9b:1::1",
          "2002:a9fe:a9fe::1",
          "2001:0:4136:e378:8000:63bf:3fff:fdd2",
          "fe80::1%eth0",
          "::",
          "0.0.0.0",
          "100.64.0.1",
          "198.18.0.1",
          "240.0.0.1",
          "192.0.0.8",
          "not-an-address"
        ]
      ) {
        const error = yield* failure(PinnedHttp.checkTarget(url, { lookup: fakeDns({ "cdn.test": [address] }) }))
        expect(error.reason, address).toBe("address")
        expect(error.message, address).toContain(`resolves to ${address}`)
      }
      for (
        const address of ["8.8.8.8", "2606:4700:4700::1111", "2002:808:808::1", "64:ff9b::808:808", "::ffff:8.8.8.8"]
      ) {
        const target = yield* PinnedHttp.checkTarget(url, { lookup: fakeDns({ "cdn.test": [address] }) })
        expect(target.address).toBe(address)
      }
    }))

  it.live("resolveTimeout bounds the name resolution alone", () =>
    Effect.gen(function*() {
      const never: PinnedHttp.Resolver = () => new Promise(() => undefined)
      const error = yield* failure(
        PinnedHttp.checkTarget(new URL("http://slow.test/"), { lookup: never, resolveTimeout: "200 millis" })
      )
      expect(error).toMatchObject({ reason: "timeout", host: "slow.test" })
      expect(error.message).toBe("host slow.test did not resolve within 0.2 s")
    }))

  it.live("with allowPrivate, connects to the checked address once resolved and keeps the Host header", () =>
    Effect.gen(function*() {
      const { port, seen } = yield* server
      let lookups = 0
      const lookup: PinnedHttp.Resolver = (host) => {
        lookups++
        return fakeDns({ "cdn.test": ["127.0.0.1"] })(host)
      }
      const response = yield* PinnedHttp.request(`http://cdn.test:${port}/ok`, { ...dev, lookup })
      expect(response).toMatchObject({ status: 200, truncated: false, url: `http://cdn.test:${port}/ok` })
      expect(text(response)).toBe("hello")
      expect(response.headers["content-type"]).toBe("text/plain")
      expect(lookups).toBe(1)
      expect(seen.map(({ host, path }) => ({ path, host }))).toEqual([{ path: "/ok", host: `cdn.test:${port}` }])
    }).pipe(Effect.scoped))

  it.live("an unresolvable name is a dns failure naming the host", () =>
    Effect.gen(function*() {
      const error = yield* failure(PinnedHttp.request("http://nowhere.test/", { ...base, lookup: fakeDns({}) }))
      expect(error).toMatchObject({ reason: "dns", host: "nowhere.test" })
      expect(error.message).toContain("nowhere.test")
    }))
})

describe("PinnedHttp redirects", () => {
  it.live("are answered as they are unless maxRedirects is given", () =>
    Effect.gen(function*() {
      const { port, seen } = yield* server
      const response = yield* PinnedHttp.request(`http://127.0.0.1:${port}/r1`, dev)
      expect(response.status).toBe(302)
      expect(response.headers.location).toBe("/r2")
      expect(seen.map((s) => s.path)).toEqual(["/r1"])
    }).pipe(Effect.scoped))

  it.live("are followed up to maxRedirects, relative and absolute", () =>
    Effect.gen(function*() {
      const { port, seen } = yield* server
      const response = yield* PinnedHttp.request(`http://127.0.0.1:${port}/r1`, { ...dev, maxRedirects: 2 })
      expect(response).toMatchObject({ status: 200, url: `http://127.0.0.1:${port}/ok` })
      expect(seen.map((s) => s.path)).toEqual(["/r1", "/r2", "/ok"])
      const tooMany = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/r1`, { ...dev, maxRedirects: 1 }))
      expect(tooMany.reason).toBe("redirect")
      expect(tooMany.message).toContain("more than 1 redirects")
      const loop = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/loop`, { ...dev, maxRedirects: 3 }))
      expect(loop.reason).toBe("redirect")
      const noLocation = yield* failure(
        PinnedHttp.request(`http://127.0.0.1:${port}/no-location`, { ...dev, maxRedirects: 3 })
      )
      expect(noLocation).toMatchObject({ reason: "redirect", status: 302 })
    }).pipe(Effect.scoped))

  it.live("each hop is checked again: a redirect to a private address is refused before connecting", () =>
    Effect.gen(function*() {
      const { port, seen } = yield* server
      // the first hop's address counts as allowed (stands for a public host); the redirect's name resolves privately
      const options = {
        ...base,
        maxRedirects: 3,
        lookup: fakeDns({ "rebound.test": ["10.1.2.3"] }),
        isAllowedAddress: (address: string) => address === "127.0.0.1"
      }
      const error = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/to-name`, options))
      expect(error).toMatchObject({ reason: "address", host: "rebound.test" })
      expect(seen.map((s) => s.path)).toEqual(["/to-name"])
      // the same redirect is followed when the name resolves to an allowed address
      const response = yield* PinnedHttp.request(`http://127.0.0.1:${port}/to-name`, {
        ...options,
        lookup: fakeDns({ "rebound.test": ["127.0.0.1"] })
      })
      expect(response.url).toBe(`http://rebound.test:${port}/ok`)
      expect(seen.at(-1)).toMatchObject({ path: "/ok", host: `rebound.test:${port}` })
      const toFile = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/to-file`, { ...dev, maxRedirects: 3 }))
      expect(toFile.reason).toBe("address")
    }).pipe(Effect.scoped))
})

describe("PinnedHttp transfers", () => {
  it.live("sends the method, headers and body; answers any status unless acceptStatus refuses it", () =>
    Effect.gen(function*() {
      const { port, seen } = yield* server
      const posted = yield* PinnedHttp.request(`http://127.0.0.1:${port}/echo`, {
        ...dev,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{\"a\":1}"
      })
      expect(posted.status).toBe(201)
      expect(text(posted)).toBe("got {\"a\":1}")
      expect(seen[0]).toMatchObject({ method: "POST", body: "{\"a\":1}" })
      const missing = yield* PinnedHttp.request(`http://127.0.0.1:${port}/missing`, dev)
      expect([missing.status, text(missing)]).toEqual([404, "not found"])
      const refused = yield* failure(
        PinnedHttp.request(`http://127.0.0.1:${port}/missing`, { ...dev, acceptStatus: (s) => s < 300 })
      )
      expect(refused).toMatchObject({ reason: "status", status: 404, host: "127.0.0.1" })
      expect(refused.message).toContain("404")
    }).pipe(Effect.scoped))

  it.live("a body over the cap fails, by Content-Length and while streaming; exactly the cap is fine", () =>
    Effect.gen(function*() {
      const { port } = yield* server
      const declared = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/big`, { ...dev, maxBytes: 1000 }))
      expect(declared.reason).toBe("too_large")
      const started = performance.now()
      const streamed = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/stream`, { ...dev, maxBytes: 2500 }))
      expect(streamed.reason).toBe("too_large")
      // abandoned after about 3 of 50 chunks, not read to the end
      expect(performance.now() - started).toBeLessThan(2000)
      const exact = yield* PinnedHttp.request(`http://127.0.0.1:${port}/big`, { ...dev, maxBytes: 10_000 })
      expect(exact.body.length).toBe(10_000)
    }).pipe(Effect.scoped))

  it.live("overflow: truncate cuts the body at the cap", () =>
    Effect.gen(function*() {
      const { port } = yield* server
      for (const path of ["/big", "/stream"]) {
        const response = yield* PinnedHttp.request(`http://127.0.0.1:${port}${path}`, {
          ...dev,
          maxBytes: 1024,
          overflow: "truncate"
        })
        expect(response.status, path).toBe(200)
        expect(response.body.length, path).toBe(1024)
        expect(response.truncated, path).toBe(true)
      }
    }).pipe(Effect.scoped))

  it.live("a hanging server times out; under truncate, an answer whose status arrived counts", () =>
    Effect.gen(function*() {
      const { port } = yield* server
      const started = performance.now()
      const hang = yield* failure(
        PinnedHttp.request(`http://127.0.0.1:${port}/hang`, { ...dev, timeout: "300 millis" })
      )
      expect(hang).toMatchObject({ reason: "timeout", message: "no answer within 0.3 s", host: "127.0.0.1" })
      expect(performance.now() - started).toBeLessThan(2000)
      const body = yield* failure(
        PinnedHttp.request(`http://127.0.0.1:${port}/hang-body`, { ...dev, timeout: "300 millis" })
      )
      expect(body.reason).toBe("timeout")
      const partial = yield* PinnedHttp.request(`http://127.0.0.1:${port}/hang-body`, {
        ...dev,
        timeout: "300 millis",
        overflow: "truncate"
      })
      expect([partial.status, text(partial), partial.truncated]).toEqual([200, "partial", true])
    }).pipe(Effect.scoped))

  it.live("a refused connection and a connection closed without an answer", () =>
    Effect.gen(function*() {
      const { port } = yield* server
      const closedPort = yield* Effect.scoped(Effect.map(server, (s) => s.port))
      const refused = yield* failure(PinnedHttp.request(`http://127.0.0.1:${closedPort}/ok`, dev))
      expect(refused).toMatchObject({ reason: "refused", message: "connection refused" })
      const closed = yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/close`, dev))
      expect(closed).toMatchObject({ reason: "network", message: "connection closed without an answer" })
    }).pipe(Effect.scoped))

  it.live("interrupting a request closes its connection", () =>
    Effect.gen(function*() {
      const { closed, port, seen } = yield* server
      const fiber = yield* Effect.fork(
        PinnedHttp.request(`http://127.0.0.1:${port}/hang`, { ...dev, timeout: "1 minute" })
      )
      while (seen.length === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(fiber)
      while (closed.length === 0) yield* Effect.sleep("5 millis")
      expect(closed).toEqual(["/hang"])
    }).pipe(Effect.scoped))

  it.live("keepAlive reuses the connection to the checked address; without it every request has its own", () =>
    Effect.gen(function*() {
      const { port, server: listener } = yield* server
      const sockets = new Set<unknown>()
      listener.on("connection", (socket) => sockets.add(socket))
      for (let i = 0; i < 3; i++) {
        const answer = yield* PinnedHttp.request(`http://127.0.0.1:${port}/ok`, { ...dev, keepAlive: true })
        expect(text(answer)).toBe("hello")
      }
      expect(sockets.size).toBe(1)
      for (let i = 0; i < 2; i++) yield* PinnedHttp.request(`http://127.0.0.1:${port}/ok`, dev)
      expect(sockets.size).toBe(3)
      // a failed answer does not leave its connection in the pool
      yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/close`, { ...dev, keepAlive: true }))
      const after = yield* PinnedHttp.request(`http://127.0.0.1:${port}/ok`, { ...dev, keepAlive: true })
      expect(text(after)).toBe("hello")
    }).pipe(Effect.scoped))

  it.live("a reused connection closed before any answer: a repeatable request goes again on a new one", () =>
    Effect.gen(function*() {
      const { port, server: listener } = yield* server
      let connections = 0
      listener.on("connection", () => connections++)
      const keep = { ...dev, keepAlive: true }
      const url = `http://127.0.0.1:${port}/fresh-only`
      const warm = () => PinnedHttp.request(`http://127.0.0.1:${port}/ok`, keep)
      // a GET (idempotent) goes again
      yield* warm()
      expect(text(yield* PinnedHttp.request(url, keep))).toBe("fresh")
      expect(connections).toBe(2)
      // so does a stream's GET
      yield* warm()
      const streamed = yield* Effect.scoped(Effect.flatMap(
        PinnedHttp.stream(url, keep),
        (response) => Effect.promise(async () => (await response.body.toArray()).join(""))
      ))
      expect(streamed).toBe("fresh")
      // a POST only when the caller says it is repeatable; otherwise the loss is the caller's to handle
      yield* warm()
      const post = yield* failure(PinnedHttp.request(url, { ...keep, method: "POST", body: "x" }))
      expect(post).toMatchObject({ reason: "network", message: "connection closed without an answer" })
      yield* warm()
      const repeated = yield* PinnedHttp.request(url, { ...keep, method: "POST", body: "x", repeatable: true })
      expect(text(repeated)).toBe("fresh")
      // a new connection that closes is not sent again
      const before = connections
      yield* failure(PinnedHttp.request(`http://127.0.0.1:${port}/close`, dev))
      expect(connections).toBe(before + 1)
    }).pipe(Effect.scoped))

  it.live(
    "a kept-alive connection is closed before the server's announced keep-alive runs out",
    () =>
      Effect.gen(function*() {
        // the server keeps connections a minute but announces 2 s: the pool must close the connection itself
        const { port, server: listener } = yield* server
        listener.keepAliveTimeout = 60_000
        const sockets: Array<{ readonly closed: boolean }> = []
        listener.on("connection", (socket) => sockets.push(socket))
        listener.on("request", (_req, res: http.ServerResponse) => res.setHeader("keep-alive", "timeout=2"))
        yield* PinnedHttp.request(`http://127.0.0.1:${port}/ok`, { ...dev, keepAlive: true })
        for (let i = 0; i < 600 && !sockets[0]!.closed; i++) yield* Effect.sleep("50 millis")
        expect(sockets.map((socket) => socket.closed)).toEqual([true])
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("a streamed body read whole leaves its kept-alive connection for the next; one left unread closes it", () =>
    Effect.gen(function*() {
      const { port, server: listener } = yield* server
      const sockets: Array<{ destroyed: boolean }> = []
      listener.on("connection", (socket) => sockets.push(socket))
      const read = (path: string) =>
        Effect.scoped(Effect.flatMap(
          PinnedHttp.stream(`http://127.0.0.1:${port}${path}`, { ...dev, keepAlive: true }),
          (response) =>
            Effect.promise(async () => {
              let bytes = 0
              for await (const chunk of response.body) bytes += (chunk as Buffer).length
              return bytes
            })
        ))
      expect(yield* read("/ok")).toBe(5)
      expect(yield* read("/stream")).toBe(50_000)
      expect(sockets.length).toBe(1)
      // released before its end: the connection goes with it, the next request opens another
      yield* Effect.scoped(PinnedHttp.stream(`http://127.0.0.1:${port}/stream`, { ...dev, keepAlive: true }))
      yield* Effect.sleep("50 millis")
      expect(sockets[0]!.destroyed).toBe(true)
      expect(yield* read("/ok")).toBe(5)
      expect(sockets.length).toBe(2)
    }).pipe(Effect.scoped))
})
