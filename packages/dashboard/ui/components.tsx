/**
 * Small building blocks of every view: links, view headings and figures, the loading / empty / error states, lists
 * and paged lists, tables, status badges, action and confirm buttons, a copy-once secret box, a pager, form cards
 * with their fields, checkboxes and selects, and the data-loading, form-state and submission hooks.
 *
 * Everything user-controlled (prompts, metadata, webhook answers, names) is rendered as text by Preact; no view
 * sets HTML.
 */
import type { ComponentChildren, JSX } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { answerLost, type ApiFailure, idempotencyKey, toFailure } from "./requests.js"
import { current, href, navigate, onLink, useRoute } from "./router.js"

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
  readonly hint?: ((error: ApiFailure) => ComponentChildren) | undefined
}) => {
  const { error, reload, value } = props.loaded
  return (
    <>
      {error === undefined ? null : <ErrorBox error={error} retry={reload} hint={props.hint?.(error)} />}
      {value === undefined ? (error === undefined ? <Loading /> : null) : props.children(value)}
    </>
  )
}

/** A loaded list: its view, or what it shows when it has nothing. */
export const ShowList = <A,>(props: {
  readonly loaded: Loaded<ReadonlyArray<A>>
  readonly empty: ComponentChildren
  readonly hint?: (error: ApiFailure) => ComponentChildren
  readonly children: (items: ReadonlyArray<A>) => ComponentChildren
}) => (
  <Show loaded={props.loaded} hint={props.hint}>
    {(items) => items.length === 0 ? <Empty>{props.empty}</Empty> : props.children(items)}
  </Show>
)

/** One page of a keyset-paged list, as the API answers it. */
export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly cursor: string | null; readonly hasMore: boolean; readonly total: number }
}

/** A loaded page of a list: its view and the pager under it, or what it shows when it has nothing. */
export const ShowPage = <A,>(props: {
  readonly loaded: Loaded<Page<A>>
  readonly pager: PagerState
  readonly empty: ComponentChildren
  readonly children: (items: ReadonlyArray<A>) => ComponentChildren
}) => (
  <Show loaded={props.loaded}>
    {(page) =>
      page.data.length === 0 ? <Empty>{props.empty}</Empty> : (
        <>
          {props.children(page.data)}
          <Pager pager={props.pager} pagination={page.pagination} shown={page.data.length} />
        </>
      )}
  </Show>
)

/** A view's heading, with what stands beside it (a back link, how often it refreshes). */
export const ViewHeader = (props: { readonly title: ComponentChildren; readonly class?: string; readonly children?: ComponentChildren }) => (
  <header class="view-header">
    <h1 class={props.class}>{props.title}</h1>
    {props.children}
  </header>
)

/** One figure of a summary: its label, the value, and a note under it. */
export const Stat = (props: {
  readonly label: ComponentChildren
  readonly value: ComponentChildren
  readonly title?: string
  readonly testid?: string
  readonly note?: ComponentChildren
  readonly noteClass?: string
}) => (
  <div class="stat">
    <span class="label">{props.label}</span>
    <strong data-testid={props.testid} title={props.title}>{props.value}</strong>
    {props.note === undefined ? null : <span class={props.noteClass ?? "muted small"}>{props.note}</span>}
  </div>
)

/** A column heading: its text, or its text and class (`num` aligns figures to the right). */
export type Column = string | readonly [label: string, className: string]

/** A table that scrolls sideways on narrow screens: its column headings (if any) and its rows. */
export const Table = (props: {
  readonly columns?: ReadonlyArray<Column>
  readonly class?: string
  readonly caption?: string
  readonly children: ComponentChildren
}) => (
  <div class="table-wrap">
    <table class={props.class}>
      {props.caption === undefined ? null : <caption>{props.caption}</caption>}
      {props.columns === undefined ? null : (
        <thead>
          <tr>
            {props.columns.map((column) =>
              typeof column === "string"
                ? <th key={column} scope="col">{column}</th>
                : <th key={column[0]} scope="col" class={column[1]}>{column[0]}</th>
            )}
          </tr>
        </thead>
      )}
      <tbody>{props.children}</tbody>
    </table>
  </div>
)

/** A card with its heading. */
export const Card = (props: { readonly title: ComponentChildren; readonly class?: string; readonly children: ComponentChildren }) => (
  <div class={props.class === undefined ? "card" : `card ${props.class}`}>
    <h2>{props.title}</h2>
    {props.children}
  </div>
)

