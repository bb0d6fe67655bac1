/**
 * The account console's way to the API: `@mediagate/client` (dependency-free, no Effect) with the signed-in key.
 * A call resolves with the answer's data and rejects with an {@link ApiFailure} carrying the API's own message and
 * code; a refused key (401, or revoked) signs the account console out. The operator console keeps the contract's
 * typed client (`api.ts`, in its own chunk).
 */
import { Mediagate } from "@mediagate/client"
import { ApiFailure, onUnauthorized, toFailure } from "./requests.js"
import { apiBaseUrl, credential } from "./session.js"

let made: { readonly key: string; readonly client: Mediagate } | undefined

/** The client of the signed-in key (made again when the key changes). */
const client = (): Mediagate => {
  const key = credential("key")
  if (key === undefined) throw new ApiFailure("Not signed in", "UNAUTHORIZED", 401)
  if (made?.key !== key) made = { key, client: new Mediagate({ apiKey: key, baseUrl: apiBaseUrl }) }
  return made.client
}

/** A failure of the client in the console's words (no answer: the transport's message is the browser's). */
const inWords = (error: unknown): ApiFailure => {
  const failure = toFailure(error)
  if (failure.code === "NETWORK_ERROR") return new ApiFailure("The server cannot be reached", failure.code, undefined)
  if (failure.code === "TIMEOUT") return new ApiFailure("The server did not answer in time", failure.code, undefined)
  return failure
}

/** Runs one call of the client `made` gives, its failure in the console's words. */
const run = <A>(made: () => Mediagate, f: (client: Mediagate) => Promise<A>): Promise<A> =>
  Promise.resolve().then(() => f(made())).catch((error: unknown) => Promise.reject(inWords(error)))

/**
 * Runs one call of the client with the signed-in key. The client sends a read or a call with an `Idempotency-Key`
 * again by itself after a lost answer (up to twice); a failure after that is the call's.
 */
export const keyCall = <A>(f: (client: Mediagate) => Promise<A>): Promise<A> =>
  run(client, f).catch((failure: ApiFailure) => {
    if (failure.status === 401 || failure.code === "KEY_REVOKED") onUnauthorized.dispatchEvent(new CustomEvent("key"))
    throw failure
  })

/** Runs one call with another key than the signed-in one (a refusal of it signs nothing out). */
export const otherKeyCall = <A>(key: string, f: (client: Mediagate) => Promise<A>): Promise<A> =>
  run(() => new Mediagate({ apiKey: key, baseUrl: apiBaseUrl }), f)
