/**
 * The operator's upstream channels (`/admin/v1/channels`, docs/channels.md): the upstreams each family's live tasks
 * are routed to, with their routing (families, models, priority, weight, concurrency), their health (breaker,
 * consecutive failures, last error, tasks in flight) and their state (enabled, or disabled and why). Channels are
 * created, changed, enabled/disabled and deleted here; the environment's default channels (`default:*`) are shown
 * read-only. Credentials are write-only: after saving, only their hint (the last four characters) is shown.
 *
 * @since 0.1.0
 */
import { Catalog, Channel } from "@mediagate/contract"
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { type ApiFailure, call } from "../api.js"
import { Check, Checks, ConfirmButton, Empty, ErrorBox, Field, FormCard, Show, Table, useFields, useLoad, useSubmit, ViewHeader } from "../components.js"
import { money, time, timeZone } from "../format.js"

type ChannelView = Channel.Channel
type Family = Catalog.TaskFamily

/** Whether a channel is one of the environment's default channels (read-only, never stored). */
export const isDefaultChannel = (channel: { readonly id: string }): boolean =>
  channel.id === "default" || channel.id.startsWith("default:")

const breakerLabel: Record<Channel.BreakerState, string> = { closed: "closed", open: "open", half_open: "half-open" }

const breakerHelp: Record<Channel.BreakerState, string> = {
  closed: "healthy: receives tasks",
  open: "failing: skipped until a probe succeeds",
  half_open: "probing: one trial task at a time"
}

/** A breaker state as a badge: a coloured dot and the state in words. */
const Breaker = (props: { readonly state: Channel.BreakerState }) => (
  <span class={`breaker breaker-${props.state}`} data-breaker={props.state} title={breakerHelp[props.state]}>
    <span class="dot" aria-hidden="true" />
    {breakerLabel[props.state]}
  </span>
)

/** The models of a channel's form: one per line or separated by commas. */
const parseModels = (text: string): Array<string> => [...new Set(text.split(/[\s,]+/).filter((m) => m !== ""))]

/** What the operator typed as an integer, or `undefined` when empty. */
const intOrUndefined = (text: string): number | undefined => text.trim() === "" ? undefined : Number(text)

/** The hint of an API failure on this view. */
const failureHint = (error: ApiFailure) =>
  error.code === "CHANNEL_IN_USE"
    ? "Disabling it stops new tasks from being routed to it; its “In flight” column shows when it can be deleted."
    : error.status === 404 && error.code !== "CHANNEL_NOT_FOUND"
    ? "This server does not offer the channels API (is it an older version?)."
    : undefined

interface FormState {
  readonly name: string
  readonly transport: Channel.ChannelTransport
  readonly families: ReadonlyArray<Family>
  readonly models: string
  readonly priority: string
  readonly weight: string
  readonly concurrency: string
  readonly base_url: string
  readonly api_key: string
  /** The settings beyond base_url and timeout_ms (mapping, workflows, ...) as JSON text. */
  readonly advanced: string
  readonly enabled: boolean
}

/** What each transport is, for the form's help. */
const transportHelp: Record<Channel.ChannelTransport, string> = {
  simulated: "the built-in simulator",
  relay: "another service speaking this API",
  fal: "fal's queue (base URL default https://queue.fal.run)",
  replicate: "Replicate's predictions (base URL default https://api.replicate.com)",
  comfyui: "a self-hosted ComfyUI (workflows in the advanced settings)",
  openai: "OpenAI-compatible image and video endpoints of a gateway"
}

/** The transports whose base URL may be left out, and those that need no API key. */
const optionalBaseUrl = new Set<Channel.ChannelTransport>(["fal", "replicate"])
const optionalKey = new Set<Channel.ChannelTransport>(["comfyui"])

/** The settings shown as JSON in the form (all but the fields the form has). */
const advancedOf = (settings: Channel.ChannelSettings): string => {
  const { base_url: _base, timeout_ms: _timeout, ...rest } = settings
  return Object.keys(rest).length === 0 ? "" : JSON.stringify(rest, null, 2)
}

/** The advanced settings' JSON text as an object, or a message saying why it is not one. */
const parseAdvanced = (text: string): Record<string, unknown> | string => {
  if (text.trim() === "") return {}
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value as Record<string, unknown>
      : "Advanced settings: must be a JSON object"
  } catch (error) {
    return `Advanced settings: not JSON (${error instanceof Error ? error.message : String(error)})`
  }
}