/** One fact of a details list (`<dl class="facts">`): its label, then its value. */
export const Fact = (props: {
  readonly label: string
  readonly class?: string
  readonly title?: string
  readonly children: ComponentChildren
}) => (
  <>
    <dt>{props.label}</dt>
    <dd class={props.class} title={props.title}>{props.children}</dd>
  </>
)

/** A task or delivery state as a badge. */
export const Status = (props: { readonly status: string }) => (
  <span class={`status status-${props.status}`} data-status={props.status}>{props.status}</span>
)

/** The environment of a key or task: `live` or `test` (test and live data are apart). */
export const EnvironmentBadge = (props: { readonly environment: "live" | "test" }) => (
  <span class={`env env-${props.environment}`} data-environment={props.environment}>
    {props.environment === "test" ? "Test" : "Live"}
  </span>
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

/**
 * Keyset paging kept in the page's address: `page` (its number, for people) and one `cursor` per page before it
 * (the keyset cursors that led there, oldest first), so a reload, the browser's Back and Forward and a shared link
 * show the same page. Other query parameters (a list's filters) are kept.
 */
export const usePager = () => {
  const route = useRoute()
  const cursors = route.query.getAll("cursor").filter((c) => c !== "")
  const cursor = cursors[cursors.length - 1]
  const go = (next: ReadonlyArray<string>, replace: boolean) => {
    const { path, query } = current()
    query.delete("cursor")
    query.delete("page")
    if (next.length > 0) {
      query.set("page", String(next.length + 1))
      for (const c of next) query.append("cursor", c)
    }
    const search = query.toString()
    navigate(`${path}${search === "" ? "" : `?${search}`}`, { replace })
  }
  return {
    cursor,
    /** The cursor as URL parameters of the list call: none on the first page. */
    params: cursor === undefined ? {} : { cursor },
    page: cursors.length + 1,
    next: (next: string) => go([...cursors, next], false),
    back: () => go(cursors.slice(0, -1), false),
    /** Back to the first page (a filter changed): replaces the address rather than adding a step. */
    reset: () => {
      if (cursors.length > 0) go([], true)
    }
  }
}

/** The state of a pager (see {@link usePager}). */
export type PagerState = ReturnType<typeof usePager>

/** The pager's controls under a list. */
export const Pager = (props: {
  readonly pager: PagerState
  readonly pagination: Page<unknown>["pagination"]
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

/**
 * Runs a form's submission: busy while it runs, its failure shown. One submission runs at a time (a second click
 * while one runs is the same intent: ignored). Each intent has its `Idempotency-Key`, given to `f`: made for the
 * first attempt, kept when the attempt got no answer (the network failed: the server may have done it, and the next
 * click asks for the same thing), new once the server has answered.
 */
export const useSubmit = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiFailure | undefined>(undefined)
  const running = useRef(false)
  const intent = useRef<string | undefined>(undefined)
  const submit = (f: (idempotencyKey: string) => Promise<unknown>): Promise<void> => {
    if (running.current) return Promise.resolve()
    running.current = true
    setBusy(true)
    setError(undefined)
    const key = intent.current ??= idempotencyKey()
    return f(key).then(
      () => {
        intent.current = undefined
      },
      (e: unknown) => {
        const failure = toFailure(e)
        if (!answerLost(failure)) intent.current = undefined
        setError(failure)
      }
    ).finally(() => {
      running.current = false
      setBusy(false)
    })
  }
  return { busy, error, submit, clear: () => setError(undefined) }
}

/** The state of a form's submissions (see {@link useSubmit}). */
export type Submission = ReturnType<typeof useSubmit>

/** A button that runs an action of `submission`, disabled while one runs. */
export const ActionButton = (props: {
  readonly submission: Submission
  /** The action, given the `Idempotency-Key` of this intent (see {@link useSubmit}). */
  readonly run: (idempotencyKey: string) => Promise<unknown>
  readonly children: ComponentChildren
}) => (
  <button type="button" disabled={props.submission.busy} onClick={() => props.submission.submit(props.run)}>
    {props.children}
  </button>
)

/**
 * A form in a card, named `label`: its heading (`title`, else the label), its fields, the failure of its last
 * submission (with a hint), then its buttons, given whether a submission runs.
 */
export const FormCard = (props: {
  readonly label: string
  readonly title?: ComponentChildren
  readonly class?: string
  /** Submits the form, given the `Idempotency-Key` of this intent (see {@link useSubmit}). */
  readonly onSubmit: (form: HTMLFormElement, idempotencyKey: string) => Promise<unknown>
  readonly hint?: (error: ApiFailure) => ComponentChildren
  readonly actions: (busy: boolean) => ComponentChildren
  readonly children: ComponentChildren
}) => {
  const submission = useSubmit()
  return (
    <form
      class={props.class === undefined ? "card form" : `card form ${props.class}`}
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault()
        const form = e.currentTarget
        submission.submit((key) => props.onSubmit(form, key))
      }}
    >
      <h2>{props.title ?? props.label}</h2>
      {props.children}
      {submission.error === undefined ? null : <ErrorBox error={submission.error} hint={props.hint?.(submission.error)} />}
      {props.actions(submission.busy)}
    </form>
  )
}

