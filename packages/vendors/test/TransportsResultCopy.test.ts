/**
 * The result copy on its own: a copy done within the inline wait answers the poll that started it while a longer one
 * goes on alone (its end reported on the copier's changes), and the copy's address, speed, deadline and size rules.
 */
import { describe, expect, it } from "@effect/vitest"
import type { TaskRecord } from "@mediagate/engine/TaskRecord"
import { pngBytes } from "@mediagate/testing/fakes/common"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as Mapping from "../src/Mapping.js"
import * as ResultCopy from "../src/ResultCopy.js"
import { copierLayer, serve, task } from "./supportTransports.js"

describe("the result copy", () => {
  const policy: ResultCopy.CopyPolicy = {
    trustedHosts: ["127.0.0.1"],
    allowPrivate: false,
    timeoutMs: 1000,
    maxBytes: 1024
  }

  const collectToEnd = (record: TaskRecord, sources: ReadonlyArray<Mapping.ResultSource>, rules = policy) =>
    Effect.gen(function*() {
      const copier = yield* ResultCopy.ResultCopier
      for (let i = 0; i < 300; i++) {
        const state = yield* copier.collect(record, "job-1", sources, rules)
        if (state._tag !== "Copying") return state
        yield* Effect.sleep("10 millis")
      }
      return yield* Effect.dieMessage("the copy did not end")
    })

  it.live("a copy done within the inline wait answers the poll that started it; a longer one goes on alone", () => {
    const { layer } = copierLayer({ inlineWait: "300 millis" })
    return Effect.gen(function*() {
      const copier = yield* ResultCopy.ResultCopier
      const files = yield* serve("127.0.0.1", (request, response) => {
        const send = () => {
          response.writeHead(200, { "content-type": "image/png" })
          response.end(pngBytes)
        }
        if (request.url === "/slow.png") setTimeout(send, 900)
        else send()
      })
      const reported: Array<string> = []
      yield* Effect.forkScoped(Stream.runForEach(copier.changes, (id) => Effect.sync(() => reported.push(id))))
      yield* Effect.sleep("20 millis")
      // quick: the poll that starts the copy answers its end, and nothing is reported (no second poll needed)
      const quick = task()
      const answered = yield* copier.collect(quick, "job-1", [{ url: `${files.url}/quick.png` }], policy)
      expect(answered).toMatchObject({ _tag: "Copied", items: [{ format: "png", size_bytes: pngBytes.byteLength }] })
      // slow: answered as copying after the inline wait; its end is reported and kept for the poll that follows
      const slow = task()
      const started = Date.now()
      const first = yield* copier.collect(slow, "job-1", [{ url: `${files.url}/slow.png` }], policy)
      expect(first).toEqual({ _tag: "Copying" })
      expect(Date.now() - started).toBeGreaterThanOrEqual(250)
      expect(Date.now() - started).toBeLessThan(900)
      while (!reported.includes(slow.id)) yield* Effect.sleep("20 millis")
      expect(copier.ended(slow, "job-1")).toMatchObject({ _tag: "Copied" })
      expect(reported).toEqual([slow.id])
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 20_000)

  it.live("refuses private addresses off the trusted hosts, directly or by a redirect, without connecting", () => {
    const { layer } = copierLayer()
    return Effect.gen(function*() {
      const secret = yield* serve("127.0.0.2", (_request, response) => response.end("internal"))
      const redirector = yield* serve("127.0.0.1", (_request, response) => {
        response.writeHead(302, { location: `${secret.url}/secret` })
        response.end()
      })
      for (const url of [`${secret.url}/secret`, "http://169.254.169.254/latest/meta-data", `${redirector.url}/go`]) {
        const state = yield* collectToEnd(task(), [{ url }])
        expect(state._tag, url).toBe("Failed")
      }
      expect(secret.hits()).toBe(0)
      expect(redirector.hits()).toBe(1)
      // the operator's own storage host is allowed
      const allowed = yield* collectToEnd(task(), [{ url: `${secret.url}/ok.txt`, format: "png" }], {
        ...policy,
        trustedHosts: ["127.0.0.1", "127.0.0.2"]
      })
      expect(allowed._tag).toBe("Copied")
      expect(secret.hits()).toBe(1)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 20_000)

  it.live("a trickle gives its download slot up and is tried again; no copy outlives its task's deadline", () => {
    const { layer } = copierLayer()
    return Effect.gen(function*() {
      let connections = 0
      let open = 0
      const trickle = yield* serve("127.0.0.1", (_request, response) => {
        connections++
        open++
        response.on("close", () => open--)
        response.writeHead(200, { "content-type": "image/png" })
        // a byte every 50 ms, never ending
        const timer = setInterval(() => response.write(Buffer.from([1])), 50)
        response.on("close", () => clearInterval(timer))
      })
      /**
       * The server hears the connections close: at once on a quiet machine, a moment later on a loaded one (the
       * trickle would keep a connection the copy did not close open for good).
       */
      const closed = Effect.gen(function*() {
        const until = Date.now() + 2_000
        while (open > 0 && Date.now() < until) yield* Effect.sleep("10 millis")
        return open
      })
      const started = Date.now()
      const slow = yield* collectToEnd(task({ deadlineAt: started + 2500 }), [{ url: `${trickle.url}/slow.png` }], {
        ...policy,
        timeoutMs: 300,
        minBytesPerSecond: 1024
      })
      expect(slow._tag).toBe("Failed")
      // ended by the deadline: the trickle never ends, and what is left of its connections is closed (the bound has
      // a second of slack for a busy machine's timers; without the deadline the copy would go on)
      expect(Date.now() - started).toBeLessThan(2500 + 1000)
      expect(yield* closed).toBe(0)
      // dropped for its rate after 300 ms, tried again while the deadline allowed
      expect(connections).toBeGreaterThanOrEqual(2)
      // without a minimum rate, the attempt is cut at the task's deadline
      const before = connections
      const cut = yield* collectToEnd(task({ deadlineAt: Date.now() + 700 }), [{ url: `${trickle.url}/slow.png` }], {
        ...policy,
        timeoutMs: 300,
        minBytesPerSecond: 0
      })
      expect(cut).toMatchObject({ _tag: "Failed", message: expect.stringContaining("deadline") })
      expect(connections).toBe(before + 1)
      expect(yield* closed).toBe(0)
    }).pipe(Effect.provide(layer), Effect.scoped)
  }, 20_000)

  it.live(
    "caps a file without Content-Length, retries a failing download, and finds a finished copy by its manifest",
    () => {
      // answered at once: every copy outlives the poll that started it, and stores its manifest
      const { layer } = copierLayer({ inlineWait: 0 })
      return Effect.gen(function*() {
        let calls = 0
        const files = yield* serve("127.0.0.1", (request, response) => {
          if (request.url === "/big") {
            // chunked, no length: 4 KiB against a 1 KiB cap
            for (let i = 0; i < 4; i++) response.write(Buffer.alloc(1024, 1))
            return response.end()
          }
          calls++
          if (calls < 3) {
            response.writeHead(503)
            return response.end()
          }
          response.writeHead(200, { "content-type": "image/png" })
          response.end(pngBytes)
        })
        const big = yield* collectToEnd(task(), [{ url: `${files.url}/big` }])
        expect(big).toMatchObject({ _tag: "Failed" })
        expect(big._tag === "Failed" && big.message).toContain("larger than 1024 bytes")
        const record = task()
        const flaky = yield* collectToEnd(record, [{ url: `${files.url}/flaky` }])
        expect(flaky._tag).toBe("Copied")
        expect(calls).toBe(3)
        // another copier (another node) polling the task at 99% finds the manifest and copies nothing
        const again = yield* ResultCopy.make().pipe(
          Effect.flatMap((other) =>
            other.collect({ ...record, progress: 99 }, "job-1", [{ url: `${files.url}/flaky` }], policy)
          )
        )
        expect(again._tag).toBe("Copied")
        expect(calls).toBe(3)
      }).pipe(Effect.provide(layer), Effect.scoped)
    },
    20_000
  )
})
