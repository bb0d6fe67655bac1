/**
 * The sign-in form (an API key for the account console, the admin token for the operator console), drawn without
 * the app: `boot.tsx` shows it while the app's chunk loads, and the app shows it after a sign-out.
 */
import { useState } from "preact/hooks"
import type * as App from "./app.js"
import { ErrorBox, Link, useSubmit } from "./components.js"
import { toFailure } from "./requests.js"
import { type CredentialKind, signIn, signOut } from "./session.js"

let app: Promise<typeof App> | undefined
/** The app's module, loaded once (a chunk of its own: the typed client, the views). */
export const loadApp = (): Promise<typeof App> => (app ??= import("./app.js"))

/** The sign-in form of a console. */
export const SignIn = (props: { readonly kind: CredentialKind; readonly onSignedIn: () => void }) => {
  const [value, setValue] = useState("")
  const { busy, error, submit } = useSubmit()
  const admin = props.kind === "admin"
  return (
    <main class="signin">
      <form
        class="card form"
        aria-label={admin ? "Operator sign-in" : "Sign in"}
        onSubmit={(e) => {
          e.preventDefault()
          submit(() => {
            signIn(props.kind, value.trim())
            // the app (and its typed client) checks the credential; it may still be loading
            return loadApp().then((app) => app.checkCredential(props.kind)).then(props.onSignedIn, (failure: unknown) => {
              signOut(props.kind)
              throw toFailure(failure)
            })
          })
        }}
      >
        <h1>{admin ? "Mediagate operator console" : "Mediagate dashboard"}</h1>
        <p class="muted">
          {admin
            ? "Sign in with the admin token (MEDIAGATE_ADMIN_TOKEN)."
            : "Sign in with an API key (mg_live_… or mg_test_…). It stays in this tab only and is forgotten when you sign out or close it."}
        </p>
        <label class="field">
          <span class="label">{admin ? "Admin token" : "API key"}</span>
          <input
            type="password"
            name={admin ? "token" : "apiKey"}
            autoComplete="off"
            spellcheck={false}
            required
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        </label>
        {error === undefined ? null : <ErrorBox error={error} />}
        <button type="submit" class="primary" disabled={busy || value.trim() === ""}>Sign in</button>
        <p class="small">
          {admin ? <Link to="/tasks">Account console →</Link> : <Link to="/admin">Operator console →</Link>}
        </p>
      </form>
    </main>
  )
}
