/**
 * The playground (a chunk of its own, loaded on its first use): start any generation from the dashboard. The forms
 * come from the API's OpenAPI document (`playground/schema.ts`: the contract's request Schemas as JSON Schema), so
 * every endpoint and model has one without a form written for it. The price and the effective input come from the
 * endpoint's estimate as the form changes; a submit sends an `Idempotency-Key` that stays the same while the form
 * does (a double click, or a retry of a lost answer, is one task and one charge); the task is then watched live on
 * its event stream, its result previewed, and it can be run again (a new key) or retried.
 *
 * The requests go through `@mediagate/client`, the dependency-free client, with the signed-in key (`client.ts`).
 */
import type { Mediagate, Task } from "@mediagate/client"
import { useEffect, useRef, useState } from "preact/hooks"
import { answerLost, ApiFailure, idempotencyKey, toFailure } from "../requests.js"
import { keyCall } from "../client.js"
import { apiBaseUrl } from "../session.js"
import { ActionButton, Card, ErrorBox, Field, Link, Status, useSubmit, ViewHeader } from "../components.js"
import { bytes, money } from "../format.js"
import { retryableStatuses, terminalStatuses } from "../generated/catalog.js"
import {
  bodyOf,
  type EndpointForm,
  endpointsOf,
  type FormField,
  type FormValues,
  type OpenApiDocument,
  probeOf,
  shown
} from "../playground/schema.js"
import { current, navigate } from "../router.js"
import { Preview } from "./Preview.js"


/** The forms of the API's endpoints: its OpenAPI document, read once. */
let forms: Promise<ReadonlyArray<EndpointForm>> | undefined
const loadForms = () =>
  forms ??= fetch(`${apiBaseUrl}/api/v1/openapi.json`).then(async (response) => {
    if (!response.ok) throw new ApiFailure(`The server answered ${response.status}`, "HTTP_ERROR", response.status)
    return endpointsOf(await response.json() as OpenApiDocument)
  }).catch((error: unknown) => {
    forms = undefined
    throw toFailure(error)
  })

/** The playground view: the endpoint and model from the address (`?endpoint=vendor3/text-to-video&model=…`). */
export const Playground = () => {
  const [loaded, setLoaded] = useState<ReadonlyArray<EndpointForm> | ApiFailure | undefined>(undefined)
  useEffect(() => {
    loadForms().then(setLoaded, (error: unknown) => setLoaded(toFailure(error)))
  }, [])
  return (
    <section>
      <ViewHeader title="Playground">
        <span class="muted">Every generation endpoint, from the API's own schema</span>
      </ViewHeader>
      {loaded === undefined
        ? <div class="loading" aria-live="polite">Loading…</div>
        : loaded instanceof ApiFailure
        ? <ErrorBox error={loaded} />
        : <PlaygroundForm forms={loaded} />}
    </section>
  )
}

type Estimate = Awaited<ReturnType<Mediagate["estimate"]>>

/** What the price box says: nothing yet, the fields to fill, the estimate, or the API's refusal. */
type Pricing =
  | { readonly _tag: "Waiting" }
  | {
    readonly _tag: "Incomplete"
    readonly messages: Readonly<Record<string, string>>
    /** The model's defaults of the unset fields, from an estimate with stand-ins for the missing required ones. */
    readonly defaults?: Readonly<Record<string, unknown>> | undefined
  }
  | { readonly _tag: "Priced"; readonly estimate: Estimate }
  | { readonly _tag: "Refused"; readonly failure: ApiFailure }

