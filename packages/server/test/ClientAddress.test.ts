import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import {
  makeTrustedProxies,
  normalizeAddress,
  parseForwardedHop,
  resolveClientAddress,
  trustedProxyProblem
} from "../src/ClientAddress.js"
import * as ServerConfig from "../src/ServerConfig.js"

describe("client address", () => {
  it("normalizes IPv4-mapped IPv6 to IPv4 and refuses non-addresses", () => {
    expect(normalizeAddress("::ffff:127.0.0.1")).toBe("127.0.0.1")
    expect(normalizeAddress("[2001:db8::1]")).toBe("2001:db8::1")
    expect(normalizeAddress("fe80::1%eth0")).toBe("fe80::1")
    expect(normalizeAddress("example.com")).toBeUndefined()
    expect(normalizeAddress("127.1")).toBeUndefined()
    expect(normalizeAddress("2130706433")).toBeUndefined()
  })

  it.each([
    ["203.0.113.9", "203.0.113.9"],
    ["  203.0.113.9\t", "203.0.113.9"],
    ["203.0.113.9:5555", "203.0.113.9"],
    ["203.0.113.9:0", "203.0.113.9"],
    ["2001:db8::1", "2001:db8::1"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["[2001:db8::1]:443", "2001:db8::1"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["[::ffff:198.51.100.7]:80", "198.51.100.7"],
    ["::127.0.0.1", "::7f00:1"]
  ])("reads the hop %j as %s", (hop, address) => {
    expect(parseForwardedHop(hop)).toBe(address)
  })

  it.each([
    "unknown",
    "",
    "   ",
    "_hidden",
    "garbage",
    "example.com",
    "127.1",
    "2130706433",
    "0x7f000001",
    "01.2.3.4",
    "203.0.113.9:",
    "203.0.113.9:65536",
    "203.0.113.9:123456",
    "203.0.113.9:-1",
    "203.0.113.9:port",
    "2001:db8::1:443x",
    "[2001:db8::1",
    "2001:db8::1]",
    "[2001:db8::1]:",
    "[2001:db8::1]:99999",
    "[203.0.113.9]",
    "[203.0.113.9]:80",
    "fe80::1%eth0",
    "[fe80::1%25eth0]:80",
    "for=203.0.113.9",
    "\"203.0.113.9\"",
    "203.0.113.9 198.51.100.7",
    "1.2.3.4.5"
  ])("refuses the hop %j", (hop) => {
    expect(parseForwardedHop(hop)).toBeUndefined()
  })

  const trusted = makeTrustedProxies(["10.0.0.0/8", "::ffff:192.168.1.1", "2001:db8::/32"])

  it.each([
    ["the socket address without X-Forwarded-For", "203.0.113.9", undefined, "203.0.113.9"],
    ["the socket address when the peer is not trusted", "203.0.113.9", "1.2.3.4", "203.0.113.9"],
    ["the socket address when an untrusted peer sends garbage", "203.0.113.9", "unknown", "203.0.113.9"],
    ["the forwarded client behind a trusted proxy", "10.1.1.1", "198.51.100.7", "198.51.100.7"],
    ["the right-most untrusted hop", "10.1.1.1", "6.6.6.6, 198.51.100.7, 10.2.2.2", "198.51.100.7"],
    ["a mapped trusted proxy", "::ffff:192.168.1.1", "198.51.100.7", "198.51.100.7"],
    ["an IPv6 trusted proxy", "2001:db8::5", "2001:db9::1", "2001:db9::1"],
    ["an IPv4 hop with a port", "10.1.1.1", "203.0.113.9:5555", "203.0.113.9"],
    ["a bracketed IPv6 hop with a port", "10.1.1.1", "[2001:db9::1]:443", "2001:db9::1"],
    ["a trusted hop with a port, then the client", "10.1.1.1", "198.51.100.7, 10.2.2.2:8080", "198.51.100.7"],
    ["the left-most hop when every hop is trusted", "10.1.1.1", "10.3.3.3, 10.2.2.2", "10.3.3.3"],
    ["the client before garbage further left", "10.1.1.1", "garbage, 198.51.100.7", "198.51.100.7"]
  ])("takes %s", (_name, socket, forwarded, expected) => {
    expect(resolveClientAddress(socket, forwarded, trusted)).toBe(expected)
  })

  // fail closed: a hop that does not parse makes the client unknown, never the (trusted, maybe whitelisted) proxy
  it.each([
    ["unknown", "unknown"],
    ["an empty header", ""],
    ["an empty element", "198.51.100.7, , 10.2.2.2"],
    ["a trailing comma", "198.51.100.7,"],
    ["garbage", "not-an-ip"],
    ["an obfuscated id", "_hidden"],
    ["a short IPv4 form", "10.1"],
    ["an integer IPv4 form", "167837953"],
    ["nine IPv6 groups", "2001:db9:1:2:3:4:5:6:7"],
    ["a bad port", "203.0.113.9:99999"],
    ["a zone id", "fe80::1%eth0"],
    ["garbage right of a trusted hop", "198.51.100.7, unknown, 10.2.2.2"]
  ])("makes the client unknown on %s", (_name, forwarded) => {
    expect(resolveClientAddress("10.1.1.1", forwarded, trusted)).toBeUndefined()
  })

  it("refuses invalid trusted-proxy entries, in code and in configuration", () => {
    for (const entry of ["10.0.0.0/8", "10.0.0.1", "2001:db8::/32", "::ffff:10.0.0.0/104", "::1"]) {
      expect(trustedProxyProblem(entry), entry).toBeUndefined()
    }
    for (
      const entry of ["10.1", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "2001:db8::/129", "proxy.local", "fe80::1%eth0"]
    ) {
      expect(trustedProxyProblem(entry), entry).toBeDefined()
      expect(() => makeTrustedProxies([entry]), entry).toThrow(/trusted proxy/)
    }
    const read = (value: string) =>
      Effect.runSync(Effect.either(Effect.withConfigProvider(
        ServerConfig.config,
        ConfigProvider.fromMap(new Map([["MEDIAGATE_TRUSTED_PROXIES", value]]))
      )))
    const good = read("10.0.0.0/8, 2001:db8::1")
    expect(Either.isRight(good) && good.right.trustedProxies).toEqual(["10.0.0.0/8", "2001:db8::1"])
    const bad = read("10.0.0.0/8, 10.1")
    expect(Either.isLeft(bad) && String(bad.left)).toContain("trusted proxy \"10.1\"")
  })
})
