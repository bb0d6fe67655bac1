/**
 * Webhooks: register (the signing secret shown once), delete, send a signed test event, and each webhook's
 * deliveries with their attempts (status, duration, the start of the receiver's answer) and **replay**.
 */
import { Webhook } from "@mediagate/contract"
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { ActionButton, Checks, ConfirmButton, ErrorBox, Field, FormCard, Link, SecretOnce, ShowList, ShowPage, Status, Table, useFields, useLoad, usePager, useSubmit, ViewHeader } from "../components.js"
import { time } from "../format.js"

const CreateForm = (props: { readonly onCreated: (created: Webhook.WebhookCreated) => void }) => {
  const fields = useFields({ url: "", description: "" })
  const { description, url } = fields.values
  const [events, setEvents] = useState<ReadonlyArray<Webhook.EventType>>(["task.completed", "task.failed"])
  return (
    <FormCard
      label="Register a webhook"
      onSubmit={(_, key) =>
        call("key", (api) =>
          api.webhooks.create({
            payload: {
              url,
              events: events as [Webhook.EventType, ...Array<Webhook.EventType>],
              ...(description === "" ? {} : { description })
            },
            headers: { "idempotency-key": key }
          })).then((created) => {
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
        <Checks name="events" options={Webhook.eventTypes} chosen={events} onChange={setEvents} />
      </fieldset>
      <Field label="Description (optional)">
        <input type="text" maxLength={500} {...fields.bind("description")} />
      </Field>
    </FormCard>
  )
}

/** What a test event got: delivered or not, the receiver's status, how long it took, the error. */
/** A test event's outcome in one sentence: delivered or not, what the endpoint answered, how long it took. */
const testSentence = (result: Webhook.WebhookTestResult): string => {
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

const TestResult = ({ result }: { readonly result: Webhook.WebhookTestResult }) => (
  <div class={`test-result ${result.delivered ? "ok" : "bad"}`} role="status">{testSentence(result)}</div>
)

/** The webhook list. */
export const WebhookList = () => {
  const loaded = useLoad(() => call("key", (api) => api.webhooks.list()), [])
  const [secret, setSecret] = useState<Webhook.WebhookCreated | undefined>(undefined)
  const [tested, setTested] = useState<Record<string, Webhook.WebhookTestResult>>({})
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
                      run={() => call("key", (api) => api.webhooks.enable({ path: { id: hook.id } })).then(loaded.reload)}
                    >
                      Enable
                    </ActionButton>
                  )}
                  <ActionButton
                    submission={action}
                    run={() =>
                      call("key", (api) => api.webhooks.test({ path: { id: hook.id } })).then((result) =>
                        setTested((t) => ({ ...t, [hook.id]: result }))
                      )}
                  >
                    Send test event
                  </ActionButton>
                  <Link to={`/webhooks/${hook.id}`}>Deliveries</Link>
                  <ConfirmButton
                    label="Delete"
                    confirm="Confirm delete"
                    onConfirm={() => action.submit(() => call("key", (api) => api.webhooks.delete({ path: { id: hook.id } })).then(loaded.reload))}
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

/** One webhook's deliveries, with their attempts and replay. */
export const WebhookDeliveries = (props: { readonly id: string }) => {
  const pager = usePager()
  const loaded = useLoad(
    () => call("key", (api) => api.webhooks.deliveries({ path: { id: props.id }, urlParams: pager.params })),
    [props.id, pager.cursor],
    { pollMs: 3000, poll: (page) => page.data.some((d) => d.status === "pending") }
  )
  const action = useSubmit()
  const [replayed, setReplayed] = useState<string | undefined>(undefined)
  return (
    <section>
      <ViewHeader title="Deliveries"><Link to="/webhooks">← Webhooks</Link></ViewHeader>
      <p class="muted mono">{props.id}</p>
      {replayed === undefined ? null : <div class="notice" role="status">Replayed as a new delivery {replayed}.</div>}
      {action.error === undefined ? null : <ErrorBox error={action.error} />}
      <ShowPage
        loaded={loaded}
        pager={pager}
        empty="No deliveries yet: they appear when a task of this account finishes (or after a test event)."
      >
        {(deliveries) => (
          <ul class="deliveries">
            {deliveries.map((delivery) => (
              <li key={delivery.id} class="card" data-delivery={delivery.id}>
                <div class="row spread">
                  <div>
                    <Status status={delivery.status} /> <strong>{delivery.event_type}</strong>{" "}
                    <span class="muted mono small">{delivery.event_id}</span>
                  </div>
                  <ActionButton
                    submission={action}
                    run={() =>
                      call("key", (api) => api.webhooks.replay({ path: { id: props.id, deliveryId: delivery.id } })).then((next) => {
                        setReplayed(next.id)
                        pager.reset()
                        loaded.reload()
                      })}
                  >
                    Replay
                  </ActionButton>
                </div>
                <div class="muted small">
                  Created {time(delivery.created_at)} · {delivery.attempts} attempt{delivery.attempts === 1 ? "" : "s"}
                  {delivery.last_status_code === null ? "" : ` · last HTTP ${delivery.last_status_code}`}
                  {delivery.next_attempt_at === null ? "" : ` · next attempt ${time(delivery.next_attempt_at)}`}
                </div>
                {delivery.last_error === null ? null : <div class="muted small">Last error: {delivery.last_error}</div>}
                {delivery.attempt_log.length === 0 ? null : (
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
                )}
              </li>
            ))}
          </ul>
        )}
      </ShowPage>
    </section>
  )
}