const blank: FormState = {
  name: "",
  transport: "simulated",
  families: [],
  models: "",
  priority: "0",
  weight: "1",
  concurrency: "0",
  base_url: "",
  api_key: "",
  advanced: "",
  enabled: true
}

const fromChannel = (channel: ChannelView): FormState => ({
  name: channel.name,
  transport: channel.transport,
  families: channel.families,
  models: channel.models.join("\n"),
  priority: String(channel.priority),
  weight: String(channel.weight),
  concurrency: String(channel.concurrency),
  base_url: channel.settings.base_url ?? "",
  api_key: "",
  advanced: advancedOf(channel.settings),
  enabled: channel.enabled
})

/** The create and edit form: the same fields; on edit the transport is fixed and the key optional. */
const ChannelForm = (props: {
  readonly editing: ChannelView | undefined
  readonly onSaved: (channel: ChannelView) => void
  readonly onCancel: (() => void) | undefined
}) => {
  const editing = props.editing
  const fields = useFields<FormState>(editing === undefined ? blank : fromChannel(editing))
  const state = fields.values
  const first = useRef<HTMLInputElement>(null)
  useEffect(() => {
    if (editing !== undefined) {
      first.current?.scrollIntoView({ block: "center" })
      first.current?.focus()
    }
  }, [editing?.id])
  const remote = state.transport !== "simulated"
  const [advancedError, setAdvancedError] = useState<string | undefined>(undefined)
  const familyModels = state.families.flatMap((f) => Catalog.models[f])
  const submit = () => {
    const models = parseModels(state.models)
    const routing = {
      families: state.families,
      models,
      ...(intOrUndefined(state.priority) === undefined ? {} : { priority: Number(state.priority) }),
      ...(intOrUndefined(state.weight) === undefined ? {} : { weight: Number(state.weight) }),
      ...(intOrUndefined(state.concurrency) === undefined ? {} : { concurrency: Number(state.concurrency) }),
      enabled: state.enabled
    }
    const credentials = remote && state.api_key !== "" ? { credentials: { api_key: state.api_key } } : {}
    const advanced = parseAdvanced(state.advanced)
    setAdvancedError(typeof advanced === "string" ? advanced : undefined)
    if (typeof advanced === "string") return Promise.resolve()
    const baseUrl = state.base_url.trim() === "" ? {} : { base_url: state.base_url.trim() }
    // the JSON's fields are checked by the API (400 names the field)
    const settings = { ...advanced, ...baseUrl } as Channel.ChannelSettings
    if (editing === undefined) {
      return call("admin", (api) =>
        api.channels.create({
          payload: {
            name: state.name.trim(),
            transport: state.transport,
            ...(remote ? { settings } : {}),
            ...credentials,
            ...routing
          }
        })).then((channel) => {
          fields.reset()
          props.onSaved(channel)
        })
    }
    return call("admin", (api) =>
      api.channels.update({
        path: { id: editing.id },
        payload: {
          name: state.name.trim(),
          ...(remote ? { settings: { ...editing.settings, ...settings } } : {}),
          ...credentials,
          ...routing
        }
      })).then((channel) => {
        fields.set({ api_key: "" })
        props.onSaved(channel)
      })
  }
  return (
    <FormCard
      label={editing === undefined ? "Create a channel" : "Edit the channel"}
      title={editing === undefined ? "Create a channel" : <>Edit <span class="break">“{editing.name}”</span></>}
      class="channel-form"
      onSubmit={submit}
      hint={failureHint}
      actions={(busy) => (
        <div class="row">
          <button type="submit" class="primary" disabled={busy || state.families.length === 0}>
            {editing === undefined ? "Create channel" : "Save changes"}
          </button>
          {props.onCancel === undefined ? null : <button type="button" onClick={props.onCancel}>Cancel</button>}
          {state.families.length === 0 ? <span class="muted small">Choose at least one family.</span> : null}
        </div>
      )}
    >
      {editing === undefined ? null : <p class="muted small mono">{editing.id}</p>}
      <div class="grid2">
        <Field label="Name">
          <input ref={first} type="text" required maxLength={200} {...fields.bind("name")} />
        </Field>
        <Field
          label="Transport"
          help={editing === undefined ? transportHelp[state.transport] : "The transport of a channel cannot change: create another channel"}
        >
          <select
            name="transport"
            value={state.transport}
            disabled={editing !== undefined}
            onChange={(e) => {
              const chosen = Channel.channelTransports.find((transport) => transport === e.currentTarget.value)
              fields.set({ transport: chosen ?? "simulated" })
            }}
          >
            {Channel.channelTransports.map((transport) => <option value={transport}>{transport}</option>)}
          </select>
        </Field>
      </div>
      <fieldset>
        <legend>Families served (at least one)</legend>
        <div class="families">
          <Checks name="family" options={Catalog.taskFamilies} chosen={state.families} onChange={(families) => fields.set({ families })} />
        </div>
      </fieldset>
      <Field
        label="Models (optional)"
        help={`One per line or separated by commas; empty: every model of the families${familyModels.length === 0 ? "" : ` (${familyModels.join(", ")})`}`}
      >
        <textarea rows={2} spellcheck={false} {...fields.bind("models")} />
      </Field>
      <div class="grid3">
        <Field label="Priority" help="Higher first (−1000 to 1000)">
          <input type="number" min="-1000" max="1000" step="1" required {...fields.bind("priority")} />
        </Field>
        <Field label="Weight" help="Share among equals (1 to 1000)">
          <input type="number" min="1" max="1000" step="1" required {...fields.bind("weight")} />
        </Field>
        <Field label="Concurrency" help="Tasks in flight at once, all nodes; 0: no limit">
          <input type="number" min="0" max="1000000" step="1" required {...fields.bind("concurrency")} />
        </Field>
      </div>
      {remote
        ? (
          <fieldset>
            <legend>Upstream ({state.transport})</legend>
            <Field
              label="Base URL"
              help={optionalBaseUrl.has(state.transport) ? "Leave empty for the public API" : "e.g. https://gateway.example.com"}
            >
              <input
                type="url"
                required={!optionalBaseUrl.has(state.transport)}
                maxLength={2048}
                spellcheck={false}
                {...fields.bind("base_url")}
              />
            </Field>
            <Field
              label="API key"
              help={editing === undefined
                ? "Stored encrypted; never shown again after saving (only its last four characters)"
                : `Leave empty to keep the stored key${editing.credentials_hint === null ? "" : ` (${editing.credentials_hint})`}`}
            >
              <input
                type="password"
                autoComplete="new-password"
                spellcheck={false}
                required={!optionalKey.has(state.transport) && (editing === undefined || !editing.credentials_set)}
                maxLength={4096}
                {...fields.bind("api_key")}
              />
            </Field>
            <Field
              label="Advanced settings (JSON, optional)"
              help={"mapping per model { target, input?, output? } (JSONata), workflows (comfyui), result_hosts, " +
                "poll_interval_ms, poll_rate, callbacks, cost_per_second, max_result_bytes: docs/channels.md"}
            >
              <textarea rows={4} spellcheck={false} class="mono" {...fields.bind("advanced")} />
            </Field>
            {advancedError === undefined ? null : <p class="error small" role="alert">{advancedError}</p>}
          </fieldset>
        )
        : null}
      <Check name="enabled" checked={state.enabled} onChange={(enabled) => fields.set({ enabled })}>Enabled (receives tasks)</Check>
    </FormCard>
  )
}

