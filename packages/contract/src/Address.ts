/**
 * The one address policy for URLs that the service will fetch or call (media inputs, registered webhooks, per-task
 * `webhookUrl`): only **global unicast** addresses are allowed. Every caller (request Schemas, `WebhookService`,
 * `@mediagate/outbound`'s `PinnedHttp`, media fetching) asks this module; nothing else decides "is this public".
 *
 * - {@link refusedRange} names the special-purpose range an address lies in (IANA IPv4/IPv6 special-purpose
 *   registries, multicast, 240/4, and every IPv6 address outside 2000::/3), or undefined for a global address.
 *   Addresses that embed an IPv4 address are judged by it: IPv4-mapped (`::ffff:a.b.c.d`), NAT64
 *   (`64:ff9b::/96`) and 6to4 (`2002::/16`); IPv4-compatible (`::a.b.c.d`), IPv4-translated, local-use NAT64
 *   (`64:ff9b:1::/48`) and Teredo (`2001::/32`) are refused whatever they embed.
 * - Address text is parsed strictly ({@link parseAddress}: `node:net` `isIP`, then `ipaddr.js`): dotted-decimal IPv4
 *   and RFC 4291 IPv6 only; anything else is not an address and never public. URL hosts are judged after the WHATWG
 *   URL parser (`new URL`), which already turns `2130706433`, `0x7f.1`, `0177.0.0.1` and `127.1` into `127.0.0.1`.
 * - Names that always mean the local machine or a metadata service are refused as names; other names are resolved
 *   by the code that connects, and **every** resolved address must pass {@link isPublicAddress}.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import ipaddr from "ipaddr.js"
import { isIP } from "node:net"

/**
 * How strict the address rules are in the current fiber.
 *
 * @since 0.1.0
 * @category models
 */
export interface AddressPolicy {
  /** Allow loopback and private targets (development and tests: `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`). */
  readonly allowPrivate: boolean
}

/**
 * The address policy of the current fiber. Defaults to strict; the server sets it from configuration around each
 * request, so request Schemas need no context.
 *
 * @since 0.1.0
 * @category constants
 */
export const currentAddressPolicy: FiberRef.FiberRef<AddressPolicy> = FiberRef.unsafeMake<AddressPolicy>({
  allowPrivate: false
})

const blockedNames = new Set(["localhost", "metadata", "metadata.google.internal", "instance-data"])

/**
 * A parsed IP address.
 *
 * @since 0.1.0
 * @category models
 */
export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6

/** Eight 16-bit groups of an IPv6 address that `isIP` accepted (`::` expanded, a trailing dotted IPv4 split). */
const ipv6Parts = (body: string): Array<number> | undefined => {
  const groups = (text: string) => text === "" ? [] : text.split(":")
  const toParts = (list: ReadonlyArray<string>) =>
    list.flatMap((group) => {
      if (!group.includes(".")) return [Number.parseInt(group, 16)]
      const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number]
      return [a * 256 + b, c * 256 + d]
    })
  const gap = body.indexOf("::")
  const left = toParts(groups(gap < 0 ? body : body.slice(0, gap)))
  const right = gap < 0 ? [] : toParts(groups(body.slice(gap + 2)))
  const missing = 8 - left.length - right.length
  if (missing < 0 || (gap < 0 && missing !== 0)) return undefined
  return [...left, ...Array.from({ length: missing }, () => 0), ...right]
}

