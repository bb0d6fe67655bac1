/**
 * The client address of a request (decisions.md §5): the socket address, or — only when the socket peer is a trusted
 * proxy (`MEDIAGATE_TRUSTED_PROXIES`) — read from `X-Forwarded-For`, failing closed:
 *
 * - The header is split on commas and walked **from the right**; every hop is read strictly
 *   ({@link parseForwardedHop}): an IPv4 or IPv6 address, optionally `a.b.c.d:port`, `[v6]` or `[v6]:port`
 *   (RFC 7239 node syntax, as some proxies write it). IPv4-mapped IPv6 addresses become IPv4.
 * - A hop that is a trusted proxy is skipped; the first hop that is not is the client.
 * - A hop that does not parse (`unknown`, an obfuscated id, an empty element, a name, `127.1`, a zone id, garbage)
 *   stops the walk: the client is **unknown** (`undefined`), which matches no IP-whitelist entry, so a key with a
 *   whitelist is refused. It is never the proxy's own address.
 * - When every hop is a trusted proxy, the left-most hop is the client.
 *
 * `Forwarded` (RFC 7239) is not read: a proxy in front of the service must write `X-Forwarded-For`.
 *
 * @since 0.1.0
 */
import type * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Address } from "@mediagate/contract"
import * as Context from "effect/Context"
import * as Option from "effect/Option"
import ipaddr from "ipaddr.js"

/**
 * The socket address of a request served through a web handler (`Http.toWebHandler`), where the request itself
 * carries none: pass it in the handler's context, `handler(request, Context.make(RemoteAddress, address))`.
 *
 * @since 0.1.0
 * @category services
 */
export class RemoteAddress extends Context.Tag("@mediagate/server/RemoteAddress")<RemoteAddress, string>() {}

/** The socket addresses given with web requests, by request (see {@link withRemoteAddress}). */
const webAddresses = new WeakMap<Request, string>()

/**
 * A web handler whose requests come with their socket address in the handler's context ({@link RemoteAddress}).
 *
 * @since 0.1.0
 * @category utils
 */
export const withRemoteAddress = (web: ReturnType<typeof HttpApiBuilder.toWebHandler>) => ({
  dispose: web.dispose,
  handler: (request: Request, context?: Context.Context<RemoteAddress>): Promise<Response> => {
    if (context !== undefined) webAddresses.set(request, Context.get(context, RemoteAddress))
    return web.handler(request, context)
  }
})

/**
 * The socket address of a request (read only here): the server's, or the one a web handler was given with it.
 *
 * @since 0.1.0
 * @category utils
 */
export const socketAddress = ({ remoteAddress, source }: HttpServerRequest.HttpServerRequest): string | undefined =>
  Option.getOrElse(remoteAddress, () => source instanceof Request ? webAddresses.get(source) : undefined)

/**
 * A parsed list of trusted proxies (addresses and CIDR ranges).
 *
 * @since 0.1.0
 * @category models
 */
export interface TrustedProxies {
  readonly contains: (address: string) => boolean
}

/** IPv4-mapped IPv6 as IPv4; an address in its canonical text. */
const canonical = (address: Address.IpAddress): string =>
  address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress()
    ? address.toIPv4Address().toString()
    : address.toString()

const normalize = (address: string): string | undefined => {
  const bare = address.trim().replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "")
  const parsed = Address.parseAddress(bare)
  return parsed === undefined ? undefined : canonical(parsed)
}

/** Addresses normalized lately (every request normalizes its socket address): at most this many, then anew. */
const normalizedCapacity = 1024
const normalized = new Map<string, string | null>()

/**
 * Normalizes a socket address: IPv4-mapped IPv6 to IPv4, brackets and zone ids dropped; undefined when not an IP
 * address written strictly (see the contract's `Address.parseAddress`).
 *
 * @since 0.1.0
 * @category utils
 */
export const normalizeAddress = (address: string): string | undefined => {
  const known = normalized.get(address)
  if (known !== undefined) return known ?? undefined
  const result = normalize(address)
  if (normalized.size >= normalizedCapacity) normalized.clear()
  normalized.set(address, result ?? null)
  return result
}