/** A cell of the channel table, labelled for the narrow layout (one card per channel). */
const Cell = (props: {
  readonly label: string
  readonly class?: string
  readonly "data-testid"?: string
  readonly children: ComponentChildren
}) => (
  <td data-label={props.label} class={props.class} data-testid={props["data-testid"]}>
    <div class="cell">{props.children}</div>
  </td>
)

/** One channel's row. */
const ChannelRow = (props: {
  readonly channel: ChannelView
  readonly editing: boolean
  readonly onEdit: () => void
  readonly act: (f: () => Promise<unknown>) => Promise<void>
}) => {
  const { channel } = props
  const readOnly = isDefaultChannel(channel)
  const health = channel.health
  return (
    <tr data-channel={channel.id} class={channel.enabled ? "" : "disabled"}>
      <Cell label="Channel">
        <strong class="channel-name">{channel.name}</strong>
        <div class="muted mono small">{channel.id}</div>
        {readOnly ? <span class="tag" title="Configured by MEDIAGATE_UPSTREAM_* / MEDIAGATE_RELAY_*: read-only">from the environment</span> : null}
      </Cell>
      <Cell label="Transport">
        {channel.transport}
        {channel.settings.base_url === undefined ? null : <div class="muted small break">{channel.settings.base_url}</div>}
        {channel.credentials_set
          ? <div class="muted small">key <span class="mono" data-testid="credentials-hint">{channel.credentials_hint ?? "set"}</span></div>
          : null}
      </Cell>
      <Cell label="Serves">
        {channel.families.join(", ")}
        <div class="muted small break">{channel.models.length === 0 ? "every model" : channel.models.join(", ")}</div>
      </Cell>
      <Cell label="Priority" class="num">{channel.priority}</Cell>
      <Cell label="Weight" class="num">{channel.weight}</Cell>
      <Cell label="Concurrency" class="num">{channel.concurrency === 0 ? <span class="muted">no limit</span> : channel.concurrency}</Cell>
      <Cell label="In flight" class="num" data-testid="in-flight">{health.in_flight}</Cell>
      <Cell label="Health" class="health">
        <div class="row">
          <Breaker state={health.breaker} />
          <span class={health.consecutive_failures === 0 ? "muted small" : "small"} data-testid="failures">
            {health.consecutive_failures} consecutive {health.consecutive_failures === 1 ? "failure" : "failures"}
          </span>
        </div>
        {health.opened_at === null ? null : <div class="muted small">opened {time(health.opened_at)}</div>}
        {health.last_error === null ? null : <div class="last-error excerpt" title="The last failure this node saw">{health.last_error}</div>}
      </Cell>
      <Cell label="State">
        <span class={`state ${channel.enabled ? "state-enabled" : "state-disabled"}`} data-enabled={String(channel.enabled)}>
          {channel.enabled ? "enabled" : "disabled"}
        </span>
        {channel.disabled_reason === null ? null : <div class="disabled-reason" role="note">{channel.disabled_reason}</div>}
      </Cell>
      <Cell label="Actions">
        {readOnly ? <span class="muted small">read-only</span> : (
          <div class="actions">
            <button type="button" onClick={props.onEdit} aria-pressed={props.editing} aria-label={`Edit ${channel.name}`}>Edit</button>
            <button
              type="button"
              onClick={() =>
                props.act(() => call("admin", (api) => api.channels.update({ path: { id: channel.id }, payload: { enabled: !channel.enabled } })))}
            >
              {channel.enabled ? "Disable" : "Enable"}
            </button>
            <ConfirmButton
              label="Delete"
              confirm="Confirm delete"
              onConfirm={() => props.act(() => call("admin", (api) => api.channels.delete({ path: { id: channel.id } })))}
            />
          </div>
        )}
      </Cell>
    </tr>
  )
}

