/**
 * Small building blocks of every view: links, the loading / empty / error states, status badges, a confirm
 * button, a copy-once secret box, a pager, and the data-loading hook.
 *
 * Everything user-controlled (prompts, metadata, webhook answers, names) is rendered as text by Preact; no view
 * sets HTML.
 */
import type { ComponentChildren } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { ApiFailure, toFailure } from "./api.js"
import { href, onLink } from "./router.js"

/** A link to a route of the dashboard. */
export const Link = (props: { readonly to: string; readonly children: ComponentChildren; readonly class?: string }) => (
  <a href={href(props.to)} onClick={onLink(props.to)} class={props.class}>{props.children}</a>
)

/** The state of a load: loading, its value, or why it failed. */
export interface Loaded<A> {
  readonly value: A | undefined
  readonly error: ApiFailure | undefined
  readonly loading: boolean
  /** Loads again (keeps showing the last value meanwhile). */
  readonly reload: () => void
}

/**
 * Loads with `load` whenever `deps` change; with `pollMs`, again every so often while the tab is visible (and the
 * `poll` predicate of the last value holds).
 */
export const useLoad = <A,>(
  load: () => Promise<A>,
  deps: ReadonlyArray<unknown>,
  options: { readonly pollMs?: number; readonly poll?: (value: A) => boolean } = {}
): Loaded<A> => {
  const [state, setState] = useState<{ value: A | undefined; error: ApiFailure | undefined; loading: boolean }>({
    value: undefined,
    error: undefined,
    loading: true
  })
  const generation = useRef(0)
  const latest = useRef<A | undefined>(undefined)
  const run = useCallback(() => {
    const mine = ++generation.current
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (value) => {
        if (mine !== generation.current) return
        latest.current = value
        setState({ value, error: undefined, loading: false })
      },
      (error: unknown) => {
        if (mine !== generation.current) return
        setState((s) => ({ value: s.value, error: toFailure(error), loading: false }))
      }
    )
  }, deps)
  useEffect(() => {
    latest.current = undefined
    setState({ value: undefined, error: undefined, loading: true })
    run()
    if (options.pollMs === undefined) return
    const timer = setInterval(() => {
      if (document.visibilityState !== "visible") return
      const value = latest.current
      if (value !== undefined && options.poll !== undefined && !options.poll(value)) return
      run()
    }, options.pollMs)
    return () => clearInterval(timer)
  }, [run])
  return { ...state, reload: run }
}

/** An error box: the message, its code, and a way to try again. */
export const ErrorBox = (props: { readonly error: ApiFailure; readonly retry?: () => void; readonly hint?: ComponentChildren }) => (
  <div class="error" role="alert">
    <strong>{props.error.message}</strong>
    <span class="code">{props.error.code}{props.error.status === undefined ? "" : ` · HTTP ${props.error.status}`}</span>
    {props.hint === undefined ? null : <div class="hint">{props.hint}</div>}
    {props.retry === undefined ? null : <button type="button" onClick={props.retry}>Try again</button>}
  </div>
)

/** What a list shows when it has nothing. */
export const Empty = (props: { readonly children: ComponentChildren }) => <div class="empty">{props.children}</div>

/** The loading state. */
export const Loading = () => <div class="loading" aria-live="polite">Loading…</div>

/** The state of a load: loading, error, or the view of its value. */
export const Show = <A,>(props: {
  readonly loaded: Loaded<A>
  readonly children: (value: A) => ComponentChildren
  readonly hint?: (error: ApiFailure) => ComponentChildren
}) => {
  const { error, reload, value } = props.loaded
  return (
    <>
      {error === undefined ? null : <ErrorBox error={error} retry={reload} hint={props.hint?.(error)} />}
      {value === undefined ? (error === undefined ? <Loading /> : null) : props.children(value)}
    </>
  )
}

/** A task or delivery state as a badge. */
export const Status = (props: { readonly status: string }) => (
  <span class={`status status-${props.status}`} data-status={props.status}>{props.status}</span>
)

/** A button that asks "sure?" by a second click before doing something that cannot be undone. */
export const ConfirmButton = (props: {
  readonly label: string
  readonly confirm: string
  readonly onConfirm: () => Promise<unknown> | void
  readonly class?: string
}) => {
  const [armed, setArmed] = useState(false)
  const [busy, setBusy] = useState(false)
  useEffect(() => {
    if (!armed) return
    const timer = setTimeout(() => setArmed(false), 5000)
    return () => clearTimeout(timer)
  }, [armed])
  return armed
    ? (
      <button
        type="button"
        class={`danger ${props.class ?? ""}`}
        disabled={busy}
        onClick={() => {
          setBusy(true)
          Promise.resolve(props.onConfirm()).finally(() => {
            setBusy(false)
            setArmed(false)
          })
        }}
      >
        {props.confirm}
      </button>
    )
    : <button type="button" class={props.class} onClick={() => setArmed(true)}>{props.label}</button>
}

/** A secret shown once, with a copy button and the warning that it will not be shown again. */
export const SecretOnce = (props: { readonly title: string; readonly value: string; readonly onDone: () => void }) => {
  const [copied, setCopied] = useState(false)
  return (
    <div class="secret" role="status">
      <h3>{props.title}</h3>
      <p>Copy it now: it is shown only once and cannot be read again.</p>
      <code class="secret-value" data-testid="secret">{props.value}</code>
      <div class="row">
        <button
          type="button"
          onClick={() =>
            navigator.clipboard?.writeText(props.value).then(() => setCopied(true), () => setCopied(false))}
        >
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" onClick={props.onDone}>I have copied it</button>
      </div>
    </div>
  )
}

/** Keyset paging: the cursors of the pages seen so far, next and back. */
export const usePager = () => {
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const cursor = cursors[cursors.length - 1]
  return {
    cursor,
    page: cursors.length + 1,
    next: (next: string) => setCursors((c) => [...c, next]),
    back: () => setCursors((c) => c.slice(0, -1)),
    reset: () => setCursors([])
  }
}

/** The pager's controls under a list. */
export const Pager = (props: {
  readonly pager: ReturnType<typeof usePager>
  readonly pagination: { readonly cursor: string | null; readonly hasMore: boolean; readonly total: number }
  readonly shown: number
}) => (
  <nav class="pager" aria-label="Pages">
    <button type="button" disabled={props.pager.page === 1} onClick={props.pager.back}>← Newer</button>
    <span>Page {props.pager.page} · {props.shown} shown of {props.pagination.total}</span>
    <button
      type="button"
      disabled={!props.pagination.hasMore || props.pagination.cursor === null}
      onClick={() => props.pagination.cursor !== null && props.pager.next(props.pagination.cursor)}
    >
      Older →
    </button>
  </nav>
)

/** A labelled form field. */
export const Field = (props: { readonly label: string; readonly children: ComponentChildren; readonly help?: string }) => (
  <label class="field">
    <span class="label">{props.label}</span>
    {props.children}
    {props.help === undefined ? null : <span class="help">{props.help}</span>}
  </label>
)

/** Runs a form's submission: busy while it runs, its failure shown. */
export const useSubmit = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiFailure | undefined>(undefined)
  const submit = (f: () => Promise<unknown>) => {
    setBusy(true)
    setError(undefined)
    return f().then(
      () => setBusy(false),
      (e: unknown) => {
        setBusy(false)
        setError(toFailure(e))
      }
    )
  }
  return { busy, error, submit, clear: () => setError(undefined) }
}