/**
 * Parses an IP address written strictly: dotted-decimal IPv4 (four decimal parts) or an RFC 4291 IPv6 address
 * (embedded dotted IPv4 and a zone id allowed); undefined for anything else (`127.1`, `0x7f000001`, brackets, ports,
 * spaces, names). IPv6 text is read here, not by `ipaddr.js`, whose parser reads the IPv4-compatible `::a.b.c.d` as
 * the IPv4-mapped `::ffff:a.b.c.d`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseAddress = (text: string): IpAddress | undefined => {
  const family = isIP(text)
  if (family === 4) return ipaddr.IPv4.parse(text)
  if (family !== 6) return undefined
  const zone = text.indexOf("%")
  const parts = ipv6Parts(zone < 0 ? text : text.slice(0, zone))
  if (parts === undefined) return undefined
  const address = new ipaddr.IPv6(parts)
  if (zone >= 0) address.zoneId = text.slice(zone + 1)
  return address
}

type Range = readonly [network: IpAddress, bits: number, name: string]

const ranges = (entries: ReadonlyArray<readonly [cidr: string, name: string]>): ReadonlyArray<Range> =>
  entries.map(([cidr, name]) => {
    const [network, bits] = ipaddr.parseCIDR(cidr)
    return [network, bits, name] as const
  })

/**
 * IPv4 ranges that are not global unicast (IANA IPv4 Special-Purpose Address Registry, RFC 6890 and successors,
 * plus multicast and the former class E). The first match names the range.
 */
const ipv4Refused = ranges([
  ["0.0.0.0/8", "this network (0.0.0.0/8)"],
  ["10.0.0.0/8", "private (10.0.0.0/8)"],
  ["100.64.0.0/10", "shared address space / CGNAT (100.64.0.0/10)"],
  ["127.0.0.0/8", "loopback (127.0.0.0/8)"],
  ["169.254.0.0/16", "link-local (169.254.0.0/16)"],
  ["172.16.0.0/12", "private (172.16.0.0/12)"],
  ["192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)"],
  ["192.0.2.0/24", "documentation (192.0.2.0/24)"],
  ["192.88.99.0/24", "6to4 relay anycast (192.88.99.0/24)"],
  ["192.168.0.0/16", "private (192.168.0.0/16)"],
  ["198.18.0.0/15", "benchmarking (198.18.0.0/15)"],
  ["198.51.100.0/24", "documentation (198.51.100.0/24)"],
  ["203.0.113.0/24", "documentation (203.0.113.0/24)"],
  ["224.0.0.0/4", "multicast (224.0.0.0/4)"],
  ["255.255.255.255/32", "broadcast (255.255.255.255)"],
  ["240.0.0.0/4", "reserved (240.0.0.0/4)"]
])

/** IPv6 ranges refused whatever they embed (IANA IPv6 Special-Purpose Address Registry). */
const ipv6Refused = ranges([
  ["::/128", "unspecified (::)"],
  ["::1/128", "loopback (::1)"],
  ["::/96", "IPv4-compatible IPv6 (::/96, deprecated)"],
  ["::ffff:0:0:0/96", "IPv4-translated IPv6 (::ffff:0:0:0/96)"],
  ["64:ff9b:1::/48", "local-use NAT64 (64:ff9b:1::/48)"],
  ["100::/64", "discard-only (100::/64)"],
  ["2001::/32", "Teredo (2001::/32)"],
  ["2001::/23", "IETF protocol assignments (2001::/23)"],
  ["2001:db8::/32", "documentation (2001:db8::/32)"],
  ["3fff::/20", "documentation (3fff::/20)"],
  ["5f00::/16", "segment routing SIDs (5f00::/16)"],
  ["fc00::/7", "unique local (fc00::/7)"],
  ["fe80::/10", "link-local (fe80::/10)"],
  ["fec0::/10", "site-local (fec0::/10, deprecated)"],
  ["ff00::/8", "multicast (ff00::/8)"]
])

/** IPv6 ranges that carry an IPv4 address, judged by it: the range and the bit offset of the embedded address. */
const ipv6Embedding: ReadonlyArray<readonly [network: IpAddress, bits: number, name: string, offset: number]> = [
  [ipaddr.parse("::ffff:0:0"), 96, "IPv4-mapped IPv6", 96],
  [ipaddr.parse("64:ff9b::"), 96, "NAT64 (64:ff9b::/96)", 96],
  [ipaddr.parse("2002::"), 16, "6to4 (2002::/16)", 16]
]

