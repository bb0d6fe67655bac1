/**
 * Address rules for URLs that the service will fetch or call (media inputs, webhook targets).
 *
 * Only public unicast addresses are allowed: loopback, private, link-local (including the cloud metadata address),
 * CGNAT, unique-local IPv6, multicast, reserved and unspecified addresses are refused, as are names that always mean
 * the local machine or a metadata service. Request Schemas check the literal form; the fetching code checks every
 * resolved address again with {@link isPublicAddress}.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import ipaddr from "ipaddr.js"

/** How strict the address rules are in the current fiber. */
export interface AddressPolicy {
  /** Allow loopback and private targets (development and tests: `MEDIAGATE_WEBHOOK_ALLOW_PRIVATE=true`). */
  readonly allowPrivate: boolean
}

/**
 * The address policy of the current fiber. Defaults to strict; the server sets it from configuration around each
 * request, so request Schemas need no context.
 */
export const currentAddressPolicy: FiberRef.FiberRef<AddressPolicy> = FiberRef.unsafeMake<AddressPolicy>({
  allowPrivate: false
})

const blockedNames = new Set(["localhost", "metadata", "metadata.google.internal", "instance-data"])

/** Whether an IP address literal (v4 or v6, IPv4-mapped IPv6 compared as IPv4) is a public unicast address. */
export const isPublicAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return false
  return ipaddr.process(address).range() === "unicast"
}

/** Parses an absolute `http:` / `https:` URL with a host, or returns undefined. */
export const parseHttpUrl = (value: string): URL | undefined => {
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  if (url.hostname === "") return undefined
  return url
}

/** The bare host of a URL (IPv6 brackets removed, trailing dot dropped, lower case). */
export const urlHost = (url: URL): string => {
  const host = url.hostname.toLowerCase().replace(/\.$/, "")
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
}

/**
 * Why the literal host of a URL is not an allowed target, or undefined when it is. Names are not resolved here;
 * code that connects must check the resolved addresses too.
 */
export const literalHostProblem = (url: URL): string | undefined => {
  const host = urlHost(url)
  if (ipaddr.isValid(host)) {
    return isPublicAddress(host) ? undefined : `address ${host} is not a public address`
  }
  if (blockedNames.has(host) || host.endsWith(".localhost") || host.endsWith(".internal")) {
    return `host ${host} is not a public host`
  }
  return undefined
}

/** Checks a URL's literal host against the current fiber's {@link AddressPolicy}. */
export const checkUrlHost = (url: URL): Effect.Effect<string | undefined> =>
  Effect.map(FiberRef.get(currentAddressPolicy), (policy) => policy.allowPrivate ? undefined : literalHostProblem(url))
