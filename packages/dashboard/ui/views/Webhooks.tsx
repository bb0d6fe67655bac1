/**
 * Webhooks: register (the signing secret shown once), delete, send a signed test event, and each webhook's
 * deliveries with their attempts (status, duration, the start of the receiver's answer) and **replay**.
 */
import { Webhook } from "@mediagate/contract"
import { useState } from "preact/hooks"
import { call, idempotencyKey } from "../api.js"
import { ConfirmButton, Empty, ErrorBox, Field, Link, Pager, SecretOnce, Show, Status, useLoad, usePager, useSubmit } from "../components.js"
import { time } from "../format.js"

const CreateForm = (props: { readonly onCreated: (created: Webhook.WebhookCreated) => void }) => {
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState<ReadonlyArray<Webhook.EventType>>(["task.completed", "task.failed"])
  const [description, setDescription] = useState("")
  const form = useSubmit()
  return (
    <form
      class="card form"
      aria-label="Register a webhook"
      onSubmit={(e) => {
        e.preventDefault()
        form.submit(() =>
          call("key", (api) =>
            api.webhooks.create({
              payload: {
                url,
                events: events as [Webhook.EventType, ...Array<Webhook.EventType>],
                ...(description === "" ? {} : { description })
              },
              headers: { "idempotency-key": idempotencyKey() }
            })).then((created) => {
              setUrl("")
              setDescription("")
              props.onCreated(created)
            })
        )
      }}
    >
      <h2>Register a webhook</h2>
      <Field label="URL" help="HTTPS in production; the receiver gets signed POSTs (docs/webhooks.md)">
        <input type="url" name="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://example.com/hooks/mediagate" />
      </Field>
      <fieldset>
        <legend>Events</legend>
        {Webhook.eventTypes.map((event) => (
          <label key={event} class="check">
            <input
              type="checkbox"
              name="events"
              value={event}
              checked={events.includes(event)}
              onChange={(e) => setEvents(e.currentTarget.checked ? [...events, event] : events.filter((x) => x !== event))}
            />
            {event}
          </label>
        ))}
      </fieldset>
      <Field label="Description (optional)">
        <input type="text" name="description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </Field>
      {form.error === undefined ? null : <ErrorBox error={form.error} />}
      <button type="submit" class="primary" disabled={form.busy || events.length === 0}>Register</button>
    </form>
  )
}

