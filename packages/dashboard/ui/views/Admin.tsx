/**
 * The operator console (admin token, `/admin/v1`): accounts (search, create, credit, limits and billing mode,
 * their keys), the system view (tasks by state, queue depth, in flight, webhook backlog and failure rate, nodes
 * with their leases) and a task inspector across accounts.
 */
import { type Account, Task } from "@mediagate/contract"
import { Fragment } from "preact"
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { Card, ConfirmButton, Empty, EnvironmentBadge, ErrorBox, Fact, Field, FormCard, Link, SearchInput, Select, Show, ShowList, ShowPage, Stat, Status, Table, useFields, useLoad, usePager, useSubmit, ViewHeader } from "../components.js"
import { duration, money, moneyExact, time, timeZone } from "../format.js"

const CreateAccount = (props: { readonly onCreated: (account: Account.Account) => void }) => {
  const fields = useFields({ name: "", balance: "" })
  const [mode, setMode] = useState<"prepaid" | "postpaid">("prepaid")
  const { balance, name } = fields.values
  return (
    <FormCard
      label="Create an account"
      onSubmit={() =>
        call("admin", (api) =>
          api.admin.createAccount({
            payload: { name, billingMode: mode, ...(balance === "" ? {} : { balance: Number(balance) }) }
          })).then((account) => {
            fields.reset()
            props.onCreated(account)
          })}
      actions={(busy) => <button type="submit" class="primary" disabled={busy}>Create account</button>}
    >
      <Field label="Name">
        <input type="text" required maxLength={200} {...fields.bind("name")} />
      </Field>
      <Field label="Opening credit, USD (optional)">
        <input type="number" min="0" step="0.01" {...fields.bind("balance")} />
      </Field>
      <Field label="Billing mode">
        <select name="billingMode" value={mode} onChange={(e) => setMode(e.currentTarget.value as "prepaid" | "postpaid")}>
          <option value="prepaid">prepaid (top-up balance)</option>
          <option value="postpaid">postpaid (invoiced)</option>
        </select>
      </Field>
    </FormCard>
  )
}

/** The account list with search. */
export const AccountList = () => {
  const [search, setSearch] = useState("")
  const [applied, setApplied] = useState("")
  const pager = usePager()
  const loaded = useLoad(
    () =>
      call("admin", (api) =>
        api.admin.listAccounts({ urlParams: { limit: 20, ...(applied === "" ? {} : { search: applied }), ...pager.params } })),
    [applied, pager.cursor]
  )
  return (
    <section>
      <ViewHeader title="Accounts" />
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault()
          pager.reset()
          setApplied(search.trim())
        }}
      >
        <Field label="Search (id or name prefix)">
          <input type="search" name="search" maxLength={128} value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </Field>
        <button type="submit">Search</button>
      </form>
      <ShowPage loaded={loaded} pager={pager} empty={applied === "" ? "No accounts yet." : `No account matches “${applied}”.`}>
        {(accounts) => (
          <Table columns={["Account", "Mode", ["Balance", "num"], ["This month", "num"], "Created"]}>
            {accounts.map((account) => (
              <tr key={account.id} data-account={account.id}>
                <td>
                  <Link to={`/admin/accounts/${account.id}`}>{account.name}</Link>
                  <div class="muted mono small">{account.id}</div>
                </td>
                <td>{account.billingMode}</td>
                <td class="num" title={moneyExact(account.balance)}>{money(account.balance)}</td>
                <td class="num">{money(account.monthToDateSpend)}</td>
                <td>{time(account.createdAt)}</td>
              </tr>
            ))}
          </Table>
        )}
      </ShowPage>
      <CreateAccount onCreated={() => {
        pager.reset()
        loaded.reload()
      }} />
    </section>
  )
}

const usdOrNull = (value: string): number | null => value.trim() === "" ? null : Number(value)