const PlaygroundForm = (props: { readonly forms: ReadonlyArray<EndpointForm> }) => {
  const query = current().query
  const [endpoint, setEndpoint] = useState(() =>
    props.forms.find((form) => form.endpoint === query.get("endpoint"))?.endpoint ?? props.forms[0]?.endpoint ?? ""
  )
  const form = props.forms.find((f) => f.endpoint === endpoint)
  const [model, setModel] = useState(() => {
    const asked = query.get("model")
    return asked !== null && form?.models.includes(asked) === true ? asked : form?.models[0] ?? ""
  })
  const [values, setValues] = useState<FormValues>({})
  const [pricing, setPricing] = useState<Pricing>({ _tag: "Waiting" })
  const [showAll, setShowAll] = useState(false)
  const [run, setRun] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<ApiFailure | undefined>(undefined)
  // one intent per form content: the same key until the form changes or "Run again" asks for a new task
  const intent = useRef<string | undefined>(undefined)
  const content = JSON.stringify([endpoint, model, values])
  useEffect(() => {
    intent.current = undefined
  }, [content])

  // the price and the effective input, asked again a moment after the form stops changing
  useEffect(() => {
    if (form === undefined) return
    const body = bodyOf(form, model, values)
    let current = true
    const ask = (f: () => void) => setTimeout(f, 250)
    let timer: ReturnType<typeof setTimeout> | undefined
    if (body._tag === "Invalid") {
      const messages = body.messages
      setPricing({ _tag: "Incomplete", messages })
      // the model's defaults before the required fields are filled: an estimate with stand-ins for them
      const probe = probeOf(form, model, values)
      if (probe !== undefined) {
        timer = ask(() =>
          keyCall((client) => client.estimate(endpoint as never, probe as never)).then(
            (estimate) => current && setPricing({ _tag: "Incomplete", messages, defaults: estimate.input }),
            () => undefined
          )
        )
      }
    } else {
      timer = ask(() =>
        keyCall((client) => client.estimate(endpoint as never, body.body as never)).then(
          (estimate) => current && setPricing({ _tag: "Priced", estimate }),
          (error: unknown) => current && setPricing({ _tag: "Refused", failure: toFailure(error) })
        )
      )
    }
    return () => {
      current = false
      clearTimeout(timer)
    }
  }, [content])

  if (form === undefined) return <p>This server has no generation endpoint.</p>

  const choose = (next: string) => {
    const nextForm = props.forms.find((f) => f.endpoint === next)
    const nextModel = nextForm?.models[0] ?? ""
    setEndpoint(next)
    setModel(nextModel)
    setValues({})
    setShowAll(false)
    navigate(`/playground?${new URLSearchParams({ endpoint: next, model: nextModel })}`, { replace: true })
  }
  const submit = (again: boolean) => {
    if (busy) return
    const body = bodyOf(form, model, values)
    if (body._tag === "Invalid") {
      setShowAll(true)
      return
    }
    if (again) intent.current = undefined
    const key = intent.current ??= idempotencyKey()
    setBusy(true)
    setFailure(undefined)
    keyCall((client) => client.create(endpoint as never, body.body as never, { idempotencyKey: key })).then(
      (ack) => setRun(ack.id),
      (error: unknown) => {
        const failed = toFailure(error)
        // an answer lost on the way: the next click asks for the same task
        if (!answerLost(failed)) intent.current = undefined
        setFailure(failed)
      }
    ).finally(() => setBusy(false))
  }
  const estimate = pricing._tag === "Priced" ? pricing.estimate : undefined
  const messages = pricing._tag === "Incomplete" ? pricing.messages : {}
  // each unset field's effective default: from the estimate, or from the stand-in estimate (the fields it filled
  // in excepted)
  const effective = (field: FormField): unknown =>
    estimate !== undefined
      ? estimate.input[field.name]
      : pricing._tag === "Incomplete" && !field.required
      ? pricing.defaults?.[field.name]
      : undefined
  return (
    <div class="playground">
      <form
        class="card form"
        aria-label="Generation"
        onSubmit={(e) => {
          e.preventDefault()
          submit(false)
        }}
      >
        <div class="row">
          <Field label="Endpoint">
            <select name="endpoint" value={endpoint} onChange={(e) => choose(e.currentTarget.value)}>
              {props.forms.map((f) => <option key={f.endpoint} value={f.endpoint}>{f.endpoint}</option>)}
            </select>
          </Field>
          <Field label="Model">
            <select
              name="model"
              value={model}
              onChange={(e) => {
                setModel(e.currentTarget.value)
                navigate(`/playground?${new URLSearchParams({ endpoint, model: e.currentTarget.value })}`, {
                  replace: true
                })
              }}
            >
              {form.models.map((m) => <option key={m} value={m}>{m}</option>)}
            </select>
          </Field>
        </div>
        {form.description === undefined ? null : <p class="muted">{form.description}</p>}
        {form.fields.map((field) => (
          <InputField
            key={`${endpoint}:${field.name}`}
            field={field}
            value={values[field.name] ?? ""}
            effective={effective(field)}
            message={messages[field.name] !== undefined && (showAll || (values[field.name] ?? "") !== "")
              ? messages[field.name]
              : undefined}
            onChange={(value) => setValues((v) => ({ ...v, [field.name]: value }))}
          />
        ))}
        <PriceBox pricing={pricing} />
        {failure === undefined ? null : <ErrorBox error={failure} />}
        <div class="row">
          <button type="submit" class="primary" disabled={busy}>{busy ? "Starting…" : "Generate"}</button>
          {run === undefined ? null : (
            <button type="button" disabled={busy} onClick={() => submit(true)}>Run again (a new task)</button>
          )}
        </div>
      </form>
      {run === undefined ? null : <LiveTask key={run} id={run} onRetried={setRun} />}
    </div>
  )
}

