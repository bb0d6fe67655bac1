/**
 * The operator console (admin token, `/admin/v1`): accounts (search, create, credit, limits and billing mode,
 * their keys), the system view (tasks by state, queue depth, in flight, webhook backlog and failure rate, nodes
 * with their leases) and a task inspector across accounts.
 */
import { type Account, Task } from "@mediagate/contract"
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { ConfirmButton, Empty, ErrorBox, Field, Link, Pager, Show, Status, useLoad, usePager, useSubmit } from "../components.js"
import { duration, money, moneyExact, time, timeZone } from "../format.js"

const CreateAccount = (props: { readonly onCreated: (account: Account.Account) => void }) => {
  const [name, setName] = useState("")
  const [balance, setBalance] = useState("")
  const [mode, setMode] = useState<"prepaid" | "postpaid">("prepaid")
  const form = useSubmit()
  return (
    <form
      class="card form"
      aria-label="Create an account"
      onSubmit={(e) => {
        e.preventDefault()
        form.submit(() =>
          call("admin", (api) =>
            api.admin.createAccount({
              payload: { name, billingMode: mode, ...(balance === "" ? {} : { balance: Number(balance) }) }
            })).then((account) => {
              setName("")
              setBalance("")
              props.onCreated(account)
            })
        )
      }}
    >
      <h2>Create an account</h2>
      <Field label="Name">
        <input type="text" name="name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Opening credit, USD (optional)">
        <input type="number" name="balance" min="0" step="0.01" value={balance} onInput={(e) => setBalance(e.currentTarget.value)} />
      </Field>
      <Field label="Billing mode">
        <select name="billingMode" value={mode} onChange={(e) => setMode(e.currentTarget.value as "prepaid" | "postpaid")}>
          <option value="prepaid">prepaid (top-up balance)</option>
          <option value="postpaid">postpaid (invoiced)</option>
        </select>
      </Field>
      {form.error === undefined ? null : <ErrorBox error={form.error} />}
      <button type="submit" class="primary" disabled={form.busy}>Create account</button>
    </form>
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
        api.admin.listAccounts({
          urlParams: { limit: 20, ...(applied === "" ? {} : { search: applied }), ...(pager.cursor === undefined ? {} : { cursor: pager.cursor }) }
        })),
    [applied, pager.cursor]
  )
  return (
    <section>
      <header class="view-header">
        <h1>Accounts</h1>
      </header>
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
      <Show loaded={loaded}>
        {(page) =>
          page.data.length === 0
            ? <Empty>{applied === "" ? "No accounts yet." : `No account matches “${applied}”.`}</Empty>
            : (
              <>
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Account</th>
                        <th scope="col">Mode</th>
                        <th scope="col" class="num">Balance</th>
                        <th scope="col" class="num">This month</th>
                        <th scope="col">Created</th>
                      </tr>
                    </thead>
                    <tbody>
                      {page.data.map((account) => (
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
                    </tbody>
                  </table>
                </div>
                <Pager pager={pager} pagination={page.pagination} shown={page.data.length} />
              </>
            )}
      </Show>
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
  const [amount, setAmount] = useState("")
  const [note, setNote] = useState("")
  const credit = useSubmit()
  const settings = useSubmit()
  const revoke = useSubmit()
  const [credited, setCredited] = useState<string | undefined>(undefined)
  return (
    <section>
      <header class="view-header">
        <h1>Account</h1>
        <Link to="/admin/accounts">← Accounts</Link>
      </header>
      <Show loaded={loaded}>
        {(account) => (
          <>
            <div class="stats">
              <div class="stat">
                <span class="label">{account.name}</span>
                <strong data-testid="account-balance" title={moneyExact(account.balance)}>{money(account.balance)}</strong>
                <span class="muted mono small">{account.id}</span>
              </div>
              <div class="stat">
                <span class="label">Spent this month (UTC)</span>
                <strong>{money(account.monthToDateSpend)}</strong>
                <span class="muted small">{account.monthlySpendLimit === null ? "no monthly limit" : `limit ${money(account.monthlySpendLimit)}`}</span>
              </div>
              <div class="stat">
                <span class="label">Billing</span>
                <strong>{account.billingMode}</strong>
                <span class="muted small">created {time(account.createdAt)}</span>
              </div>
            </div>
            <div class="split">
              <form
                class="card form"
                aria-label="Credit the account"
                onSubmit={(e) => {
                  e.preventDefault()
                  credit.submit(() =>
                    call("admin", (api) =>
                      api.admin.credit({ path: { id: account.id }, payload: { amount: Number(amount), ...(note === "" ? {} : { note }) } }))
                      .then((next) => {
                        setCredited(`Credited ${money(Number(amount))}: the balance is now ${money(next.balance)}.`)
                        setAmount("")
                        setNote("")
                        loaded.reload()
                      })
                  )
                }}
              >
                <h2>Credit</h2>
                <Field label="Amount, USD">
                  <input type="number" name="amount" required min="0.01" step="0.01" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
                </Field>
                <Field label="Note (optional, kept in the ledger)">
                  <input type="text" name="note" maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
                </Field>
                {credit.error === undefined ? null : <ErrorBox error={credit.error} />}
                {credited === undefined ? null : <div class="notice" role="status">{credited}</div>}
                <button type="submit" class="primary" disabled={credit.busy}>Credit</button>
              </form>
              <form
                class="card form"
                aria-label="Limits and billing mode"
                key={JSON.stringify(account)}
                onSubmit={(e) => {
                  e.preventDefault()
                  const data = new FormData(e.currentTarget)
                  const text = (name: string) => String(data.get(name) ?? "")
                  settings.submit(() =>
                    call("admin", (api) =>
                      api.admin.updateAccount({
                        path: { id: account.id },
                        payload: {
                          billingMode: text("billingMode") === "postpaid" ? "postpaid" : "prepaid",
                          monthlySpendLimit: usdOrNull(text("monthlySpendLimit")),
                          autoTopUpEnabled: data.get("autoTopUpEnabled") === "on",
                          autoTopUpThreshold: usdOrNull(text("autoTopUpThreshold")),
                          autoTopUpAmount: usdOrNull(text("autoTopUpAmount"))
                        }
                      })).then(loaded.reload)
                  )
                }}
              >
                <h2>Limits and billing mode</h2>
                <Field label="Billing mode">
                  <select name="billingMode" defaultValue={account.billingMode}>
                    <option value="prepaid">prepaid</option>
                    <option value="postpaid">postpaid</option>
                  </select>
                </Field>
                <Field label="Monthly spend limit, USD (empty: none)">
                  <input type="number" name="monthlySpendLimit" min="0" step="0.01" defaultValue={account.monthlySpendLimit?.toString() ?? ""} />
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
                {settings.error === undefined ? null : <ErrorBox error={settings.error} />}
                <button type="submit" disabled={settings.busy}>Save</button>
              </form>
            </div>
          </>
        )}
      </Show>
      <div class="card">
        <h2>Keys</h2>
        {revoke.error === undefined ? null : <ErrorBox error={revoke.error} />}
        <Show loaded={keys}>
          {(list) =>
            list.length === 0 ? <Empty>This account has no keys.</Empty> : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Key</th>
                      <th scope="col" class="num">Spent</th>
                      <th scope="col">Last used</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
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
                  </tbody>
                </table>
              </div>
            )}
        </Show>
      </div>
      <AdminTasks accountId={props.id} />
    </section>
  )
}

/** The system view. */
export const SystemView = () => {
  const loaded = useLoad(() => call("admin", (api) => api.admin.system()), [], { pollMs: 5000 })
  return (
    <section>
      <header class="view-header">
        <h1>System</h1>
        <span class="muted">Refreshed every 5 s</span>
      </header>
      <Show loaded={loaded}>
        {(system) => {
          const failureRate = system.webhooks.failed_last_hour + system.webhooks.pending === 0
            ? "—"
            : `${system.webhooks.failed_last_hour} failed for good in the last hour`
          return (
            <>
              <div class="stats">
                <div class="stat"><span class="label">Queue depth (pending)</span><strong>{system.tasks.queue_depth}</strong></div>
                <div class="stat"><span class="label">In flight upstream</span><strong>{system.tasks.in_flight_upstream}</strong></div>
                <div class="stat"><span class="label">Due, not leased</span><strong>{system.tasks.due}</strong></div>
                <div class="stat">
                  <span class="label">Webhook backlog</span>
                  <strong>{system.webhooks.pending}</strong>
                  <span class="muted small">{system.webhooks.due} due now · {failureRate}</span>
                </div>
              </div>
              <div class="card">
                <h2>Tasks by state</h2>
                <div class="table-wrap">
                  <table>
                    <tbody>
                      {Task.taskStatuses.map((s) => (
                        <tr key={s}>
                          <th scope="row"><Status status={s} /></th>
                          <td class="num">{system.tasks.by_status[s]}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              </div>
              <div class="card">
                <h2>Nodes</h2>
                {system.nodes.length === 0 ? <Empty>No worker node has registered.</Empty> : (
                  <div class="table-wrap">
                    <table>
                      <thead>
                        <tr>
                          <th scope="col">Node</th>
                          <th scope="col" class="num">Workers</th>
                          <th scope="col" class="num">Leases</th>
                          <th scope="col">Started</th>
                          <th scope="col">Last seen</th>
                        </tr>
                      </thead>
                      <tbody>
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
                      </tbody>
                    </table>
                  </div>
                )}
              </div>
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
            ...(accountId === "" ? {} : { account_id: accountId }),
            ...(search === "" ? {} : { search }),
            ...(pager.cursor === undefined ? {} : { cursor: pager.cursor })
          }
        })),
    [status, accountId, search, pager.cursor],
    { pollMs: 5000, poll: () => pager.cursor === undefined }
  )
  return (
    <section class={props.accountId === undefined ? "" : "card"}>
      <header class="view-header">
        {props.accountId === undefined ? <h1>Task inspector</h1> : <h2>Tasks of this account</h2>}
      </header>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <Field label="Status">
          <select name="status" value={status} onChange={(e) => { pager.reset(); setStatus(e.currentTarget.value) }}>
            <option value="">Any</option>
            {Task.taskStatuses.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </Field>
        {props.accountId === undefined ? (
          <Field label="Account id">
            <input type="search" name="account_id" value={accountId} onChange={(e) => { pager.reset(); setAccountId(e.currentTarget.value.trim()) }} />
          </Field>
        ) : null}
        <Field label="Task id starts with">
          <input type="search" name="search" value={search} onChange={(e) => { pager.reset(); setSearch(e.currentTarget.value.trim()) }} />
        </Field>
      </form>
      <Show loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? <Empty>No tasks.</Empty> : (
            <>
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Task</th>
                      <th scope="col">Account</th>
                      <th scope="col">Status</th>
                      <th scope="col">Model</th>
                      <th scope="col">Created</th>
                      <th scope="col" class="num">Cost</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.data.map((task) => (
                      <tr key={task.id}>
                        <td><Link to={`/admin/tasks/${task.id}`} class="mono small">{task.id}</Link></td>
                        <td><Link to={`/admin/accounts/${task.account_id}`} class="mono small">{task.account_id}</Link></td>
                        <td><Status status={task.status} /></td>
                        <td>{task.provider} · {task.model}</td>
                        <td>{time(task.created_at)}</td>
                        <td class="num">{money(task.cost)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager pager={pager} pagination={page.pagination} shown={page.data.length} />
            </>
          )}
      </Show>
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
      <header class="view-header">
        <h1 class="mono">{props.id}</h1>
        <Link to="/admin/tasks">← Task inspector</Link>
      </header>
      <Show loaded={loaded}>
        {(task) => (
          <div class="card">
            <dl class="facts">
              <dt>Status</dt>
              <dd><Status status={task.status} /> {task.progress}%</dd>
              <dt>Account · key</dt>
              <dd class="mono small"><Link to={`/admin/accounts/${task.account_id}`}>{task.account_id}</Link> · {task.key_id} ({task.environment})</dd>
              <dt>Provider · model</dt>
              <dd>{task.provider} · {task.model} ({task.operation})</dd>
              <dt>Charged · refunded · net</dt>
              <dd>{money(task.charged)} · {money(task.refunded)} · {money(task.cost)}</dd>
              <dt>Claims · polls</dt>
              <dd>{task.claims} · {task.polls}</dd>
              <dt>Upstream channel · job</dt>
              <dd class="mono small">
                {task.channel_id === null ? "—" : <Link to="/admin/channels">{task.channel_id}</Link>} · {task.upstream_job_id ?? "—"}
              </dd>
              <dt>Lease</dt>
              <dd class="mono small">{task.lease === null ? "none" : `${task.lease.owner} until ${time(task.lease.expires_at)}`}</dd>
              <dt>Next run · deadline</dt>
              <dd>{time(task.next_run_at)} · {time(task.deadline_at)}</dd>
              <dt>Created · started · completed</dt>
              <dd>{time(task.created_at)} · {time(task.started_at)} · {time(task.completed_at)} (ran {duration(task.started_at, task.completed_at)})</dd>
              <dt>Retry of</dt>
              <dd>{task.original_task_id === null ? "—" : <Link to={`/admin/tasks/${task.original_task_id}`} class="mono">{task.original_task_id}</Link>}</dd>
              <dt>Error</dt>
              <dd>{task.error === undefined ? "—" : `${task.error.code}: ${task.error.message}`}</dd>
            </dl>
            <h2>Input</h2>
            <pre class="json">{JSON.stringify(task.input, null, 2)}</pre>
          </div>
        )}
      </Show>
    </section>
  )
}
