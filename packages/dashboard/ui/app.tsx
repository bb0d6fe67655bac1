/**
 * The dashboard app, a chunk loaded by `boot.tsx`: the consoles' navigation and routes. The account console calls
 * the API through `@mediagate/client` (`client.ts`); the operator console (a chunk of its own, with the contract's
 * typed client and Effect) and the playground are loaded on their first use.
 */
import type { ComponentChildren } from "preact"
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { keyCall, otherKeyCall } from "./client.js"
import { ApiFailure, onUnauthorized, toFailure } from "./requests.js"
import {
  type CredentialKind,
  credential,
  environmentOfKey,
  keepOther,
  otherCredential,
  signOut,
  switchEnvironment
} from "./session.js"
import { EnvironmentBadge, ErrorBox, Link, useSubmit } from "./components.js"
import { consoleOf, navigate, useRoute } from "./router.js"
import { SignIn } from "./signin.js"
import { ThemeToggle } from "./theme.js"
import type * as Operator from "./views/Operator.js"
import type * as Playground from "./views/Playground.js"
import { BalanceView } from "./views/Balance.js"
import { KeyList } from "./views/Keys.js"
import { TaskDetail, TaskList } from "./views/Tasks.js"
import { WebhookDeliveries, WebhookList } from "./views/Webhooks.js"

/**
 * The test/live switch of the account console (as Stripe's "Test mode"): the console shows one environment's data,
 * the signed-in key's; with a key of the other environment kept in this tab, the switch turns the console to it at
 * once. Without one, it asks for one: a key to sign in with, or (from a live key allowed to make keys) a new test
 * key made for this tab. Signing out forgets both.
 */
const EnvironmentSwitch = (props: { readonly environment: "live" | "test"; readonly onSwitched: () => void }) => {
  const [asking, setAsking] = useState(false)
  const [value, setValue] = useState("")
  const submission = useSubmit()
  const other = props.environment === "live" ? "test" : "live"
  const use = (key: string) => {
    keepOther(key)
    switchEnvironment()
    setAsking(false)
    setValue("")
    props.onSwitched()
  }
  return (
    <>
      <button
        type="button"
        role="switch"
        class="env-switch"
        aria-checked={props.environment === "test"}
        onClick={() => {
          if (otherCredential() === undefined) return setAsking(!asking)
          switchEnvironment()
          props.onSwitched()
        }}
      >
        Test data
      </button>
      {asking
        ? (
          <form
            class="card form env-ask"
            aria-label={`View ${other} data`}
            onSubmit={(e) => {
              e.preventDefault()
              submission.submit(() => {
                const key = value.trim()
                if (environmentOfKey(key) !== other) {
                  return Promise.reject(
                    new ApiFailure(`That is not a ${other} key (mg_${other}_…)`, "VALIDATION_ERROR", undefined)
                  )
                }
                return checkKey(key).then(() => use(key))
              })
            }}
          >
            <p>
              {`To view ${other} data, sign in with a ${other} key of this account as well. It stays in this tab only; the switch then goes
              back and forth.`}
            </p>
            <label class="field">
              <span class="label">{`A ${other} API key`}</span>
              <input
                type="password"
                name="otherKey"
                autoComplete="off"
                spellcheck={false}
                value={value}
                onInput={(e) => setValue(e.currentTarget.value)}
              />
            </label>
            {submission.error === undefined ? null : <ErrorBox error={submission.error} />}
            <div class="row">
              <button type="submit" class="primary" disabled={submission.busy || value.trim() === ""}>Use this key</button>
              {other === "test"
                ? (
                  <button
                    type="button"
                    disabled={submission.busy}
                    onClick={() =>
                      submission.submit((idempotencyKey) =>
                        keyCall((client) =>
                          client.apiKeys.create({ name: "dashboard test view", environment: "test" }, { idempotencyKey })
                        ).then((created) => use(created.key))
                      )}
                  >
                    Make a test key for this tab
                  </button>
                )
                : null}
              <button type="button" onClick={() => setAsking(false)}>Cancel</button>
            </div>
          </form>
        )
        : null}
    </>
  )
}

/**
 * Whether a credential is accepted, by one cheap call's answer: a refusal of the call for the credential's own
 * permissions (403) still proves it.
 */
const proven = (answer: Promise<unknown>): Promise<void> =>
  answer.then(() => undefined, (error: unknown) => {
    const failure = toFailure(error)
    if (failure.status === 403 && failure.code === "KEY_PERMISSION_DENIED") return
    throw failure
  })

