/**
 * The dashboard's one way to the API: the contract's typed client (`@mediagate/contract/Client`, derived from the
 * HttpApi) over the browser's fetch, run as promises for the views. No request is written by hand here: every
 * endpoint, its parameters and its answer come from the contract.
 *
 * Where and who (`session.ts`) and a request's failure in words (`requests.ts`) are modules of their own without
 * Effect, re-exported here: the sign-in form is drawn before this module loads.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Client from "@mediagate/contract/Client"
import * as ValidationMessage from "@mediagate/contract/ValidationMessage"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import { ApiFailure, onUnauthorized, setParseErrorMessage, toFailure } from "./requests.js"
import { apiBaseUrl, credential, type CredentialKind } from "./session.js"

export * from "./requests.js"
export * from "./session.js"

setParseErrorMessage((error) => ValidationMessage.formatParseError(error as ParseResult.ParseError))

/** The typed client of the whole API. */
export type Api = Client.MediagateClient

/** The client of each kind, with the credential it was made for (a new credential makes a new client). */
const clients: Partial<Record<CredentialKind, { readonly credential: string; readonly api: Api }>> = {}

const makeClient = (apiKey: string) =>
  Effect.runSync(Effect.provide(Client.make({ baseUrl: apiBaseUrl, apiKey }), FetchHttpClient.layer))

/**
 * Runs one call of the typed client with the credential of `kind`: resolves with the decoded answer, rejects with
 * an {@link ApiFailure}.
 */
export const call = <A, E>(kind: CredentialKind, f: (api: Api) => Effect.Effect<A, E>): Promise<A> => {
  const value = credential(kind)
  if (value === undefined) return Promise.reject(new ApiFailure("Not signed in", "UNAUTHORIZED", 401))
  const known = clients[kind]
  const api = known !== undefined && known.credential === value ? known.api : makeClient(value)
  clients[kind] = { credential: value, api }
  return Effect.runPromise(Effect.either(f(api))).then((result) => {
    if (result._tag === "Right") return result.right
    const failure = toFailure(result.left)
    if (failure.status === 401 || failure.code === "KEY_REVOKED") {
      onUnauthorized.dispatchEvent(new CustomEvent(kind))
    }
    throw failure
  }, (defect: unknown) => {
    throw toFailure(defect)
  })
}