/** The price box: what a submit would cost, or why it cannot be sent yet. */
const PriceBox = (props: { readonly pricing: Pricing }) => {
  const { pricing } = props
  switch (pricing._tag) {
    case "Waiting":
      return <p class="price muted" aria-live="polite">Working out the price…</p>
    case "Incomplete":
      return <p class="price muted" aria-live="polite">Fill in the required fields to see the price.</p>
    case "Refused":
      return (
        <p class="price error-text" role="alert">
          <span class="code">{pricing.failure.code}</span> {pricing.failure.message}
        </p>
      )
    case "Priced": {
      const { estimate } = pricing
      return (
        <p class="price" aria-live="polite" data-testid="price">
          <strong>{money(estimate.price)}</strong>
          {estimate.price !== estimate.live_price ? ` (test key: free; ${money(estimate.live_price)} live)` : ""}
          {` · about ${estimate.estimated_seconds} s`}
        </p>
      )
    }
  }
}

/** A file read as a data URI. */
const dataUri = (file: File): Promise<string> =>
  new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error)
    reader.readAsDataURL(file)
  })

/** One input field, edited by its kind, with its rules' help, its effective default and its message. */
const InputField = (props: {
  readonly field: FormField
  readonly value: string
  readonly effective: unknown
  readonly message: string | undefined
  readonly onChange: (value: string) => void
}) => {
  const { field, value } = props
  const id = `field-${field.name}`
  const placeholder = shown(props.effective)
  const onInput = (e: { currentTarget: { value: string } }) => props.onChange(e.currentTarget.value)
  const schema = field.schema
  const upload = (files: FileList | null, append: boolean) => {
    if (files === null || files.length === 0) return
    Promise.all([...files].map(dataUri)).then((uris) =>
      props.onChange(append && value.trim() !== "" ? `${value.trim()}\n${uris.join("\n")}` : uris.join("\n"))
    )
  }
  const editor = (() => {
    switch (field.kind) {
      case "select":
        return (
          <select id={id} name={field.name} value={value} onChange={onInput}>
            <option value="">{field.required ? "Choose…" : `Default${placeholder === "" ? "" : ` (${placeholder})`}`}</option>
            {field.options.map((option) => <option key={option} value={option}>{option}</option>)}
          </select>
        )
      case "boolean":
        return (
          <select id={id} name={field.name} value={value} onChange={onInput}>
            <option value="">{`Default${placeholder === "" ? "" : ` (${placeholder})`}`}</option>
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        )
      case "choice":
        return (
          <>
            <input id={id} name={field.name} list={`${id}-options`} value={value} placeholder={placeholder} onInput={onInput} />
            <datalist id={`${id}-options`}>{field.options.map((option) => <option key={option} value={option} />)}</datalist>
          </>
        )
      case "number":
        return (
          <input
            id={id}
            name={field.name}
            type="number"
            inputMode="decimal"
            min={schema.minimum}
            max={schema.maximum}
            step={schema.multipleOf ?? (schema.type === "integer" ? 1 : "any")}
            value={value}
            placeholder={placeholder}
            onInput={onInput}
          />
        )
      case "long-text":
      case "json":
        return <textarea id={id} name={field.name} rows={field.kind === "json" ? 3 : 4} value={value} placeholder={placeholder} onInput={onInput} />
      case "media":
        return value.startsWith("data:")
          ? (
            <div class="row">
              <span data-testid={`${field.name}-file`}>Uploaded file ({bytes(Math.floor(value.length * 3 / 4))})</span>
              <button type="button" onClick={() => props.onChange("")}>Remove</button>
            </div>
          )
          : (
            <div class="row">
              <input id={id} name={field.name} value={value} placeholder={placeholder || "https://…"} onInput={onInput} />
              <input type="file" aria-label={`Upload ${field.name}`} onChange={(e) => upload(e.currentTarget.files, false)} />
            </div>
          )
      case "list":
      case "media-list":
        return (
          <div class="stack">
            <textarea id={id} name={field.name} rows={3} value={value} placeholder={placeholder || "One per line"} onInput={onInput} />
            {field.kind === "list"
              ? null
              : <input type="file" multiple aria-label={`Upload ${field.name}`} onChange={(e) => upload(e.currentTarget.files, true)} />}
          </div>
        )
      default:
        return <input id={id} name={field.name} value={value} placeholder={placeholder} onInput={onInput} />
    }
  })()
  return (
    <div class={props.message === undefined ? "field" : "field invalid"} data-field={field.name}>
      <label class="label" for={id}>{field.name}{field.required ? " (required)" : ""}</label>
      {editor}
      {field.help === undefined ? null : <span class="help">{field.help}</span>}
      {props.message === undefined ? null : <span class="error-text" role="alert">{props.message}</span>}
    </div>
  )
}

