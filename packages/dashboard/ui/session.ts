/**
 * Where the dashboard and the API are (from the page's meta tags) and the credentials: in memory and in
 * `sessionStorage` only (this tab, until it closes or signs out), never in a URL or a cookie; the account key and
 * the operator token are kept apart. No Effect or contract code: the sign-in form is drawn with this alone.
 */

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
  tryStorage(() => sessionStorage.setItem(storageKeys[kind], value)) // refused: memory only
}

/** The account console's key of the other environment, kept beside the signed-in one (the test/live switch). */
const otherStorageKey = "mediagate.apiKey.other"
let otherKey: string | undefined

/** The environment a key's prefix names (`mg_live_…`, `mg_test_…`). */
export const environmentOfKey = (key: string): "live" | "test" | undefined =>
  key.startsWith("mg_live_") ? "live" : key.startsWith("mg_test_") ? "test" : undefined

/** The kept key of the other environment than the signed-in key's, if any. */
export const otherCredential = (): string | undefined => {
  otherKey ??= tryStorage(() => sessionStorage.getItem(otherStorageKey) ?? undefined)
  return otherKey
}

/** Keeps a key of the other environment for this tab (the switch uses it). */
export const keepOther = (key: string): void => {
  otherKey = key
  tryStorage(() => sessionStorage.setItem(otherStorageKey, key))
}

/** Switches the account console to the kept key of the other environment (the signed-in one is kept in turn). */
export const switchEnvironment = (): void => {
  const other = otherCredential()
  const current = credential("key")
  if (other === undefined || current === undefined) return
  signIn("key", other)
  keepOther(current)
}

/** Signs out: forgets the credential (the client built on it is not used again), and the account's other key. */
export const signOut = (kind: CredentialKind): void => {
  delete memory[kind]
  tryStorage(() => sessionStorage.removeItem(storageKeys[kind]))
  if (kind === "key") {
    otherKey = undefined
    tryStorage(() => sessionStorage.removeItem(otherStorageKey))
  }
}
