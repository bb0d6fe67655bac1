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
 */
export const generateKey = (environment: ApiKey.Environment): string => {
  let random = ""
  for (let i = 0; i < 32; i++) random += alphabet[randomInt(alphabet.length)]
  return `${ApiKey.keyPrefix}_${environment}_${random}`
}

/** The stored form of a key: SHA-256 hex of the full key. */
export const hashKey = (key: string): string => createHash("sha256").update(key, "utf8").digest("hex")

/** `Bearer <key>` with a key of the right shape, or undefined. */
export const bearerKey = (authorization: string): string | undefined => {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim())
  return match !== null && ApiKey.keyPattern.test(match[1]!) ? match[1] : undefined
}

type Range = readonly [ipaddr.IPv4 | ipaddr.IPv6, number]

/** An entry of a whitelist as a range; IPv4-mapped IPv6 entries become IPv4 ranges. */
const rangeOf = (entry: string): Range | undefined => {
  try {
    if (!entry.includes("/")) {
      const address = ipaddr.process(entry)
      return [address, address.kind() === "ipv4" ? 32 : 128]
    }
    const [address, bits] = ipaddr.parseCIDR(entry)
    if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96]
    }
    return [address, bits]
  } catch {
    return undefined
  }
}

/**
 * Whether a client address passes a whitelist: an empty whitelist allows any address; otherwise the address must
 * lie in one of the entries (addresses or CIDR ranges, IPv4 or IPv6). IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`)
 * are compared as IPv4. An unknown or unparsable client address passes only an empty whitelist.
 */
export const allowedBy = (whitelist: ReadonlyArray<string>, clientAddress: string | undefined): boolean => {
  if (whitelist.length === 0) return true
  if (clientAddress === undefined) return false
  let address: ipaddr.IPv4 | ipaddr.IPv6
  try {
    // strip an IPv6 zone id (fe80::1%eth0): ipaddr.js does not take it in ranges
    address = ipaddr.process(clientAddress.replace(/%.*$/, ""))
  } catch {
    return false
  }
  return whitelist.some((entry) => {
    const range = rangeOf(entry)
    return range !== undefined && range[0].kind() === address.kind() &&
      (address as ipaddr.IPv4).match(range as [ipaddr.IPv4, number])
  })
}