/** A task started here, watched live: its state, progress, place and log lines, then its result or error. */
const LiveTask = (props: { readonly id: string; readonly onRetried: (id: string) => void }) => {
  const [task, setTask] = useState<Task | undefined>(undefined)
  const [failure, setFailure] = useState<ApiFailure | undefined>(undefined)
  const retry = useSubmit()
  useEffect(() => {
    const controller = new AbortController()
    keyCall((client) =>
      client.waitFor(props.id, { signal: controller.signal, onProgress: setTask, onQueueUpdate: setTask })
    ).then(
      setTask,
      (error: unknown) => {
        if (!controller.signal.aborted) setFailure(toFailure(error))
      }
    )
    return () => controller.abort()
  }, [props.id])
  const place = task?.queue_position
  return (
    <Card title="Task" class="live-task">
      <p>
        <Link to={`/tasks/${props.id}`} class="mono">{props.id}</Link>{" "}
        {task === undefined ? <span class="muted">connecting…</span> : <Status status={task.status} />}
      </p>
      {task === undefined || (terminalStatuses as ReadonlyArray<string>).includes(task.status) ? null : (
        <>
          <progress max={100} value={task.progress} aria-label="Progress">{task.progress}%</progress>
          <span class="muted small" data-testid="live-state">
            {task.progress}%
            {place?.account != null ? ` · number ${place.account} in your queue` : ""}
            {place?.upstream != null ? ` · number ${place.upstream} at the upstream` : ""}
          </span>
        </>
      )}
      {task?.logs === undefined || task.logs.length === 0
        ? null
        : <pre class="json logs" aria-label="Upstream log">{task.logs.join("\n")}</pre>}
      {task?.error === undefined ? null : (
        <p class="error-text">
          <span class="code">{task.error.code}</span> {task.error.message}
        </p>
      )}
      {task?.result === undefined || task.result.length === 0 ? null : (
        <div class="previews">
          {task.result.map((item, index) => <Preview key={item.url} item={item} type={task.type} index={index} />)}
        </div>
      )}
      {task !== undefined && (retryableStatuses as ReadonlyArray<string>).includes(task.status)
        ? (
          <ActionButton
            submission={retry}
            run={(key) =>
              keyCall((client) => client.tasks.retry(props.id, { idempotencyKey: key })).then((ack) =>
                props.onRetried(ack.id)
              )}
          >
            Retry (charged again)
          </ActionButton>
        )
        : null}
      {failure === undefined ? null : <ErrorBox error={failure} />}
      {retry.error === undefined ? null : <ErrorBox error={retry.error} />}
    </Card>
  )
}
