/**
 * Key material: generation of `mg_live_<32>` / `mg_test_<32>` keys, their stored hash, and the IP whitelist match.
 *
 * @since 0.1.0
 */
import { ApiKey } from "@mediagate/contract"
import ipaddr from "ipaddr.js"
import { createHash, randomInt } from "node:crypto"

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/**
 * A new full key. Each of the 32 characters is drawn with `crypto.randomInt(62)`, which samples without modulo
 * bias (rejection sampling), so every character of `[A-Za-z0-9]` is equally likely (≈190 bits per key).
 *
 * @since 0.1.0
 * @category utils
 */
export const generateKey = (environment: ApiKey.Environment): string => {
  let random = ""
  for (let i = 0; i < 32; i++) random += alphabet[randomInt(alphabet.length)]
  return `${ApiKey.keyPrefix}_${environment}_${random}`
}

/**
 * The stored form of a key: SHA-256 hex of the full key.
 *
 * @since 0.1.0
 * @category utils
 */
export const hashKey = (key: string): string => createHash("sha256").update(key, "utf8").digest("hex")

/**
 * `Bearer <key>` with a key of the right shape, or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const bearerKey = (authorization: string): string | undefined => {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim())
  return match !== null && ApiKey.keyPattern.test(match[1]!) ? match[1] : undefined
}

type Range = readonly [ipaddr.IPv4 | ipaddr.IPv6, number]

/** An entry of a whitelist as a range; IPv4-mapped IPv6 entries become IPv4 ranges. */
const rangeOf = (entry: string): Range | undefined => {
  if (ipaddr.isValid(entry)) {
    const address = ipaddr.process(entry)
    return [address, address.kind() === "ipv4" ? 32 : 128]
  }
  if (!ipaddr.isValidCIDR(entry)) return undefined
  const [address, bits] = ipaddr.parseCIDR(entry)
  return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && bits >= 96
    ? [address.toIPv4Address(), bits - 96]
    : [address, bits]
}

const anyAddress = (): boolean => true

/**
 * A whitelist compiled once (its entries parsed), as the test {@link allowedBy} makes: an empty whitelist allows any
 * address; otherwise the address must lie in one of the entries (addresses or CIDR ranges, IPv4 or IPv6).
 * IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are compared as IPv4. An unknown or unparsable client address
 * passes only an empty whitelist.
 *
 * @since 0.1.0
 * @category utils
 */
export const whitelist = (entries: ReadonlyArray<string>): (clientAddress: string | undefined) => boolean => {
  if (entries.length === 0) return anyAddress
  const ranges = entries.map(rangeOf)
  return (clientAddress) => {
    // strip an IPv6 zone id (fe80::1%eth0): ipaddr.js does not take it in ranges
    const bare = clientAddress?.replace(/%.*$/, "")
    if (bare === undefined || !ipaddr.isValid(bare)) return false
    const address = ipaddr.process(bare)
    return ranges.some((range) =>
      range !== undefined && range[0].kind() === address.kind() && address.match(range[0], range[1])
    )
  }
}

/**
 * Whether a client address passes a whitelist (see {@link whitelist}).
 *
 * @since 0.1.0
 * @category utils
 */
export const allowedBy = (entries: ReadonlyArray<string>, clientAddress: string | undefined): boolean =>
  whitelist(entries)(clientAddress)

/**
 * Whether a whitelist lies within another (the no-escalation rule of derived keys): an empty `outer` allows any
 * address, so anything lies within it; an empty `inner` allows any address, so it lies only within an empty
 * `outer`; otherwise every entry of `inner` (an address or a range) must lie inside one range of `outer`.
 *
 * @since 0.1.0
 * @category utils
 */
export const withinWhitelist = (inner: ReadonlyArray<string>, outer: ReadonlyArray<string>): boolean => {
  if (outer.length === 0) return true
  if (inner.length === 0) return false
  const bounds = outer.map(rangeOf)
  return inner.every((entry) => {
    const range = rangeOf(entry)
    return range !== undefined &&
      bounds.some((bound) =>
        bound !== undefined && bound[0].kind() === range[0].kind() && range[1] >= bound[1] &&
        range[0].match(bound[0], bound[1])
      )
  })
}
