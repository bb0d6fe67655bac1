/**
 * Tasks: the list with every filter of `GET /api/v1/tasks` (status, provider, model, dates, prompt or id search), keyset
 * paging and live states (polled every 3 s while the tab is visible), and a task's detail: input, timings, cost,
 * error, the retry chain, the result previewed in place with a download link, retry and cancel.
 */
import type { TaskListQuery } from "@mediagate/client"
import { useState } from "preact/hooks"
import { keyCall } from "../client.js"
import { ActionButton, Card, ConfirmButton, ErrorBox, Fact, Field, Link, SearchInput, Select, Show, ShowPage, Status, Table, useLoad, usePager, useSubmit, ViewHeader } from "../components.js"
import { duration, money, moneyExact, time, timeZone } from "../format.js"
import { cancellableStatuses, modelIds, models as modelsOf, retryableStatuses, taskFamilies, taskStatuses, terminalStatuses } from "../generated/catalog.js"
import { current, navigate } from "../router.js"
import { Preview } from "./Preview.js"

type Query = TaskListQuery

const filterNames = ["status", "provider", "model", "from", "to", "search"] as const
type Filters = Partial<Record<typeof filterNames[number], string>>

/** Local calendar day `YYYY-MM-DD` to the ISO instant of its start (`end`: of the next day) in the viewer's zone. */
const dayBoundary = (day: string, end: boolean): Date | undefined => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day)
  if (match === null) return undefined
  return new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + (end ? 1 : 0))
}

const toQuery = (filters: Filters): Query => {
  const query: { -readonly [K in keyof Query]?: Query[K] } = {}
  if (filters.status) query.status = filters.status as Query["status"] & string
  if (filters.provider) query.provider = filters.provider as Query["provider"] & string
  if (filters.model) query.model = filters.model as Query["model"] & string
  const after = filters.from ? dayBoundary(filters.from, false) : undefined
  const before = filters.to ? dayBoundary(filters.to, true) : undefined
  if (after !== undefined) query.created_after = after.toISOString()
  if (before !== undefined) query.created_before = before.toISOString()
  if (filters.search) query.search = filters.search
  return query
}

const readFilters = (): Filters => {
  const params = current().query
  const filters: Filters = {}
  for (const name of filterNames) {
    const value = params.get(name)
    if (value) filters[name] = value
  }
  return filters
}

const isActive = (status: string) => !(terminalStatuses as ReadonlyArray<string>).includes(status)

/** The task list. */
export const TaskList = () => {
  const [filters, setFilters] = useState<Filters>(readFilters)
  const pager = usePager()
  const apply = (chosen: Filters) => {
    // a filter set to "Any" or emptied is no filter
    const next: Filters = Object.fromEntries(Object.entries(chosen).filter(([, v]) => v !== undefined && v !== ""))
    setFilters(next)
    // the address without the pager's page and cursors: the first page
    const params = new URLSearchParams(next as Record<string, string>)
    navigate(`/tasks${params.size > 0 ? `?${params}` : ""}`, { replace: true })
  }
  const set = (name: typeof filterNames[number]) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement | HTMLSelectElement).value
    const next: Filters = { ...filters, [name]: value }
    if (name === "provider") delete next.model
    apply(next)
  }
  const loaded = useLoad(
    () =>
      keyCall((client) => client.tasks.list({ ...toQuery(filters), limit: 20, ...pager.params })),
    [JSON.stringify(filters), pager.cursor],
    // the first page is polled for new tasks; later pages while a task on them is active
    { pollMs: 3000, poll: (page) => pager.cursor === undefined || page.data.some((t) => isActive(t.status)) }
  )
  const models = filters.provider
    ? (modelsOf as Record<string, ReadonlyArray<string>>)[filters.provider] ?? []
    : modelIds
  return (
    <section>
      <ViewHeader title="Tasks">
        <span class="muted" aria-live="polite">{loaded.loading ? "Refreshing…" : "Live: refreshed every 3 s"}</span>
      </ViewHeader>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
        <Field label="Status">
          <Select name="status" value={filters.status ?? ""} none="Any" options={taskStatuses} onChange={set("status")} />
        </Field>
        <Field label="Provider">
          <Select name="provider" value={filters.provider ?? ""} none="Any" options={taskFamilies} onChange={set("provider")} />
        </Field>
        <Field label="Model">
          <Select name="model" value={filters.model ?? ""} none="Any" options={models} onChange={set("model")} />
        </Field>
        <Field label="Created from">
          <input type="date" name="from" value={filters.from ?? ""} onChange={set("from")} />
        </Field>
        <Field label="Created to">
          <input type="date" name="to" value={filters.to ?? ""} onChange={set("to")} />
        </Field>
        <Field label="Search prompts or ids">
          <SearchInput
            name="search"
            placeholder="lighthouse, task_01…"
            maxLength={64}
            value={filters.search ?? ""}
            onCommit={(search) => apply({ ...filters, search })}
          />
        </Field>
        {Object.keys(filters).length > 0 ? <button type="button" onClick={() => apply({})}>Clear filters</button> : null}
      </form>
      <ShowPage
        loaded={loaded}
        pager={pager}
        empty={Object.keys(filters).length > 0
          ? "No task matches these filters."
          : "No tasks yet. Start one in the playground, or through the API (POST /api/v1/…): it appears here within seconds."}
      >
        {(tasks) => (
          <Table
            class="tasks cards"
            columns={["Task", "Status", "Provider · model", "Operation", `Created (${timeZone})`, ["Cost", "num"]]}
          >
            {tasks.map((task) => (
              <tr key={task.id} data-task={task.id}>
                {/* each cell's content in one element: on a narrow screen a cell is a grid of its label and content */}
                <td data-label="Task">
                  <div>
                    {task.thumbnail_url === undefined
                      ? null
                      : <img class="thumb" src={task.thumbnail_url} alt="" loading="lazy" width={40} height={40} />}
                    <Link to={`/tasks/${task.id}`} class="mono">{task.id}</Link>
                    {task.prompt === undefined ? null : <div class="prompt small">{task.prompt}</div>}
                    {task.metadata !== undefined && Object.keys(task.metadata).length > 0
                      ? <div class="muted small">{JSON.stringify(task.metadata).slice(0, 80)}</div>
                      : null}
                  </div>
                </td>
                <td data-label="Status">
                  <div>
                    <Status status={task.status} />
                    {isActive(task.status) && task.progress > 0 ? <span class="muted small"> {task.progress}%</span> : null}
                    {task.error === undefined ? null : <div class="muted small">{task.error.code}</div>}
                  </div>
                </td>
                <td data-label="Model"><div>{task.provider} · {task.model}</div></td>
                <td data-label="Operation"><div>{task.operation}</div></td>
                <td data-label="Created"><div>{time(task.created_at)}</div></td>
                <td data-label="Cost" class="num" title={moneyExact(task.cost)}><div>{money(task.cost)}</div></td>
              </tr>
            ))}
          </Table>
        )}
      </ShowPage>
    </section>
  )
}

