import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { post, type Resolver } from "../src/Outbound.js"
import { noDns, receiver } from "./support.js"

const base = { headers: { "content-type": "application/json" }, body: "{}", timeoutMs: 2000 }
const resolveTo = (...addresses: Array<string>): Resolver => () =>
  Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })))

describe("Outbound.post address rules", () => {
  const refused = [
    "http://127.0.0.1/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://100.64.0.1/",
    "http://[::1]/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://0.0.0.0/",
    "http://localhost/",
    "http://metadata.google.internal/"
  ]
  for (const url of refused) {
    it.live(`refuses ${url}`, () =>
      Effect.gen(function*() {
        const result = yield* post(url, base)
        expect(result).toMatchObject({ statusCode: null, reason: "address" })
      }))
  }

  it.live("refuses a name resolving to a private address (any of them), before connecting", () =>
    Effect.gen(function*() {
      const server = yield* receiver
      const url = `http://hooks.example.test:${server.port}/hook`
      const one = yield* post(url, { ...base, lookup: resolveTo("127.0.0.1") })
      expect(one).toMatchObject({ statusCode: null, reason: "address" })
      expect(one.error).toContain("127.0.0.1")
      const mixed = yield* post(url, { ...base, lookup: resolveTo("93.184.216.34", "10.0.0.5") })
      expect(mixed).toMatchObject({ statusCode: null, reason: "address" })
      expect(server.received).toHaveLength(0)
    }).pipe(Effect.scoped))

  it.live("with allowPrivate connects to the resolved (pinned) address and keeps the Host header", () =>
    Effect.gen(function*() {
      const server = yield* receiver
      const url = `http://hooks.example.test:${server.port}/hook`
      const result = yield* post(url, { ...base, allowPrivate: true, lookup: resolveTo("127.0.0.1") })
      expect(result).toMatchObject({ statusCode: 200, reason: null, error: null, responseExcerpt: "thanks" })
      expect(server.received[0]!.headers.host).toBe(`hooks.example.test:${server.port}`)
    }).pipe(Effect.scoped))

  it.live("an unresolvable name and a non-http URL are failures, not defects", () =>
    Effect.gen(function*() {
      expect(yield* post("https://nope.example.test/", { ...base, ...noDns })).toMatchObject({
        reason: "network"
      })
      expect(yield* post("ftp://example.com/", base)).toMatchObject({ reason: "address" })
    }))
})