/** The webhook list. */
export const WebhookList = () => {
  const loaded = useLoad(() => call("key", (api) => api.webhooks.list()), [])
  const [secret, setSecret] = useState<Webhook.WebhookCreated | undefined>(undefined)
  const [tested, setTested] = useState<Record<string, Webhook.WebhookTestResult>>({})
  const action = useSubmit()
  return (
    <section>
      <header class="view-header">
        <h1>Webhooks</h1>
      </header>
      {secret === undefined ? null : (
        <SecretOnce title={`Signing secret of ${secret.url}`} value={secret.secret} onDone={() => setSecret(undefined)} />
      )}
      {action.error === undefined ? null : <ErrorBox error={action.error} />}
      <Show loaded={loaded}>
        {(hooks) =>
          hooks.length === 0
            ? <Empty>No webhooks registered. Register one below to be told when tasks finish.</Empty>
            : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">URL</th>
                      <th scope="col">Events</th>
                      <th scope="col">Created</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {hooks.map((hook) => (
                      <tr key={hook.id} data-webhook={hook.id}>
                        <td>
                          <Link to={`/webhooks/${hook.id}`} class="break">{hook.url}</Link>
                          {hook.description === null ? null : <div class="muted small">{hook.description}</div>}
                        </td>
                        <td>{hook.events.join(", ")}</td>
                        <td>{time(hook.createdAt)}</td>
                        <td class="actions">
                          <button
                            type="button"
                            disabled={action.busy}
                            onClick={() =>
                              action.submit(() =>
                                call("key", (api) => api.webhooks.test({ path: { id: hook.id } })).then((result) =>
                                  setTested((t) => ({ ...t, [hook.id]: result }))
                                )
                              )}
                          >
                            Send test event
                          </button>
                          <Link to={`/webhooks/${hook.id}`}>Deliveries</Link>
                          <ConfirmButton
                            label="Delete"
                            confirm="Confirm delete"
                            onConfirm={() => action.submit(() => call("key", (api) => api.webhooks.delete({ path: { id: hook.id } })).then(loaded.reload))}
                          />
                          {tested[hook.id] === undefined ? null : (
                            <div class={`test-result ${tested[hook.id]!.delivered ? "ok" : "bad"}`} role="status">
                              {tested[hook.id]!.delivered ? "Delivered" : "Not delivered"}
                              {tested[hook.id]!.statusCode === null ? "" : ` · HTTP ${tested[hook.id]!.statusCode}`}
                              {` · ${tested[hook.id]!.durationMs} ms`}
                              {tested[hook.id]!.error === null ? "" : ` · ${tested[hook.id]!.error}`}
                            </div>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
      </Show>
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
    () =>
      call("key", (api) =>
        api.webhooks.deliveries({ path: { id: props.id }, urlParams: pager.cursor === undefined ? {} : { cursor: pager.cursor } })),
    [props.id, pager.cursor],
    { pollMs: 3000, poll: (page) => page.data.some((d) => d.status === "pending") }
  )
  const action = useSubmit()
  const [replayed, setReplayed] = useState<string | undefined>(undefined)
  return (
    <section>
      <header class="view-header">
        <h1>Deliveries</h1>
        <Link to="/webhooks">← Webhooks</Link>
      </header>
      <p class="muted mono">{props.id}</p>
      {replayed === undefined ? null : <div class="notice" role="status">Replayed as a new delivery {replayed}.</div>}
      {action.error === undefined ? null : <ErrorBox error={action.error} />}
      <Show loaded={loaded}>
        {(page) =>
          page.data.length === 0
            ? <Empty>No deliveries yet: they appear when a task of this account finishes (or after a test event).</Empty>
            : (
              <>
                <ul class="deliveries">
                  {page.data.map((delivery) => {
                    const attempts = delivery.attempt_log
                    return (
                      <li key={delivery.id} class="card" data-delivery={delivery.id}>
                        <div class="row spread">
                          <div>
                            <Status status={delivery.status} /> <strong>{delivery.event_type}</strong>{" "}
                            <span class="muted mono small">{delivery.event_id}</span>
                          </div>
                          <button
                            type="button"
                            disabled={action.busy}
                            onClick={() =>
                              action.submit(() =>
                                call("key", (api) =>
                                  api.webhooks.replay({ path: { id: props.id, deliveryId: delivery.id } })).then((next) => {
                                    setReplayed(next.id)
                                    pager.reset()
                                    loaded.reload()
                                  })
                              )}
                          >
                            Replay
                          </button>
                        </div>
                        <div class="muted small">
                          Created {time(delivery.created_at)} · {delivery.attempts} attempt{delivery.attempts === 1 ? "" : "s"}
                          {delivery.last_status_code === null ? "" : ` · last HTTP ${delivery.last_status_code}`}
                          {delivery.next_attempt_at === null ? "" : ` · next attempt ${time(delivery.next_attempt_at)}`}
                        </div>
                        {delivery.last_error === null ? null : <div class="muted small">Last error: {delivery.last_error}</div>}
                        {attempts.length === 0 ? null : (
                          <div class="table-wrap">
                            <table class="attempts">
                              <thead>
                                <tr>
                                  <th scope="col">#</th>
                                  <th scope="col">At</th>
                                  <th scope="col">Status</th>
                                  <th scope="col" class="num">Duration</th>
                                  <th scope="col">Answer (excerpt)</th>
                                </tr>
                              </thead>
                              <tbody>
                                {attempts.map((a) => (
                                  <tr key={a.attempt}>
                                    <td>{a.attempt}</td>
                                    <td>{time(a.at)}</td>
                                    <td>{a.status_code ?? a.error ?? "—"}</td>
                                    <td class="num">{a.duration_ms} ms</td>
                                    <td><code class="excerpt">{a.response_excerpt ?? ""}</code></td>
                                  </tr>
                                ))}
                              </tbody>
                            </table>
                          </div>
                        )}
                      </li>
                    )
                  })}
                </ul>
                <Pager pager={pager} pagination={page.pagination} shown={page.data.length} />
              </>
            )}
      </Show>
    </section>
  )
}
