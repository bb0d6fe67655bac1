/**
 * Webhooks: register (the signing secret shown once), delete, send a signed test event, and each webhook's
 * deliveries with their attempts (status, duration, the start of the receiver's answer) and **replay**.
 */
import type { DeliveryWithAttempts, WebhookCreated, WebhookTestResult } from "@mediagate/client"
import { useState } from "preact/hooks"
import { keyCall } from "../client.js"
import { ActionButton, Checks, ConfirmButton, ErrorBox, Field, FormCard, Link, SecretOnce, Select, ShowList, ShowPage, Status, Table, useFields, useLoad, usePager, useSubmit, ViewHeader } from "../components.js"
import { time } from "../format.js"
import { deliveryStatuses, eventTypes } from "../generated/catalog.js"
import { current, navigate } from "../router.js"

type EventType = typeof eventTypes[number]

const CreateForm = (props: { readonly onCreated: (created: WebhookCreated) => void }) => {
  const fields = useFields({ url: "", description: "" })
  const { description, url } = fields.values
  const [events, setEvents] = useState<ReadonlyArray<EventType>>(["task.completed", "task.failed"])
  return (
    <FormCard
      label="Register a webhook"
      onSubmit={(_, key) =>
        keyCall((client) =>
          client.webhooks.create({
            url,
            events: [...events],
            ...(description === "" ? {} : { description })
          }, { idempotencyKey: key })
        ).then((created) => {
            fields.reset()
            props.onCreated(created)
          })}
      actions={(busy) => <button type="submit" class="primary" disabled={busy || events.length === 0}>Register</button>}
    >
      <Field label="URL" help="HTTPS in production; the receiver gets signed POSTs (docs/webhooks.md)">
        <input type="url" required {...fields.bind("url")} placeholder="https://example.com/hooks/mediagate" />
      </Field>
      <fieldset>
        <legend>Events</legend>
        <Checks name="events" options={eventTypes} chosen={events} onChange={setEvents} />
      </fieldset>
      <Field label="Description (optional)">
        <input type="text" maxLength={500} {...fields.bind("description")} />
      </Field>
    </FormCard>
  )
}

/** What a test event got: delivered or not, the receiver's status, how long it took, the error. */
/** A test event's outcome in one sentence: delivered or not, what the endpoint answered, how long it took. */
const testSentence = (result: WebhookTestResult): string => {
  const answered = result.statusCode === null ? undefined : `the endpoint answered HTTP ${result.statusCode}`
  if (result.delivered) return `The test event was delivered: ${answered ?? "the endpoint answered"} in ${result.durationMs} ms.`
  // the error of an answer that was not 2xx only repeats its status
  const why = answered === undefined
    ? result.error ?? "the endpoint did not answer"
    : result.error === null || result.error === `HTTP ${result.statusCode}`
    ? answered
    : `${answered} (${result.error})`
  return `The test event was not delivered: ${why}, after ${result.durationMs} ms.`
}

const TestResult = ({ result }: { readonly result: WebhookTestResult }) => (
  <div class={`test-result ${result.delivered ? "ok" : "bad"}`} role="status">{testSentence(result)}</div>
)

