/**
 * The kept-alive connection pools of `PinnedHttp`: one per protocol, host and checked address, whose sockets only
 * ever connect to that address; and when a request may go out again after its reused connection closed unanswered.
 *
 * @internal
 */
import * as http from "node:http"
import * as https from "node:https"
import type { LookupFunction } from "node:net"

/** An address a host resolved to and that was checked. */
interface Target {
  readonly address: string
  readonly family: number
}

/** Most kept-alive connection pools at once (one per host and checked address); the oldest is closed beyond. */
const maxPools = 256

/** The kept-alive connection pools, by protocol, host and checked address. */
const pools = new Map<string, http.Agent>()

/**
 * How long a kept-alive connection may stay idle in its pool. Node's agent closes it sooner, a second before the
 * server's own limit, when the server announces one (`Keep-Alive: timeout=5` closes it after 4 s), but only under an
 * idle limit of the agent's own: without one a connection would be reused just as the server closes it.
 */
const idleMs = 30_000

/** Methods a server may be sent twice (RFC 9110 §9.2.2). */
const idempotentMethods = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"])

/** Whether a request may go out again on a new connection (`RequestOptions.repeatable` of `PinnedHttp`). */
export const repeatableRequest = (
  options: { readonly method?: string | undefined; readonly repeatable?: boolean | undefined }
) => options.repeatable ?? idempotentMethods.has((options.method ?? "GET").toUpperCase())

/** A connection error that says the other side closed it before answering. */
export const closedUnanswered = (error: NodeJS.ErrnoException) =>
  error.code === "ECONNRESET" || error.code === "EPIPE" || error.message === "socket hang up"

/** The pool of a host at a checked address: its connections only ever go to that address. */
export const poolFor = (url: URL, target: Target): http.Agent => {
  const key = `${url.protocol}//${url.host}|${target.address}`
  const known = pools.get(key)
  if (known !== undefined) return known
  const options = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: idleMs, lookup: pinnedLookup(target) }
  const agent = url.protocol === "https:" ? new https.Agent(options) : new http.Agent(options)
  if (pools.size >= maxPools) {
    const [oldestKey, oldest] = pools.entries().next().value as [string, http.Agent]
    pools.delete(oldestKey)
    oldest.destroy()
  }
  pools.set(key, agent)
  return agent
}

/** A lookup that hands the socket the address that was checked: no second DNS answer is used. */
export const pinnedLookup = (target: Target): LookupFunction => (_hostname, lookupOptions, callback) => {
  if (lookupOptions.all === true) callback(null, [{ address: target.address, family: target.family }])
  else callback(null, target.address, target.family)
}
