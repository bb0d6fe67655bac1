/**
 * The client address of a request: the socket address, or — only when the socket peer is a trusted proxy — the
 * right-most untrusted address of `X-Forwarded-For` (decisions.md §5). IPv4-mapped IPv6 addresses become IPv4.
 *
 * @since 0.1.0
 */
import type * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Option from "effect/Option"
import ipaddr from "ipaddr.js"

/**
 * The socket address of a request served through a web handler (`Http.toWebHandler`), where the request itself
 * carries none: pass it in the handler's context, `handler(request, Context.make(RemoteAddress, address))`.
 */
export class RemoteAddress extends Context.Tag("@mediagate/server/RemoteAddress")<RemoteAddress, string>() {}

/** The socket addresses given with web requests, by request (see {@link withRemoteAddress}). */
const webAddresses = new WeakMap<Request, string>()

/** A web handler whose requests come with their socket address in the handler's context ({@link RemoteAddress}). */
export const withRemoteAddress = (web: ReturnType<typeof HttpApiBuilder.toWebHandler>) => ({
  dispose: web.dispose,
  handler: (request: Request, context?: Context.Context<RemoteAddress>): Promise<Response> => {
    if (context !== undefined) webAddresses.set(request, Context.get(context, RemoteAddress))
    return web.handler(request, context)
  }
})

/** The socket address of a request (read only here): the server's, or the one a web handler was given with it. */
export const socketAddress = ({ remoteAddress, source }: HttpServerRequest.HttpServerRequest): string | undefined =>
  Option.getOrElse(remoteAddress, () => source instanceof Request ? webAddresses.get(source) : undefined)

/** A parsed list of trusted proxies (addresses and CIDR ranges). */
export interface TrustedProxies {
  readonly contains: (address: string) => boolean
}

const normalize = (address: string): string | undefined => {
  const bare = address.trim().replace(/^\[|\]$/g, "").replace(/%.*$/, "")
  if (!ipaddr.isValid(bare)) return undefined
  return ipaddr.process(bare).toString()
}

/** Addresses normalized lately (every request normalizes its socket address): at most this many, then anew. */
const normalizedCapacity = 1024
const normalized = new Map<string, string | null>()

/** Normalizes an address: IPv4-mapped IPv6 to IPv4, zone ids dropped; undefined when not an IP address. */
export const normalizeAddress = (address: string): string | undefined => {
  const known = normalized.get(address)
  if (known !== undefined) return known ?? undefined
  const result = normalize(address)
  if (normalized.size >= normalizedCapacity) normalized.clear()
  normalized.set(address, result ?? null)
  return result
}

/** Parses trusted proxy entries; an invalid entry is a configuration error. */
export const makeTrustedProxies = (entries: ReadonlyArray<string>): TrustedProxies => {
  const ranges = entries.map((entry) => {
    if (!entry.includes("/")) {
      const address = ipaddr.process(entry)
      return [address, address.kind() === "ipv4" ? 32 : 128] as const
    }
    const [address, bits] = ipaddr.parseCIDR(entry)
    return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress()
      ? [address.toIPv4Address(), Math.max(0, bits - 96)] as const
      : [address, bits] as const
  })
  return {
    contains: (address) => {
      const normalized = normalizeAddress(address)
      if (normalized === undefined) return false
      const parsed = ipaddr.parse(normalized)
      return ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
    }
  }
}

/** The client address of a request, judged by the socket address and the trusted proxies. */
export const resolveClientAddress = (
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trusted: TrustedProxies
): string | undefined => {
  const peer = socketAddress === undefined ? undefined : normalizeAddress(socketAddress)
  if (peer === undefined || forwardedFor === undefined || !trusted.contains(peer)) return peer
  const hops = forwardedFor.split(",").map((hop) => hop.trim()).filter((hop) => hop.length > 0)
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i]!)
    if (hop === undefined) return peer
    if (!trusted.contains(hop)) return hop
  }
  const first = hops.length > 0 ? normalizeAddress(hops[0]!) : undefined
  return first ?? peer
}