/** The webhook list. */
export const WebhookList = () => {
  const loaded = useLoad(() => keyCall((client) => client.webhooks.list()), [])
  const [secret, setSecret] = useState<WebhookCreated | undefined>(undefined)
  const [tested, setTested] = useState<Record<string, WebhookTestResult>>({})
  const action = useSubmit()
  return (
    <section>
      <ViewHeader title="Webhooks" />
      {secret === undefined ? null : (
        <SecretOnce title={`Signing secret of ${secret.url}`} value={secret.secret} onDone={() => setSecret(undefined)} />
      )}
      {action.error === undefined ? null : <ErrorBox error={action.error} />}
      <ShowList loaded={loaded} empty="No webhooks registered. Register one below to be told when tasks finish.">
        {(hooks) => (
          <Table columns={["URL", "Events", "Created", "Actions"]}>
            {hooks.map((hook) => (
              <tr key={hook.id} data-webhook={hook.id}>
                <td>
                  <Link to={`/webhooks/${hook.id}`} class="break">{hook.url}</Link>
                  {hook.description === null ? null : <div class="muted small">{hook.description}</div>}
                  {hook.enabled ? null : (
                    <div class="disabled-hook" data-disabled>
                      <span class="status status-failed">disabled</span> <span class="small">{hook.disabledReason}</span>
                    </div>
                  )}
                </td>
                <td>{hook.events.join(", ")}</td>
                <td>{time(hook.createdAt)}</td>
                <td class="actions">
                  {hook.enabled ? null : (
                    <ActionButton
                      submission={action}
                      run={() => keyCall((client) => client.webhooks.enable(hook.id)).then(loaded.reload)}
                    >
                      Enable
                    </ActionButton>
                  )}
                  <ActionButton
                    submission={action}
                    run={() =>
                      keyCall((client) => client.webhooks.test(hook.id)).then((result) =>
                        setTested((t) => ({ ...t, [hook.id]: result }))
                      )}
                  >
                    Send test event
                  </ActionButton>
                  <Link to={`/webhooks/${hook.id}`}>Deliveries</Link>
                  <ConfirmButton
                    label="Delete"
                    confirm="Confirm delete"
                    onConfirm={() => action.submit(() => keyCall((client) => client.webhooks.delete(hook.id)).then(loaded.reload))}
                  />
                  {tested[hook.id] === undefined ? null : <TestResult result={tested[hook.id]!} />}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </ShowList>
      <CreateForm
        onCreated={(created) => {
          setSecret(created)
          loaded.reload()
        }}
      />
    </section>
  )
}

/** The delivery state a value names (`?status=` of the page's address, a choice of the filter), if any. */
const stateOf = (value: string | null): typeof deliveryStatuses[number] | undefined =>
  deliveryStatuses.find((state) => state === value)

/**
 * One webhook's deliveries: a compact table (state, event, task, attempts, last answer, created) with a state filter
 * and replay; each row's attempts open below it.
 */
export const WebhookDeliveries = (props: { readonly id: string }) => {
  const pager = usePager()
  const [state, setState] = useState(() => stateOf(current().query.get("status")))
  const choose = (event: Event) => {
    const value = (event.currentTarget as HTMLSelectElement).value
    const next = stateOf(value)
    setState(next)
    // the address without the pager's page and cursors: the first page
    navigate(`/webhooks/${encodeURIComponent(props.id)}${next === undefined ? "" : `?status=${next}`}`, { replace: true })
  }
  const loaded = useLoad(
    () =>
      keyCall((client) =>
        client.webhooks.deliveries(props.id, { ...pager.params, ...(state === undefined ? {} : { status: state }) })
      ),
    [props.id, pager.cursor, state],
    { pollMs: 3000, poll: (page) => page.data.some((d) => d.status === "pending") }
  )
  const action = useSubmit()
  const [replayed, setReplayed] = useState<string | undefined>(undefined)
  return (
    <section>
      <ViewHeader title="Deliveries"><Link to="/webhooks">← Webhooks</Link></ViewHeader>
      <p class="muted mono">{props.id}</p>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <Field label="State">
          <Select name="status" value={state ?? ""} none="Any" options={deliveryStatuses} onChange={choose} />
        </Field>
      </form>
      {replayed === undefined ? null : <div class="notice" role="status">Replayed as a new delivery {replayed}.</div>}
      {action.error === undefined ? null : <ErrorBox error={action.error} />}
      <ShowPage
        loaded={loaded}
        pager={pager}
        empty={state === undefined
          ? "No deliveries yet: they appear when a task of this account finishes (or after a test event)."
          : `No ${state} deliveries.`}
      >
        {(deliveries) => (
          <Table
            class="deliveries cards"
            columns={["State", "Event", "Task", ["Attempts", "num"], "Last answer", "Created", ""]}
          >
            {deliveries.map((delivery) => (
              <DeliveryRow
                key={delivery.id}
                delivery={delivery}
                replay={() =>
                  keyCall((client) => client.webhooks.replay(props.id, delivery.id)).then((next) => {
                    setReplayed(next.id)
                    pager.reset()
                    loaded.reload()
                  })}
                action={action}
              />
            ))}
          </Table>
        )}
      </ShowPage>
    </section>
  )
}

/** A delivery's row, its last error and its attempts (a row below it, opened on demand). */
const DeliveryRow = (props: {
  readonly delivery: DeliveryWithAttempts
  readonly replay: () => Promise<void>
  readonly action: ReturnType<typeof useSubmit>
}) => {
  const { delivery } = props
  const [open, setOpen] = useState(false)
  const answer = delivery.last_status_code === null ? delivery.last_error ?? "—" : `HTTP ${delivery.last_status_code}`
  return (
    <>
      <tr data-delivery={delivery.id}>
        {/* each cell's content in one element: on a narrow screen a cell is a grid of its label and its content */}
        <td data-label="State"><div><Status status={delivery.status} /></div></td>
        <td data-label="Event">
          <div>{delivery.event_type} <span class="muted mono small">{delivery.event_id}</span></div>
        </td>
        <td data-label="Task" class="mono">
          <div>
            {delivery.task_id === null
              ? "—"
              : <Link to={`/tasks/${encodeURIComponent(delivery.task_id)}`}>{delivery.task_id}</Link>}
          </div>
        </td>
        <td data-label="Attempts" class="num">
          <div>
            {delivery.attempt_log.length === 0 ? delivery.attempts : (
              <button type="button" class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
                {delivery.attempts}
              </button>
            )}
          </div>
        </td>
        <td data-label="Last answer" title={delivery.last_error ?? undefined}>
          <div>
            {answer}
            {delivery.next_attempt_at === null ? null : <div class="muted small">next {time(delivery.next_attempt_at)}</div>}
          </div>
        </td>
        <td data-label="Created"><div>{time(delivery.created_at)}</div></td>
        <td>
          <ActionButton submission={props.action} run={props.replay}>Replay</ActionButton>
        </td>
      </tr>
      {open
        ? (
          <tr class="attempts-row">
            <td colSpan={7}>
              <Table class="attempts" columns={["#", "At", "Status", ["Duration", "num"], "Answer (excerpt)"]}>
                {delivery.attempt_log.map((a) => (
                  <tr key={a.attempt}>
                    <td>{a.attempt}</td>
                    <td>{time(a.at)}</td>
                    <td>{a.status_code ?? a.error ?? "—"}</td>
                    <td class="num">{a.duration_ms} ms</td>
                    <td><code class="excerpt">{a.response_excerpt ?? ""}</code></td>
                  </tr>
                ))}
              </Table>
            </td>
          </tr>
        )
        : null}
    </>
  )
}