/** A form's field values: `bind(name)` gives an input of that name its value and keeps what is typed. */
export const useFields = <F extends object>(initial: F) => {
  const [values, setValues] = useState<F>(initial)
  const set = (patch: Partial<F>) => setValues((v) => ({ ...v, ...patch }))
  return {
    values,
    set,
    reset: () => setValues(initial),
    bind: (name: { [K in keyof F]: F[K] extends string ? K : never }[keyof F] & string) => ({
      name,
      value: values[name] as string,
      onInput: (e: JSX.TargetedEvent<HTMLInputElement | HTMLTextAreaElement>) => set({ [name]: e.currentTarget.value } as Partial<F>)
    })
  }
}

/** A checkbox named `name`, with its label after it. */
export const Check = (props: {
  readonly name: string
  readonly checked: boolean
  readonly onChange: (checked: boolean) => void
  readonly children: ComponentChildren
}) => (
  <label class="check">
    <input type="checkbox" name={props.name} checked={props.checked} onChange={(e) => props.onChange(e.currentTarget.checked)} />
    {props.children}
  </label>
)

/** Checkboxes named `name`, one per option: which of the options are chosen. */
export const Checks = <A extends string>(props: {
  readonly name: string
  readonly options: ReadonlyArray<A>
  readonly chosen: ReadonlyArray<A>
  readonly onChange: (chosen: ReadonlyArray<A>) => void
  readonly label?: (option: A) => ComponentChildren
}) => (
  <>
    {props.options.map((option) => (
      <label key={option} class="check">
        <input
          type="checkbox"
          name={props.name}
          value={option}
          checked={props.chosen.includes(option)}
          onChange={(e) =>
            props.onChange(e.currentTarget.checked ? [...props.chosen, option] : props.chosen.filter((x) => x !== option))}
        />
        {props.label === undefined ? option : props.label(option)}
      </label>
    ))}
  </>
)

/** A select of `options` (shown by `label`) after a first choice of none, `""`, shown as `none`. */
export const Select = <A extends string>(props: {
  readonly name: string
  readonly value: string
  readonly none: string
  readonly options: ReadonlyArray<A>
  readonly label?: (option: A) => string
  readonly onChange: (event: JSX.TargetedEvent<HTMLSelectElement>) => void
}) => (
  <select name={props.name} value={props.value} onChange={props.onChange}>
    <option value="">{props.none}</option>
    {props.options.map((option) => <option key={option} value={option}>{props.label === undefined ? option : props.label(option)}</option>)}
  </select>
)

/**
 * A search box applied on Enter or when it loses focus (`onCommit`, with its text trimmed). What is typed is its own
 * state until then, so a view that renders again meanwhile (a poll) does not put the applied `value` back over it;
 * a new applied value (filters cleared) replaces it.
 */
export const SearchInput = (props: {
  readonly name: string
  readonly value: string
  readonly onCommit: (value: string) => void
  readonly placeholder?: string
  readonly maxLength?: number
}) => {
  const [draft, setDraft] = useState(props.value)
  useEffect(() => setDraft(props.value), [props.value])
  return (
    <input
      type="search"
      name={props.name}
      placeholder={props.placeholder}
      maxLength={props.maxLength}
      value={draft}
      onInput={(event) => setDraft(event.currentTarget.value)}
      onChange={(event) => props.onCommit(event.currentTarget.value.trim())}
    />
  )
}
