import { describe, expect, it } from "@effect/vitest"
import { makeTrustedProxies, normalizeAddress, resolveClientAddress } from "../src/ClientAddress.js"

describe("client address", () => {
  it("normalizes IPv4-mapped IPv6 to IPv4 and refuses non-addresses", () => {
    expect(normalizeAddress("::ffff:127.0.0.1")).toBe("127.0.0.1")
    expect(normalizeAddress("[2001:db8::1]")).toBe("2001:db8::1")
    expect(normalizeAddress("fe80::1%eth0")).toBe("fe80::1")
    expect(normalizeAddress("example.com")).toBeUndefined()
  })

  const trusted = makeTrustedProxies(["10.0.0.0/8", "::ffff:192.168.1.1", "2001:db8::/32"])

  it.each([
    ["the socket address without X-Forwarded-For", "203.0.113.9", undefined, "203.0.113.9"],
    ["the socket address when the peer is not trusted", "203.0.113.9", "1.2.3.4", "203.0.113.9"],
    ["the forwarded client behind a trusted proxy", "10.1.1.1", "198.51.100.7", "198.51.100.7"],
    ["the right-most untrusted hop", "10.1.1.1", "6.6.6.6, 198.51.100.7, 10.2.2.2", "198.51.100.7"],
    ["a mapped trusted proxy", "::ffff:192.168.1.1", "198.51.100.7", "198.51.100.7"],
    ["an IPv6 trusted proxy", "2001:db8::5", "2001:db9::1", "2001:db9::1"],
    ["the peer when a hop is garbage", "10.1.1.1", "not-an-ip", "10.1.1.1"],
    ["the left-most hop when every hop is trusted", "10.1.1.1", "10.3.3.3, 10.2.2.2", "10.3.3.3"]
  ])("takes %s", (_name, socket, forwarded, expected) => {
    expect(resolveClientAddress(socket, forwarded, trusted)).toBe(expected)
  })
})
