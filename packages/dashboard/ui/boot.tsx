/**
 * The dashboard's entry: draws the sign-in form at once, with nothing but Preact, the session and the styles, and
 * loads the app (the typed client, Effect, the views: `app.tsx`) meanwhile; a tab already signed in starts the app
 * directly.
 */
import { render } from "preact"
import { useEffect } from "preact/hooks"
import { consoleOf, useRoute } from "./router.js"
import { credential } from "./session.js"
import { loadApp, SignIn } from "./signin.js"
import "./styles.css"
import { applyTheme, storedTheme } from "./theme.js"

const root = document.getElementById("app")!

const start = (): Promise<void> => loadApp().then((app) => app.start(root))

/** The sign-in form of the console the address names, or a line while a signed-in tab's app loads. */
const Boot = () => {
  const kind = consoleOf(useRoute().path)
  const signedIn = credential(kind) !== undefined
  useEffect(() => {
    // signed in: the app; else it loads while the form is filled in, so that signing in does not wait for it
    if (signedIn) void start()
    else void loadApp()
  }, [signedIn])
  return signedIn
    ? <p class="boot">Loading the Mediagate dashboard…</p>
    : <SignIn kind={kind} onSignedIn={() => void start()} />
}

applyTheme(storedTheme())
root.textContent = ""
render(<Boot />, root)
// when the first view is drawn (the browser suite prints the time from the script's arrival to it)
requestAnimationFrame(() => performance.mark("mediagate:first-view"))