const validPort = (port: string | undefined) => port === undefined || Number(port) <= 65535

/**
 * One element of `X-Forwarded-For`, read strictly: `a.b.c.d`, `a.b.c.d:port`, an IPv6 address, `[v6]` or
 * `[v6]:port` (port: 1 to 5 digits, at most 65535; surrounding spaces and tabs ignored). The address, normalized like
 * {@link normalizeAddress}; undefined for anything else (`unknown`, `_hidden`, empty, names, zone ids, `127.1`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseForwardedHop = (hop: string): string | undefined => {
  const text = hop.replace(/^[ \t]+|[ \t]+$/g, "")
  const bracketed = /^\[([0-9A-Fa-f:.]+)\](?::([0-9]{1,5}))?$/.exec(text)
  if (bracketed !== null) {
    const parsed = Address.parseAddress(bracketed[1]!)
    return parsed?.kind() === "ipv6" && validPort(bracketed[2]) ? canonical(parsed) : undefined
  }
  const withPort = /^([0-9.]+):([0-9]{1,5})$/.exec(text)
  if (withPort !== null) {
    const parsed = Address.parseAddress(withPort[1]!)
    return parsed?.kind() === "ipv4" && validPort(withPort[2]) ? canonical(parsed) : undefined
  }
  if (text.includes("%")) return undefined
  const parsed = Address.parseAddress(text)
  return parsed === undefined ? undefined : canonical(parsed)
}

type Range = readonly [Address.IpAddress, number]

/** A trusted-proxy entry as a range (IPv4-mapped entries as IPv4), or why it is invalid. */
const proxyRange = (entry: string): Range | string => {
  const slash = entry.indexOf("/")
  const address = Address.parseAddress(slash < 0 ? entry : entry.slice(0, slash))
  const width = address?.kind() === "ipv6" ? 128 : 32
  const bits = slash < 0 ? width : /^[0-9]{1,3}$/.test(entry.slice(slash + 1)) ? Number(entry.slice(slash + 1)) : -1
  if (address === undefined || (address instanceof ipaddr.IPv6 && address.zoneId !== undefined)) {
    return `trusted proxy ${JSON.stringify(entry)} is not an IP address or CIDR range`
  }
  if (bits < 0 || bits > width) return `trusted proxy ${JSON.stringify(entry)} has an invalid prefix length`
  return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress()
    ? [address.toIPv4Address(), Math.max(0, bits - 96)]
    : [address, bits]
}

/**
 * Why a trusted-proxy entry is invalid (an address or CIDR range, written strictly), or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const trustedProxyProblem = (entry: string): string | undefined => {
  const range = proxyRange(entry)
  return typeof range === "string" ? range : undefined
}

/**
 * Parses trusted proxy entries; an invalid entry is a configuration error (thrown).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeTrustedProxies = (entries: ReadonlyArray<string>): TrustedProxies => {
  const ranges = entries.map((entry) => {
    const range = proxyRange(entry)
    if (typeof range === "string") throw new Error(range)
    return range
  })
  return {
    contains: (address) => {
      const normalized = normalizeAddress(address)
      if (normalized === undefined) return false
      const parsed = Address.parseAddress(normalized)!
      return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
    }
  }
}

/**
 * The client address of a request, judged by the socket address and the trusted proxies (see the module
 * description); undefined when unknown — no socket address, or an `X-Forwarded-For` hop that does not parse.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveClientAddress = (
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trusted: TrustedProxies
): string | undefined => {
  const peer = socketAddress === undefined ? undefined : normalizeAddress(socketAddress)
  if (peer === undefined || forwardedFor === undefined || !trusted.contains(peer)) return peer
  const hops = forwardedFor.split(",")
  let client: string | undefined = undefined
  for (let i = hops.length - 1; i >= 0; i--) {
    client = parseForwardedHop(hops[i]!)
    // fail closed: an unreadable hop makes the client unknown, never the proxy
    if (client === undefined) return undefined
    if (!trusted.contains(client)) return client
  }
  // every hop is a trusted proxy: the left-most is where the request started
  return client
}