/** The channel list, its health refreshed every 5 s, with the create and edit forms. */
export const ChannelList = () => {
  const loaded = useLoad(() => call("admin", (api) => api.channels.list()), [], { pollMs: 5000 })
  const [editing, setEditing] = useState<string | undefined>(undefined)
  const [saved, setSaved] = useState<ChannelView | undefined>(undefined)
  /** Changes made on this page: the usage report is read again after each. */
  const [changes, setChanges] = useState(0)
  const action = useSubmit()
  const act = (f: () => Promise<unknown>) =>
    action.submit(() => f().then(() => {
      setChanges((n) => n + 1)
      loaded.reload()
    }))
  const edited = editing === undefined ? undefined : loaded.value?.find((c) => c.id === editing)
  return (
    <section>
      <ViewHeader title="Channels">
        <span class="muted">Health refreshed every 5 s · times in {timeZone}</span>
      </ViewHeader>
      <p class="muted small">
        A task goes to the highest-priority healthy channel that serves its model, weighted among channels of equal
        priority; a retryable failure moves it to the next one. The breaker and failures are this node's view; tasks
        in flight count every node.
      </p>
      {saved === undefined ? null : (
        <div class="notice" role="status">
          Saved “{saved.name}”.
          {saved.credentials_set
            ? <> Its API key is stored encrypted and will not be shown again: <span class="mono" data-testid="saved-hint">{saved.credentials_hint ?? "set"}</span>.</>
            : null}{" "}
          <button type="button" class="link" onClick={() => setSaved(undefined)}>Dismiss</button>
        </div>
      )}
      {action.error === undefined ? null : <ErrorBox error={action.error} hint={failureHint(action.error)} />}
      <Show loaded={loaded} hint={failureHint}>
        {(channels) => {
          // in routing order: higher priority first, then the older channel
          const stored = channels.filter((c) => !isDefaultChannel(c)).sort((a, b) =>
            b.priority - a.priority || a.created_at.localeCompare(b.created_at)
          )
          return (
            <>
              {stored.length === 0 ? <Empty>No channels: every family runs on its default upstream.</Empty> : null}
              {channels.length === 0 ? null : (
                <Table
                  class="channels cards"
                  columns={[
                    "Channel",
                    "Transport",
                    "Serves",
                    ["Priority", "num"],
                    ["Weight", "num"],
                    ["Concurrency", "num"],
                    ["In flight", "num"],
                    "Health: breaker, failures, last error",
                    "State",
                    "Actions"
                  ]}
                >
                  {[...stored, ...channels.filter(isDefaultChannel)].map((channel) => (
                    <ChannelRow
                      key={channel.id}
                      channel={channel}
                      editing={channel.id === editing}
                      onEdit={() => {
                        action.clear()
                        setEditing(channel.id === editing ? undefined : channel.id)
                      }}
                      act={act}
                    />
                  ))}
                </Table>
              )}
            </>
          )
        }}
      </Show>
      <ChannelUsageTable changes={changes} />
      {/* the channel being edited, else a new one: a fresh form for each */}
      <ChannelForm
        key={edited?.id ?? ""}
        editing={edited}
        onSaved={(channel) => {
          if (edited !== undefined) setEditing(undefined)
          setSaved(channel)
          setChanges((n) => n + 1)
          loaded.reload()
        }}
        onCancel={edited === undefined ? undefined : () => setEditing(undefined)}
      />
    </section>
  )
}