/** Global unicast IPv6 space: everything outside it is refused. */
const ipv6GlobalUnicast = ipaddr.parseCIDR("2000::/3")

const lookupRange = (address: IpAddress, table: ReadonlyArray<Range>): string | undefined =>
  table.find(([network, bits]) => address.kind() === network.kind() && address.match(network, bits))?.[2]

const embeddedIpv4 = (address: ipaddr.IPv6, offset: number): ipaddr.IPv4 => {
  const bytes = address.toByteArray()
  const start = offset / 8
  return new ipaddr.IPv4(bytes.slice(start, start + 4))
}

const refusedIpv6 = (address: ipaddr.IPv6): string | undefined => {
  for (const [network, bits, name, offset] of ipv6Embedding) {
    if (address.match(network, bits)) {
      const inner = embeddedIpv4(address, offset)
      const range = lookupRange(inner, ipv4Refused)
      return range === undefined ? undefined : `${name} of ${inner.toString()}, ${range}`
    }
  }
  const range = lookupRange(address, ipv6Refused)
  if (range !== undefined) return range
  return address.match(ipv6GlobalUnicast) ? undefined : "outside global unicast (2000::/3)"
}

const refusedParsed = (address: IpAddress): string | undefined => {
  if (address instanceof ipaddr.IPv4) return lookupRange(address, ipv4Refused)
  const range = refusedIpv6(address)
  // a zone id scopes an address to one local link: never a global target
  return range === undefined && address.zoneId !== undefined ? "scoped address (zone id)" : range
}

/**
 * Why an address is not allowed: the name of the non-global range it lies in (`"loopback (127.0.0.0/8)"`,
 * `"IPv4-mapped IPv6 of 10.0.0.1, private (10.0.0.0/8)"`), `"not an IP address"` for text that does not parse
 * strictly ({@link parseAddress}), or undefined for a global unicast address.
 *
 * @since 0.1.0
 * @category utils
 */
export const refusedRange = (address: string): string | undefined => {
  const parsed = parseAddress(address)
  return parsed === undefined ? "not an IP address" : refusedParsed(parsed)
}

/**
 * Whether an IP address (strict text, v4 or v6) is a global unicast address that the service may connect to; see
 * {@link refusedRange} for the ranges refused.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPublicAddress = (address: string): boolean => refusedRange(address) === undefined

/**
 * Parses an absolute `http:` / `https:` URL with a host, or returns undefined.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseHttpUrl = (value: string): URL | undefined => {
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  if (url.hostname === "") return undefined
  return url
}

/**
 * The bare host of a URL (IPv6 brackets removed, trailing dot dropped, lower case).
 *
 * @since 0.1.0
 * @category utils
 */
export const urlHost = (url: URL): string => {
  const host = url.hostname.toLowerCase().replace(/\.$/, "")
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
}

/**
 * Why the literal host of a URL is not an allowed target, or undefined when it is. Names are not resolved here;
 * code that connects must check the resolved addresses too.
 *
 * @since 0.1.0
 * @category utils
 */
export const literalHostProblem = (url: URL): string | undefined => {
  const host = urlHost(url)
  // the WHATWG parser has already written any IPv4 form (hex, octal, short, integer) as dotted decimal
  if (isIP(host) !== 0) return isPublicAddress(host) ? undefined : `address ${host} is not a public address`
  if (blockedNames.has(host) || host.endsWith(".localhost") || host.endsWith(".internal")) {
    return `host ${host} is not a public host`
  }
  return undefined
}

/**
 * Checks a URL's literal host against the current fiber's {@link AddressPolicy}.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkUrlHost = (url: URL): Effect.Effect<string | undefined> =>
  Effect.map(FiberRef.get(currentAddressPolicy), (policy) => policy.allowPrivate ? undefined : literalHostProblem(url))