/** A task's detail. */
export const TaskDetail = (props: { readonly id: string }) => {
  const loaded = useLoad(
    () => keyCall((client) => client.tasks.get(props.id)),
    [props.id],
    { pollMs: 2000, poll: (task) => isActive(task.status) }
  )
  const action = useSubmit()
  return (
    <section>
      <ViewHeader title={props.id} class="mono"><Link to="/tasks">← All tasks</Link></ViewHeader>
      <Show loaded={loaded}>
        {(task) => (
          <div class="detail">
            <div class="card">
              <dl class="facts">
                <Fact label="Status">
                  <Status status={task.status} /> {isActive(task.status) ? `${task.progress}%` : null}
                </Fact>
                <Fact label="Provider · model">{task.provider} · {task.model}</Fact>
                <Fact label="Operation">{task.type} · {task.operation}</Fact>
                <Fact label="Cost" title={moneyExact(task.cost)}>{money(task.cost)}</Fact>
                <Fact label="Created">{time(task.created_at)}</Fact>
                <Fact label="Started">{time(task.started_at)} <span class="muted">(waited {duration(task.created_at, task.started_at)})</span></Fact>
                <Fact label="Completed">{time(task.completed_at)} <span class="muted">(ran {duration(task.started_at, task.completed_at)})</span></Fact>
                <Fact label="Estimated">{task.estimated_seconds} s</Fact>
                <Fact label="Retry of">
                  {task.original_task_id === null
                    ? "—"
                    : <Link to={`/tasks/${task.original_task_id}`} class="mono">{task.original_task_id}</Link>}
                </Fact>
                <Fact label="Webhook URL" class="break">{task.webhookUrl ?? "—"}</Fact>
              </dl>
              <div class="row">
                {(retryableStatuses as ReadonlyArray<string>).includes(task.status)
                  ? (
                    <ActionButton
                      submission={action}
                      run={(key) =>
                        keyCall((client) => client.tasks.retry(task.id, { idempotencyKey: key }))
                          .then((ack) => navigate(`/tasks/${ack.id}`))}
                    >
                      Retry (charged again)
                    </ActionButton>
                  )
                  : null}
                {(cancellableStatuses as ReadonlyArray<string>).includes(task.status)
                  ? (
                    <ConfirmButton
                      label="Cancel"
                      confirm="Confirm cancel (refunded)"
                      onConfirm={() => action.submit(() => keyCall((client) => client.tasks.cancel(task.id)).then(loaded.reload))}
                    />
                  )
                  : null}
              </div>
              {action.error === undefined ? null : <ErrorBox error={action.error} />}
            </div>
            {task.error === undefined ? null : (
              <Card title="Error" class="error-card">
                <p>
                  <span class="code">{task.error.code}</span> {task.error.message}
                </p>
              </Card>
            )}
            {task.result === undefined || task.result.length === 0 ? null : (
              <Card title="Result">
                <div class="previews">
                  {task.result.map((item, index) => <Preview key={item.url} item={item} type={task.type} index={index} />)}
                </div>
              </Card>
            )}
            <Card title="Input">
              <pre class="json" data-testid="task-input">{JSON.stringify(task.input, null, 2)}</pre>
              {Object.keys(task.metadata ?? {}).length > 0 ? (
                <>
                  <h3>Metadata</h3>
                  <pre class="json">{JSON.stringify(task.metadata, null, 2)}</pre>
                </>
              ) : null}
            </Card>
          </div>
        )}
      </Show>
    </section>
  )
}
