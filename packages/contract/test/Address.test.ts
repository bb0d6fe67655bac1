import { describe, expect, it } from "@effect/vitest"
import { isPublicAddress, literalHostProblem, parseHttpUrl } from "../src/Address.js"

describe("address rules", () => {
  it.each([
    "127.0.0.1", "127.255.0.1", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "100.127.255.254", "0.0.0.0", "255.255.255.255", "224.0.0.1", "::1", "::", "fc00::1", "fd12:3456::1",
    "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "fd00:ec2::254"
  ])("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false)
  })

  it.each(["8.8.8.8", "1.1.1.1", "203.0.114.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])("accepts %s", (address) => {
    expect(isPublicAddress(address)).toBe(true)
  })

  it.each([
    ["http://127.0.0.1/x", "address 127.0.0.1 is not a public address"],
    ["http://0x7f000001/x", "address 127.0.0.1 is not a public address"],
    ["http://2130706433/x", "address 127.0.0.1 is not a public address"],
    ["http://[::1]:8080/x", "address ::1 is not a public address"],
    ["http://[::ffff:a9fe:a9fe]/x", "address ::ffff:a9fe:a9fe is not a public address"],
    ["http://localhost/x", "host localhost is not a public host"],
    ["http://api.localhost/x", "host api.localhost is not a public host"],
    ["http://metadata.google.internal/x", "host metadata.google.internal is not a public host"],
    ["https://example.com/x", undefined],
    ["https://93.184.216.34/x", undefined]
  ])("judges the literal host of %s", (url, problem) => {
    expect(literalHostProblem(parseHttpUrl(url)!)).toBe(problem)
  })

  it.each(["ftp://example.com", "file:///etc/passwd", "javascript:alert(1)", "example.com/x", "http://", ""])(
    "does not parse %s as an http(s) URL",
    (url) => {
      expect(parseHttpUrl(url)).toBeUndefined()
    }
  )
})