/**
 * Charged against upstream cost per channel and model over the last 30 days (`GET /admin/v1/channels/usage`): read
 * every 30 s and after each change made on the page.
 */
const ChannelUsageTable = (props: { readonly changes: number }) => {
  const loaded = useLoad(() => call("admin", (api) => api.channels.usage({ urlParams: {} })), [props.changes], {
    pollMs: 30_000
  })
  return (
    <section class="channel-usage">
      <h3>Charged against upstream cost · last 30 days</h3>
      <p class="muted small">
        Ended live tasks per channel and model: what accounts were charged (net of refunds) and what the upstream
        reported the jobs cost (or ran, priced at the channel's cost per second). Accounts never see upstream cost.
      </p>
      <Show loaded={loaded} hint={failureHint}>
        {(rows) =>
          rows.length === 0 ? <Empty>No ended live task on a channel yet.</Empty> : (
            <Table
              class="usage"
              columns={[
                "Channel",
                "Model",
                ["Tasks", "num"],
                ["Charged", "num"],
                ["Upstream cost", "num"],
                ["Margin", "num"],
                ["Upstream seconds", "num"]
              ]}
            >
              {rows.map((row) => (
                <tr key={`${row.channel_id}/${row.model}`} data-usage={`${row.channel_id}/${row.model}`}>
                  <Cell label="Channel">
                    {row.channel_name ?? <span class="muted">deleted</span>}
                    <div class="muted mono small">{row.channel_id}{row.transport === null ? "" : ` · ${row.transport}`}</div>
                  </Cell>
                  <Cell label="Model" class="mono">{row.model}</Cell>
                  <Cell label="Tasks" class="num">
                    {row.tasks}
                    <div class="muted small">{row.succeeded} succeeded · {row.failed} failed</div>
                  </Cell>
                  <Cell label="Charged" class="num">{money(row.charged)}</Cell>
                  <Cell label="Upstream cost" class="num">
                    {row.reported === 0 && row.upstream_cost === 0 ? <span class="muted">not reported</span> : money(row.upstream_cost)}
                  </Cell>
                  <Cell label="Margin" class="num">{row.reported === 0 && row.upstream_cost === 0 ? "—" : money(row.margin)}</Cell>
                  <Cell label="Upstream seconds" class="num">{row.upstream_seconds}</Cell>
                </tr>
              ))}
            </Table>
          )}
      </Show>
    </section>
  )
}
