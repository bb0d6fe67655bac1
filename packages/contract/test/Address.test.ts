import { describe, expect, it } from "@effect/vitest"
import { isPublicAddress, literalHostProblem, parseAddress, parseHttpUrl, refusedRange } from "../src/Address.js"

describe("address rules", () => {
  // every non-global form, with the range it is refused for
  it.each([
    // IPv4
    ["0.0.0.0", "this network"],
    ["0.1.2.3", "this network"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "CGNAT"],
    ["100.127.255.254", "CGNAT"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.1", "loopback"],
    ["169.254.169.254", "link-local"],
    ["192.0.0.1", "IETF protocol assignments"],
    ["192.0.0.170", "IETF protocol assignments"],
    ["192.0.2.1", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["192.88.99.1", "6to4 relay"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.254", "reserved"],
    ["255.255.255.255", "broadcast"],
    // IPv6 plain
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "site-local"],
    ["fc00::1", "unique local"],
    ["fd12:3456::1", "unique local"],
    ["fd00:ec2::254", "unique local"],
    ["ff02::1", "multicast"],
    ["ff0e::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["100::1", "discard-only"],
    ["2001:2::1", "IETF protocol assignments"],
    ["2001:10::1", "IETF protocol assignments"],
    ["5f00::1", "segment routing"],
    ["4000::1", "outside global unicast"],
    ["e000::1", "outside global unicast"],
    ["fe80::1%eth0", "link-local"],
    ["2606:4700:4700::1111%eth0", "zone id"],
    // IPv4-compatible (deprecated): refused whatever it embeds
    ["::127.0.0.1", "IPv4-compatible"],
    ["::7f00:1", "IPv4-compatible"],
    ["::a9fe:a9fe", "IPv4-compatible"],
    ["::169.254.169.254", "IPv4-compatible"],
    ["::8.8.8.8", "IPv4-compatible"],
    ["::2", "IPv4-compatible"],
    // IPv4-mapped, in dotted and hex forms: judged by the embedded address
    ["::ffff:127.0.0.1", "IPv4-mapped IPv6 of 127.0.0.1, loopback"],
    ["::ffff:7f00:1", "IPv4-mapped IPv6 of 127.0.0.1"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped IPv6 of 169.254.169.254, link-local"],
    ["0:0:0:0:0:ffff:c0a8:101", "IPv4-mapped IPv6 of 192.168.1.1"],
    ["::ffff:0.0.0.0", "this network"],
    // IPv4-translated (SIIT)
    ["::ffff:0:7f00:1", "IPv4-translated"],
    ["::ffff:0:808:808", "IPv4-translated"],
    // NAT64 well-known prefix with a non-global address; the local-use prefix always
    ["64:ff9b::127.0.0.1", "NAT64 (64:ff9b::/96) of 127.0.0.1"],
    ["64:ff9b::a9fe:a9fe", "NAT64 (64:ff9b::/96) of 169.254.169.254"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b:1::808:808", "local-use NAT64"],
    ["64:ff9b:1:ffff::1", "local-use NAT64"],
    ["64:ff9b::1:0:0:1", "outside global unicast"],
    // 6to4 with a non-global address
    ["2002:7f00:1::1", "6to4 (2002::/16) of 127.0.0.1, loopback"],
    ["2002:a9fe:a9fe::", "link-local"],
    ["2002:c0a8:101::1", "private"],
    ["2002::1", "this network"],
    // Teredo, whatever it embeds
    ["2001::1", "Teredo"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
    // not strictly an address
    ["127.1", "not an IP address"],
    ["2130706433", "not an IP address"],
    ["0x7f000001", "not an IP address"],
    ["0177.0.0.1", "not an IP address"],
    ["[::1]", "not an IP address"],
    ["8.8.8.8:80", "not an IP address"],
    [" 8.8.8.8", "not an IP address"],
    ["", "not an IP address"],
    ["localhost", "not an IP address"]
  ])("refuses %s (%s)", (address, range) => {
    expect(isPublicAddress(address)).toBe(false)
    expect(refusedRange(address)).toContain(range)
  })

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "203.0.114.1",
    "100.63.255.255",
    "100.128.0.1",
    "172.32.0.1",
    "192.0.1.255",
    "192.0.3.1",
    "198.17.255.255",
    "198.20.0.1",
    "223.255.255.255",
    "11.0.0.1",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001:82a::200e",
    "2620:fe::fe",
    // IPv4-mapped, NAT64 and 6to4 embedding a global address are judged by it
    "::ffff:8.8.8.8",
    "::ffff:808:808",
    "64:ff9b::8.8.8.8",
    "64:ff9b::101:101",
    "2002:808:808::1",
    "2002:101:101:1::1"
  ])("accepts %s", (address) => {
    expect(refusedRange(address)).toBeUndefined()
    expect(isPublicAddress(address)).toBe(true)
  })

  it("parses addresses strictly", () => {
    expect(parseAddress("127.0.0.1")?.toString()).toBe("127.0.0.1")
    expect(parseAddress("::ffff:127.0.0.1")?.toString()).toBe("::ffff:7f00:1")
    for (
      const text of ["127.1", "0x7f.0.0.1", "2130706433", "01.2.3.4", "1.2.3.4.5", "[::1]", "::1]", "1.2.3.4:80", "abc"]
    ) {
      expect(parseAddress(text), text).toBeUndefined()
    }
  })

  it.each([
    ["http://127.0.0.1/x", "address 127.0.0.1 is not a public address"],
    ["http://0x7f000001/x", "address 127.0.0.1 is not a public address"],
    ["http://2130706433/x", "address 127.0.0.1 is not a public address"],
    ["http://[::1]:8080/x", "address ::1 is not a public address"],
    ["http://[::ffff:a9fe:a9fe]/x", "address ::ffff:a9fe:a9fe is not a public address"],
    // every IPv4 spelling the WHATWG parser accepts is judged as the address it becomes
    ["http://0x7f.1/x", "address 127.0.0.1 is not a public address"],
    ["http://127.1/x", "address 127.0.0.1 is not a public address"],
    ["http://0177.0.0.1/x", "address 127.0.0.1 is not a public address"],
    ["http://0x7f.0.0.1./x", "address 127.0.0.1 is not a public address"],
    ["http://169.254.43518/x", "address 169.254.169.254 is not a public address"],
    ["http://0xa9fea9fe/x", "address 169.254.169.254 is not a public address"],
    ["http://0/x", "address 0.0.0.0 is not a public address"],
    ["http://[::127.0.0.1]/x", "address ::7f00:1 is not a public address"],
    ["http://[::a9fe:a9fe]/x", "address ::a9fe:a9fe is not a public address"],
    ["http://[::ffff:127.0.0.1]/x", "address ::ffff:7f00:1 is not a public address"],
    ["http://[0:0:0:0:0:ffff:7f00:1]/x", "address ::ffff:7f00:1 is not a public address"],
    ["http://[64:ff9b::127.0.0.1]/x", "address 64:ff9b::7f00:1 is not a public address"],
    ["http://[64:ff9b:1::8.8.8.8]/x", "address 64:ff9b:1::808:808 is not a public address"],
    ["http://[2002:7f00:1::1]/x", "address 2002:7f00:1::1 is not a public address"],
    ["http://[2001::1]/x", "address 2001::1 is not a public address"],
    ["http://[fec0::1]/x", "address fec0::1 is not a public address"],
    ["http://[::]/x", "address :: is not a public address"],
    ["http://[ff02::1]/x", "address ff02::1 is not a public address"],
    ["http://255.255.255.255/x", "address 255.255.255.255 is not a public address"],
    ["http://[2002:808:808::1]/x", undefined],
    ["http://[64:ff9b::8.8.8.8]/x", undefined],
    ["http://[2606:4700:4700::1111]/x", undefined],
    ["http://8.8.8.8/x", undefined],
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
