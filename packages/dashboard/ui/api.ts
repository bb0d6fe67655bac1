/**
 * The dashboard's one way to the API: the contract's typed client (`@mediagate/contract/Client`, derived from the
 * HttpApi) over the browser's fetch, run as promises for the views. No request is written by hand here: every
 * endpoint, its parameters and its answer come from the contract.
 *
 * Credentials live in memory and in `sessionStorage` only (this tab, until it closes or signs out), never in a URL
 * or a cookie; the account key and the operator token are kept apart.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Client from "@mediagate/contract/Client"
import * as ValidationMessage from "@mediagate/contract/ValidationMessage"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"

const meta = (name: string): string | undefined =>
  document.querySelector<HTMLMetaElement>(`meta[name=${name}]`)?.content || undefined

/**
 * The root of the app that serves the dashboard, as the browser reaches it (`https://example.com/media/`): the
 * server writes the way back to it relative to this page (`<meta name="mediagate-root">`: `./`, `../`, ...), so
 * any mount prefix, the host's or a proxy's, is kept. Read once, at load, while `location` is the page's own URL.
 */
const appRoot = new URL(meta("mediagate-root") ?? "/", location.href)

/** Where the dashboard is, as the browser's paths spell it: the app root plus its base path (`/media/dashboard`). */
export const base: string = appRoot.pathname.replace(/\/+$/, "") + (meta("mediagate-base") ?? "/dashboard")

/** The API's base URL as the browser reaches it: the app root, unless the server names another path. */
export const apiBaseUrl: string = (() => {
  const configured = meta("mediagate-api")
  return configured === undefined ? appRoot.href.replace(/\/+$/, "") : location.origin + configured
})()

/** The kinds of credentials: an account's API key, the operator's admin token. */
export type CredentialKind = "key" | "admin"

const storageKeys: Record<CredentialKind, string> = { key: "mediagate.apiKey", admin: "mediagate.adminToken" }
const memory: Partial<Record<CredentialKind, string>> = {}

/** A web storage access, which the browser may refuse (private mode, storage off): its result, or `undefined`. */
export const tryStorage = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

const readStored = (kind: CredentialKind): string | undefined =>
  tryStorage(() => sessionStorage.getItem(storageKeys[kind]) ?? undefined)

/** The credential of a kind, if signed in. */
export const credential = (kind: CredentialKind): string | undefined => {
  if (memory[kind] === undefined) {
    const stored = readStored(kind)
    if (stored !== undefined) memory[kind] = stored
  }
  return memory[kind]
}

/** Signs in (keeps the credential for this tab). */
export const signIn = (kind: CredentialKind, value: string): void => {
  memory[kind] = value
  clients[kind] = undefined
  tryStorage(() => sessionStorage.setItem(storageKeys[kind], value)) // refused: memory only
}

/** Signs out: forgets the credential and the client built on it. */
export const signOut = (kind: CredentialKind): void => {
  delete memory[kind]
  clients[kind] = undefined
  tryStorage(() => sessionStorage.removeItem(storageKeys[kind]))
}

/** The typed client of the whole API. */
export type Api = Client.MediagateClient

const clients: Partial<Record<CredentialKind, Api | undefined>> = {}

const makeClient = (apiKey: string) =>
  Effect.runSync(Effect.provide(Client.make({ baseUrl: apiBaseUrl, apiKey }), FetchHttpClient.layer))

/** An API failure as the views show it. */
export class ApiFailure extends Error {
  constructor(message: string, readonly code: string, readonly status: number | undefined) {
    super(message)
  }
}

const hasString = (value: unknown, key: string): value is Record<string, string> =>
  typeof value === "object" && value !== null && typeof (value as Record<string, unknown>)[key] === "string"

/** What went wrong, in words: the API's envelope when there is one, else the transport's. */
export const toFailure = (error: unknown): ApiFailure => {
  if (error instanceof ApiFailure) return error
  if (hasString(error, "code") && hasString(error, "message")) {
    const status = (error as { status?: unknown }).status
    return new ApiFailure(error.message, error.code, typeof status === "number" ? status : undefined)
  }
  // a form's value refused by the contract's Schema before it was sent: the message the API gives for it
  if (hasString(error, "_tag") && error._tag === "ParseError") {
    return new ApiFailure(
      ValidationMessage.formatParseError(error as unknown as ParseResult.ParseError),
      "VALIDATION_ERROR",
      undefined
    )
  }
  if (hasString(error, "_tag") && error._tag === "ResponseError") {
    const response = (error as unknown as { response: { status: number } }).response
    return new ApiFailure(`The server answered ${response.status}`, "HTTP_ERROR", response.status)
  }
  if (hasString(error, "_tag") && error._tag === "RequestError") {
    return new ApiFailure("The server cannot be reached", "NETWORK_ERROR", undefined)
  }
  return new ApiFailure(error instanceof Error ? error.message : String(error), "UNKNOWN", undefined)
}

/** Fired when the server refuses a credential (401): the app signs out of that kind. */
export const onUnauthorized = new EventTarget()

/**
 * Runs one call of the typed client with the credential of `kind`: resolves with the decoded answer, rejects with
 * an {@link ApiFailure}.
 */
export const call = <A, E>(kind: CredentialKind, f: (api: Api) => Effect.Effect<A, E>): Promise<A> => {
  const value = credential(kind)
  if (value === undefined) return Promise.reject(new ApiFailure("Not signed in", "UNAUTHORIZED", 401))
  const api = clients[kind] ??= makeClient(value)
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

/**
 * A fresh `Idempotency-Key` for one intent (`useSubmit` keeps it for the intent's attempts): a random UUID, from
 * `crypto.getRandomValues` where `crypto.randomUUID` is missing (a page served over plain HTTP, not from localhost).
 */
export const idempotencyKey = (): string => {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID()
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