/** Whether a key of the other environment is accepted. */
const checkKey = (key: string): Promise<void> => proven(otherKeyCall(key, (client) => client.tasks.list({ limit: 1 })))

const Shell = (props: {
  readonly kind: CredentialKind
  readonly path: string
  readonly onSignOut: () => void
  readonly onSwitched: () => void
  readonly children: ComponentChildren
}) => {
  // the account console is the view of one environment, the signed-in key's: its tasks, webhooks and ledger only
  const environment = props.kind === "key" ? environmentOfKey(credential("key") ?? "") : undefined
  const links: ReadonlyArray<readonly [string, string]> = props.kind === "key"
    ? [["/tasks", "Tasks"], ["/playground", "Playground"], ["/webhooks", "Webhooks"], ["/keys", "API keys"], [
      "/balance",
      "Balance"
    ]]
    : [["/admin/accounts", "Accounts"], ["/admin/system", "System"], ["/admin/channels", "Channels"], ["/admin/tasks", "Tasks"]]
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <Link to={props.kind === "key" ? "/tasks" : "/admin/accounts"} class="brand">
          Mediagate{props.kind === "admin" ? " · operator" : ""}
        </Link>
        {environment === undefined ? null : <EnvironmentBadge environment={environment} />}
        {environment === undefined ? null : <EnvironmentSwitch environment={environment} onSwitched={props.onSwitched} />}
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
            <strong>Test mode</strong> — you see only test data (test tasks, test webhooks; test tasks are never charged, so
            the ledger is empty). Switch <em>Test data</em> off for live data.
          </div>
        )
        : null}
      {/* a switch of environment draws the views again, with the other key */}
      <main id="main" tabIndex={-1} key={environment}>{props.children}</main>
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
  if (section === "playground") {
    return <Lazy load={loadPlayground} waiting="Loading the playground…" draw={(m) => <m.Playground />} />
  }
  return <NotFound />
}

/** A module loaded once on its first use (a chunk of its own), and loaded again after a failed load. */
const lazily = <A,>(load: () => Promise<A>) => {
  let loading: Promise<A> | undefined
  return () =>
    loading ??= load().catch((error: unknown) => {
      loading = undefined
      throw error
    })
}

/** The operator console (`views/Operator.tsx`) and the playground (`views/Playground.tsx`): chunks of their own. */
const loadOperator = lazily((): Promise<typeof Operator> => import("./views/Operator.js"))
const loadPlayground = lazily((): Promise<typeof Playground> => import("./views/Playground.js"))

/** What `draw` makes of a lazily loaded module, once it is loaded (`waiting` meanwhile). */
const Lazy = <A,>(props: {
  readonly load: () => Promise<A>
  readonly waiting: string
  readonly draw: (module: A) => ComponentChildren
}) => {
  const [loaded, setLoaded] = useState<{ readonly module: A } | undefined>(undefined)
  const [failed, setFailed] = useState<unknown>(undefined)
  useEffect(() => {
    props.load().then((module) => setLoaded({ module }), setFailed)
  }, [])
  if (failed !== undefined) return <ErrorBox error={toFailure(failed)} />
  return loaded === undefined ? <p class="boot">{props.waiting}</p> : <>{props.draw(loaded.module)}</>
}

const App = () => {
  const route = useRoute()
  const kind = consoleOf(route.path)
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
      onSwitched={() => {
        // the other environment's data: the same section, from its list (a task or webhook page is of one environment)
        navigate(`/${route.path.split("/").filter((part) => part !== "")[0] ?? "tasks"}`)
        refresh()
      }}
    >
      {kind === "admin"
        ? <Lazy load={loadOperator} waiting="Loading the operator console…" draw={(m) => m.adminRoute(route.path)} />
        : accountRoute(route.path)}
    </Shell>
  )
}

/** Draws the app in `root` (in place of the boot view). */
export const start = (root: HTMLElement): void => {
  render(<App />, root)
}

/**
 * Checks the credential of `kind` signed in a moment ago with one cheap call: the key's own permissions may refuse
 * the list (403), which still proves the key. Rejects with the API's refusal.
 */
export const checkCredential = (kind: CredentialKind): Promise<void> =>
  proven(
    kind === "admin"
      ? import("./api.js").then(({ call }) => call("admin", (api) => api.admin.system()))
      : keyCall((client) => client.tasks.list({ limit: 1 }))
  )
