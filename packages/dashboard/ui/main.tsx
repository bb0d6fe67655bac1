/**
 * The dashboard app: sign-in (an API key for the account console, the admin token for the operator console),
 * the navigation, the light/dark theme and the routes.
 */
import { ApiKey } from "@mediagate/contract"
import type { ComponentChildren } from "preact"
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { call, type CredentialKind, credential, onUnauthorized, signIn, signOut, toFailure, tryStorage } from "./api.js"
import { EnvironmentBadge, ErrorBox, Link, useSubmit } from "./components.js"
import { navigate, useRoute } from "./router.js"
import type * as Operator from "./views/Operator.js"
import "./styles.css"
import { BalanceView } from "./views/Balance.js"
import { KeyList } from "./views/Keys.js"
import { TaskDetail, TaskList } from "./views/Tasks.js"
import { WebhookDeliveries, WebhookList } from "./views/Webhooks.js"

type Theme = "light" | "dark" | "system"

const themeKey = "mediagate.theme"

const applyTheme = (theme: Theme) => {
  if (theme === "system") delete document.documentElement.dataset["theme"]
  else document.documentElement.dataset["theme"] = theme
}

const storedTheme = (): Theme => {
  const value = tryStorage(() => localStorage.getItem(themeKey))
  return value === "light" || value === "dark" ? value : "system"
}

const ThemeToggle = () => {
  const [theme, setTheme] = useState<Theme>(storedTheme)
  useEffect(() => {
    applyTheme(theme)
    // without storage: this page only
    tryStorage(() => theme === "system" ? localStorage.removeItem(themeKey) : localStorage.setItem(themeKey, theme))
  }, [theme])
  const next: Record<Theme, Theme> = { system: "dark", dark: "light", light: "system" }
  return (
    <button type="button" class="theme" onClick={() => setTheme(next[theme])} aria-label={`Theme: ${theme}. Switch to ${next[theme]}`}>
      {theme === "system" ? "◐ Auto" : theme === "dark" ? "☾ Dark" : "☀ Light"}
    </button>
  )
}

const SignIn = (props: { readonly kind: CredentialKind; readonly onSignedIn: () => void }) => {
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
            // one cheap call checks the credential: the key's own permissions may refuse the balance (403), which
            // still proves the key
            const check = admin ? call("admin", (api) => api.admin.system()) : call("key", (api) => api.tasks.list({ urlParams: { limit: 1 } }))
            return check.then(props.onSignedIn, (failure: unknown) => {
              const f = toFailure(failure)
              if (f.status === 403 && f.code === "KEY_PERMISSION_DENIED") return props.onSignedIn()
              signOut(props.kind)
              throw f
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

const Shell = (props: {
  readonly kind: CredentialKind
  readonly path: string
  readonly onSignOut: () => void
  readonly children: ComponentChildren
}) => {
  // the account console is the view of one environment, the signed-in key's: its tasks, webhooks and ledger only
  const environment = props.kind === "key" ? ApiKey.environmentOfKey(credential("key") ?? "") : undefined
  const links: ReadonlyArray<readonly [string, string]> = props.kind === "key"
    ? [["/tasks", "Tasks"], ["/webhooks", "Webhooks"], ["/keys", "API keys"], ["/balance", "Balance"]]
    : [["/admin/accounts", "Accounts"], ["/admin/system", "System"], ["/admin/channels", "Channels"], ["/admin/tasks", "Tasks"]]
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <Link to={props.kind === "key" ? "/tasks" : "/admin/accounts"} class="brand">
          Mediagate{props.kind === "admin" ? " · operator" : ""}
        </Link>
        {environment === undefined ? null : <EnvironmentBadge environment={environment} />}
        <nav aria-label="Main">
          {links.map(([to, label]) => (
            <Link key={to} to={to} class={props.path.startsWith(to) ? "active" : ""}>{label}</Link>
          ))}
        </nav>
        <div class="tools">
          <ThemeToggle />
          <button type="button" onClick={props.onSignOut}>Sign out</button>
        </div>
      </header>
      {environment === "test"
        ? (
          <div class="test-mode" role="status" aria-label="Test mode">
            <strong>Test mode</strong> — signed in with a test key: you see only test data (test tasks, test webhooks;
            test tasks are never charged, so the ledger is empty). Sign in with a live key for live data.
          </div>
        )
        : null}
      <main id="main" tabIndex={-1}>{props.children}</main>
    </>
  )
}

const NotFound = () => (
  <section>
    <h1>Not found</h1>
    <p>This page does not exist. <Link to="/tasks">Go to the tasks</Link>.</p>
  </section>
)

const accountRoute = (path: string) => {
  const parts = path.split("/").filter((p) => p !== "")
  const [section, id] = parts
  if (parts.length === 0 || (section === "tasks" && id === undefined)) return <TaskList />
  if (section === "tasks" && id !== undefined) return <TaskDetail id={decodeURIComponent(id)} />
  if (section === "webhooks" && id === undefined) return <WebhookList />
  if (section === "webhooks" && id !== undefined) return <WebhookDeliveries id={decodeURIComponent(id)} />
  if (section === "keys") return <KeyList />
  if (section === "balance") return <BalanceView />
  return <NotFound />
}

/** The operator console's module, loaded once on its first use (a chunk of its own: see `views/Operator.tsx`). */
type OperatorModule = typeof Operator
let operatorModule: Promise<OperatorModule> | undefined
const loadOperator = () => (operatorModule ??= import("./views/Operator.js"))

/** The operator view of `path`, once its chunk is loaded. */
const OperatorRoute = (props: { readonly path: string }) => {
  const [loaded, setLoaded] = useState<OperatorModule | undefined>(undefined)
  const [failed, setFailed] = useState<unknown>(undefined)
  useEffect(() => {
    loadOperator().then(setLoaded, (error) => {
      operatorModule = undefined
      setFailed(error)
    })
  }, [])
  if (failed !== undefined) return <ErrorBox error={toFailure(failed)} />
  return loaded === undefined ? <p class="boot">Loading the operator console…</p> : loaded.adminRoute(props.path)
}

const App = () => {
  const route = useRoute()
  const kind: CredentialKind = route.path === "/admin" || route.path.startsWith("/admin/") ? "admin" : "key"
  const [, setVersion] = useState(0)
  const refresh = () => setVersion((v) => v + 1)
  useEffect(() => {
    const expired = (event: Event) => {
      signOut(event.type as CredentialKind)
      refresh()
    }
    onUnauthorized.addEventListener("key", expired)
    onUnauthorized.addEventListener("admin", expired)
    return () => {
      onUnauthorized.removeEventListener("key", expired)
      onUnauthorized.removeEventListener("admin", expired)
    }
  }, [])
  useEffect(() => {
    document.title = `Mediagate · ${route.path.split("/").filter((p) => p !== "").slice(0, 2).join(" · ") || "dashboard"}`
  }, [route.path])
  if (credential(kind) === undefined) return <SignIn kind={kind} onSignedIn={refresh} />
  return (
    <Shell
      kind={kind}
      path={route.path}
      onSignOut={() => {
        signOut(kind)
        navigate(kind === "admin" ? "/admin" : "/")
        refresh()
      }}
    >
      {kind === "admin" ? <OperatorRoute path={route.path} /> : accountRoute(route.path)}
    </Shell>
  )
}

applyTheme(storedTheme())
const root = document.getElementById("app")!
root.textContent = ""
render(<App />, root)