/** One account: its figures, credit, settings and keys. */
export const AccountDetail = (props: { readonly id: string }) => {
  const loaded = useLoad(() => call("admin", (api) => api.admin.getAccount({ path: { id: props.id } })), [props.id])
  const keys = useLoad(() => call("admin", (api) => api.admin.listKeys({ path: { id: props.id } })), [props.id])
  const credit = useFields({ amount: "", note: "" })
  const { amount, note } = credit.values
  const revoke = useSubmit()
  const [credited, setCredited] = useState<string | undefined>(undefined)
  return (
    <section>
      <ViewHeader title="Account"><Link to="/admin/accounts">← Accounts</Link></ViewHeader>
      <Show loaded={loaded}>
        {(account) => (
          <>
            <div class="stats">
              <Stat
                label={account.name}
                value={money(account.balance)}
                title={moneyExact(account.balance)}
                testid="account-balance"
                note={account.id}
                noteClass="muted mono small"
              />
              <Stat
                label="Spent this month (UTC)"
                value={money(account.monthToDateSpend)}
                note={account.monthlySpendLimit === null ? "no monthly limit" : `limit ${money(account.monthlySpendLimit)}`}
              />
              <Stat
                label="Billing"
                value={account.billingMode}
                note={account.billingMode === "postpaid"
                  ? `credit limit ${money(account.creditLimit)}`
                  : <>created {time(account.createdAt)}</>}
              />
            </div>
            <div class="split">
              <FormCard
                label="Credit the account"
                title="Credit"
                onSubmit={() =>
                  call("admin", (api) =>
                    api.admin.credit({ path: { id: account.id }, payload: { amount: Number(amount), ...(note === "" ? {} : { note }) } }))
                    .then((next) => {
                      setCredited(`Credited ${money(Number(amount))}: the balance is now ${money(next.balance)}.`)
                      credit.reset()
                      loaded.reload()
                    })}
                actions={(busy) => (
                  <>
                    {credited === undefined ? null : <div class="notice" role="status">{credited}</div>}
                    <button type="submit" class="primary" disabled={busy}>Credit</button>
                  </>
                )}
              >
                <Field label="Amount, USD">
                  <input type="number" required min="0.01" step="0.01" {...credit.bind("amount")} />
                </Field>
                <Field label="Note (optional, kept in the ledger)">
                  <input type="text" maxLength={500} {...credit.bind("note")} />
                </Field>
              </FormCard>
              <FormCard
                label="Limits and billing mode"
                onSubmit={(form) => {
                  const data = new FormData(form)
                  const text = (name: string) => String(data.get(name) ?? "")
                  return call("admin", (api) =>
                    api.admin.updateAccount({
                      path: { id: account.id },
                      payload: {
                        billingMode: text("billingMode") === "postpaid" ? "postpaid" : "prepaid",
                        monthlySpendLimit: usdOrNull(text("monthlySpendLimit")),
                        autoTopUpEnabled: data.get("autoTopUpEnabled") === "on",
                        autoTopUpThreshold: usdOrNull(text("autoTopUpThreshold")),
                        autoTopUpAmount: usdOrNull(text("autoTopUpAmount")),
                        creditLimit: usdOrNull(text("creditLimit"))
                      }
                    })).then(loaded.reload)
                }}
                actions={(busy) => <button type="submit" disabled={busy}>Save</button>}
              >
                {/* a new account value starts the fields afresh from it */}
                <Fragment key={JSON.stringify(account)}>
                  <Field label="Billing mode">
                    <select name="billingMode" defaultValue={account.billingMode}>
                      <option value="prepaid">prepaid</option>
                      <option value="postpaid">postpaid</option>
                    </select>
                  </Field>
                  <Field label="Monthly spend limit, USD (empty: none)">
                    <input type="number" name="monthlySpendLimit" min="0" step="0.01" defaultValue={account.monthlySpendLimit?.toString() ?? ""} />
                  </Field>
                  <Field label="Credit limit, USD (postpaid: how far the balance may go below zero; empty: the default)">
                    <input type="number" name="creditLimit" min="0" max="1000000000" step="0.01" defaultValue={account.creditLimit.toString()} />
                  </Field>
                  <label class="check">
                    <input type="checkbox" name="autoTopUpEnabled" defaultChecked={account.autoTopUpEnabled} /> Auto top-up
                  </label>
                  <div class="grid2">
                    <Field label="Top up below, USD">
                      <input type="number" name="autoTopUpThreshold" min="0" step="0.01" defaultValue={account.autoTopUpThreshold?.toString() ?? ""} />
                    </Field>
                    <Field label="Top-up amount, USD">
                      <input type="number" name="autoTopUpAmount" min="0.01" step="0.01" defaultValue={account.autoTopUpAmount?.toString() ?? ""} />
                    </Field>
                  </div>
                </Fragment>
              </FormCard>
            </div>
          </>
        )}
      </Show>
      <Card title="Keys">
        {revoke.error === undefined ? null : <ErrorBox error={revoke.error} />}
        <ShowList loaded={keys} empty="This account has no keys.">
          {(list) => (
            <Table columns={["Name", "Key", ["Spent", "num"], "Last used", "Actions"]}>
              {list.map((key) => (
                <tr key={key.id}>
                  <td>{key.name} <span class="muted small">{key.environment}</span></td>
                  <td class="mono">{key.maskedKey}</td>
                  <td class="num">{money(key.spent)}</td>
                  <td>{time(key.lastUsedAt)}</td>
                  <td>
                    <ConfirmButton
                      label="Revoke"
                      confirm="Confirm revoke"
                      onConfirm={() => revoke.submit(() => call("admin", (api) => api.admin.revokeKey({ path: { id: key.id } })).then(keys.reload))}
                    />
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </ShowList>
      </Card>
      <AdminTasks accountId={props.id} />
    </section>
  )
}

/** The system view. */
export const SystemView = () => {
  const loaded = useLoad(() => call("admin", (api) => api.admin.system()), [], { pollMs: 5000 })
  return (
    <section>
      <ViewHeader title="System"><span class="muted">Refreshed every 5 s</span></ViewHeader>
      <Show loaded={loaded}>
        {(system) => {
          const failureRate = system.webhooks.failed_last_hour + system.webhooks.pending === 0
            ? "—"
            : `${system.webhooks.failed_last_hour} failed for good in the last hour`
          return (
            <>
              <div class="stats">
                <Stat label="Queue depth (pending)" value={system.tasks.queue_depth} />
                <Stat label="In flight upstream" value={system.tasks.in_flight_upstream} />
                <Stat label="Due, not leased" value={system.tasks.due} />
                <Stat label="Webhook backlog" value={system.webhooks.pending} note={<>{system.webhooks.due} due now · {failureRate}</>} />
              </div>
              <Card title="Tasks by state">
                <Table>
                  {Task.taskStatuses.map((s) => (
                    <tr key={s}>
                      <th scope="row"><Status status={s} /></th>
                      <td class="num">{system.tasks.by_status[s]}</td>
                    </tr>
                  ))}
                </Table>
              </Card>
              <Card title="Nodes">
                {system.nodes.length === 0 ? <Empty>No worker node has registered.</Empty> : (
                  <Table columns={["Node", ["Workers", "num"], ["Leases", "num"], "Started", "Last seen"]}>
                    {system.nodes.map((node) => (
                      <tr key={node.id} class={node.stale ? "stale" : ""}>
                        <td>
                          <span class="mono small">{node.id}</span>
                          {node.stale ? <span class="status status-failed">stale</span> : null}
                        </td>
                        <td class="num">{node.concurrency}</td>
                        <td class="num">{node.leases}</td>
                        <td>{time(node.started_at)}</td>
                        <td>{time(node.last_seen_at)}</td>
                      </tr>
                    ))}
                  </Table>
                )}
              </Card>
              <p class="muted small">Figures read at {time(system.checked_at)} ({timeZone}).</p>
            </>
          )
        }}
      </Show>
    </section>
  )
}

/** Tasks across accounts (or of one). */
export const AdminTasks = (props: { readonly accountId?: string }) => {
  const [status, setStatus] = useState("")
  const [environment, setEnvironment] = useState("")
  const [accountId, setAccountId] = useState(props.accountId ?? "")
  const [search, setSearch] = useState("")
  const pager = usePager()
  const loaded = useLoad(
    () =>
      call("admin", (api) =>
        api.admin.listTasks({
          urlParams: {
            limit: 20,
            ...(status === "" ? {} : { status: status as Task.TaskStatus }),
            ...(environment === "live" || environment === "test" ? { environment } : {}),
            ...(accountId === "" ? {} : { account_id: accountId }),
            ...(search === "" ? {} : { search }),
            ...pager.params
          }
        })),
    [status, environment, accountId, search, pager.cursor],
    { pollMs: 5000, poll: () => pager.cursor === undefined }
  )
  return (
    <section class={props.accountId === undefined ? "" : "card"}>
      <header class="view-header">
        {props.accountId === undefined ? <h1>Task inspector</h1> : <h2>Tasks of this account</h2>}
      </header>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <Field label="Status">
          <Select
            name="status"
            value={status}
            none="Any"
            options={Task.taskStatuses}
            onChange={(e) => { pager.reset(); setStatus(e.currentTarget.value) }}
          />
        </Field>
        <Field label="Environment">
          <Select
            name="environment"
            value={environment}
            none="Both"
            options={["live", "test"]}
            onChange={(e) => { pager.reset(); setEnvironment(e.currentTarget.value) }}
          />
        </Field>
        {props.accountId === undefined ? (
          <Field label="Account id">
            <SearchInput name="account_id" value={accountId} onCommit={(value) => { pager.reset(); setAccountId(value) }} />
          </Field>
        ) : null}
        <Field label="Task id starts with">
          <SearchInput name="search" value={search} onCommit={(value) => { pager.reset(); setSearch(value) }} />
        </Field>
      </form>
      <ShowPage loaded={loaded} pager={pager} empty="No tasks.">
        {(tasks) => (
          <Table columns={["Task", "Account", "Environment", "Status", "Model", "Created", ["Cost", "num"]]}>
            {tasks.map((task) => (
              <tr key={task.id} data-task={task.id}>
                <td><Link to={`/admin/tasks/${task.id}`} class="mono small">{task.id}</Link></td>
                <td><Link to={`/admin/accounts/${task.account_id}`} class="mono small">{task.account_id}</Link></td>
                <td><EnvironmentBadge environment={task.environment} /></td>
                <td><Status status={task.status} /></td>
                <td>{task.provider} · {task.model}</td>
                <td>{time(task.created_at)}</td>
                <td class="num">{money(task.cost)}</td>
              </tr>
            ))}
          </Table>
        )}
      </ShowPage>
    </section>
  )
}

/** One task of any account, with how the engine handles it. */
export const AdminTaskDetail = (props: { readonly id: string }) => {
  const loaded = useLoad(() => call("admin", (api) => api.admin.getTask({ path: { id: props.id } })), [props.id], {
    pollMs: 3000,
    poll: (task) => !Task.terminalStatuses.includes(task.status)
  })
  return (
    <section>
      <ViewHeader title={props.id} class="mono"><Link to="/admin/tasks">← Task inspector</Link></ViewHeader>
      <Show loaded={loaded}>
        {(task) => (
          <div class="card">
            <dl class="facts">
              <Fact label="Status"><Status status={task.status} /> {task.progress}%</Fact>
              <Fact label="Account · key" class="mono small">
                <Link to={`/admin/accounts/${task.account_id}`}>{task.account_id}</Link> · {task.key_id} ({task.environment})
              </Fact>
              <Fact label="Provider · model">{task.provider} · {task.model} ({task.operation})</Fact>
              <Fact label="Charged · refunded · net">{money(task.charged)} · {money(task.refunded)} · {money(task.cost)}</Fact>
              <Fact label="Claims · polls">{task.claims} · {task.polls}</Fact>
              <Fact label="Upstream channel · job" class="mono small">
                {task.channel_id === null ? "—" : <Link to="/admin/channels">{task.channel_id}</Link>} · {task.upstream_job_id ?? "—"}
              </Fact>
              <Fact label="Lease" class="mono small">{task.lease === null ? "none" : `${task.lease.owner} until ${time(task.lease.expires_at)}`}</Fact>
              <Fact label="Next run · deadline">{time(task.next_run_at)} · {time(task.deadline_at)}</Fact>
              <Fact label="Created · started · completed">
                {time(task.created_at)} · {time(task.started_at)} · {time(task.completed_at)} (ran {duration(task.started_at, task.completed_at)})
              </Fact>
              <Fact label="Retry of">
                {task.original_task_id === null ? "—" : <Link to={`/admin/tasks/${task.original_task_id}`} class="mono">{task.original_task_id}</Link>}
              </Fact>
              <Fact label="Error">{task.error === undefined ? "—" : `${task.error.code}: ${task.error.message}`}</Fact>
            </dl>
            <h2>Input</h2>
            <pre class="json">{JSON.stringify(task.input, null, 2)}</pre>
          </div>
        )}
      </Show>
    </section>
  )
}
