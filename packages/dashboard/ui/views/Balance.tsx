/**
 * Balance and usage: the balance, month-to-date spend and limits (`GET /api/v1/balance`), the ledger
 * (`GET /api/v1/balance/ledger`: charges, refunds, top-ups) with paging and a CSV export, and charts of spend and
 * tasks per day and per model over the last 30 days (from the task list; plain SVG).
 */
import type { Data } from "@mediagate/client"
import { useState } from "preact/hooks"
import { keyCall } from "../client.js"
import { ActionButton, Empty, ErrorBox, Field, Link, Select, Show, ShowPage, Stat, Table, useLoad, usePager, useSubmit, ViewHeader } from "../components.js"
import { download, localDay, money, moneyExact, time, timeZone, toCsv } from "../format.js"
import { ledgerKinds } from "../generated/catalog.js"

type LedgerKind = typeof ledgerKinds[number]
type LedgerEntry = Data<"balance.ledger">[number]

/** The days of the usage window. */
const windowDays = 30
/** The most tasks the usage charts read (10 pages of 100). */
const maxUsagePages = 10

interface Usage {
  readonly days: ReadonlyArray<{ readonly day: string; readonly spend: number; readonly tasks: number }>
  readonly models: ReadonlyArray<{ readonly model: string; readonly spend: number; readonly tasks: number }>
  readonly partial: boolean
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
}

const loadUsage = async (): Promise<Usage> => {
  const start = new Date()
  start.setHours(0, 0, 0, 0)
  start.setDate(start.getDate() - (windowDays - 1))
  const days = new Map<string, { spend: number; tasks: number }>()
  for (let i = 0; i < windowDays; i++) {
    const day = new Date(start)
    day.setDate(start.getDate() + i)
    days.set(localDay(day), { spend: 0, tasks: 0 })
  }
  const models = new Map<string, { spend: number; tasks: number }>()
  const rows: Array<ReadonlyArray<unknown>> = [["task_id", "created_at", "status", "provider", "model", "cost_usd"]]
  let cursor: string | undefined
  let pages = 0
  let partial = false
  do {
    const page = await keyCall((client) =>
      client.tasks.list({ created_after: start.toISOString(), limit: 100, ...(cursor === undefined ? {} : { cursor }) })
    )
    for (const task of page.data) {
      const day = days.get(localDay(new Date(task.created_at)))
      if (day !== undefined) {
        day.spend += task.cost
        day.tasks += 1
      }
      const model = models.get(task.model) ?? { spend: 0, tasks: 0 }
      model.spend += task.cost
      model.tasks += 1
      models.set(task.model, model)
      rows.push([task.id, task.created_at, task.status, task.provider, task.model, task.cost])
    }
    cursor = page.pagination.hasMore && page.pagination.cursor !== null ? page.pagination.cursor : undefined
    pages++
    if (cursor !== undefined && pages >= maxUsagePages) partial = true
  } while (cursor !== undefined && pages < maxUsagePages)
  return {
    days: [...days].map(([day, v]) => ({ day, ...v })),
    models: [...models].map(([model, v]) => ({ model, ...v })).sort((a, b) => b.spend - a.spend || b.tasks - a.tasks),
    partial,
    rows
  }
}

/** A bar chart: one bar per item, its value labelled in the title (hover) and for screen readers. */
const Bars = (props: {
  readonly title: string
  readonly items: ReadonlyArray<{ readonly label: string; readonly value: number; readonly text: string }>
  readonly tick?: (label: string, index: number) => string | undefined
}) => {
  const width = 600
  const height = 160
  const max = Math.max(...props.items.map((i) => i.value), 0)
  const slot = width / Math.max(props.items.length, 1)
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      {max === 0 ? <Empty>Nothing in this period.</Empty> : (
        <svg viewBox={`0 0 ${width} ${height + 20}`} role="img" aria-label={props.title} preserveAspectRatio="none">
          <line x1="0" y1={height} x2={width} y2={height} class="axis" />
          {props.items.map((item, index) => {
            const h = max === 0 ? 0 : Math.max((item.value / max) * (height - 10), item.value > 0 ? 2 : 0)
            const tick = props.tick?.(item.label, index)
            return (
              <g key={item.label}>
                <rect x={index * slot + slot * 0.15} y={height - h} width={slot * 0.7} height={h} class="bar">
                  <title>{`${item.label}: ${item.text}`}</title>
                </rect>
                {tick === undefined ? null : (
                  <text x={index * slot + slot / 2} y={height + 14} text-anchor={index === 0 ? "start" : "middle"} class="tick">{tick}</text>
                )}
              </g>
            )
          })}
        </svg>
      )}
    </figure>
  )
}

/** The usage charts. */
const UsageCharts = () => {
  const loaded = useLoad(loadUsage, [])
  return (
    <div class="card">
      <div class="row spread">
        <h2>Usage, last {windowDays} days <span class="muted small">({timeZone})</span></h2>
        <button
          type="button"
          disabled={loaded.value === undefined}
          onClick={() => loaded.value !== undefined && download(`mediagate-usage-${localDay(new Date())}.csv`, toCsv(loaded.value.rows))}
        >
          Export usage CSV
        </button>
      </div>
      <Show loaded={loaded}>
        {(usage) => (
          <>
            {usage.partial ? <p class="muted small">Charts show the newest {maxUsagePages * 100} tasks of the period.</p> : null}
            <div class="charts">
              <Bars
                title="Spend per day"
                items={usage.days.map((d) => ({ label: d.day, value: d.spend, text: money(d.spend) }))}
                tick={(label, i) => i % 7 === 0 ? label.slice(5) : undefined}
              />
              <Bars
                title="Tasks per day"
                items={usage.days.map((d) => ({ label: d.day, value: d.tasks, text: `${d.tasks} tasks` }))}
                tick={(label, i) => i % 7 === 0 ? label.slice(5) : undefined}
              />
            </div>
            {usage.models.length === 0 ? <Empty>No tasks in the last {windowDays} days.</Empty> : (
              <Table class="by-model" caption="Per model" columns={["Model", ["Tasks", "num"], ["Spend", "num"], "Share of spend"]}>
                {usage.models.map((m) => {
                  const total = usage.models.reduce((s, x) => s + x.spend, 0)
                  const share = total === 0 ? 0 : m.spend / total
                  return (
                    <tr key={m.model}>
                      <td>{m.model}</td>
                      <td class="num">{m.tasks}</td>
                      <td class="num" title={moneyExact(m.spend)}>{money(m.spend)}</td>
                      <td>
                        <svg class="share" viewBox="0 0 100 8" role="img" aria-label={`${Math.round(share * 100)}%`}>
                          <rect x="0" y="0" width={Math.max(share * 100, 0.5)} height="8" class="bar" />
                        </svg>
                      </td>
                    </tr>
                  )
                })}
              </Table>
            )}
          </>
        )}
      </Show>
    </div>
  )
}

const kindLabel: Record<LedgerKind, string> = {
  charge: "Charge",
  refund: "Refund",
  top_up: "Top-up",
  adjustment: "Adjustment"
}

/** Every entry of the ledger (of a kind), for the CSV export. */
const allEntries = async (kind: LedgerKind | undefined) => {
  const entries: Array<LedgerEntry> = []
  let cursor: string | undefined
  do {
    const page = await keyCall((client) =>
      client.balance.ledger({ limit: 100, ...(kind === undefined ? {} : { kind }), ...(cursor === undefined ? {} : { cursor }) })
    )
    for (const entry of page.data) entries.push(entry)
    cursor = page.pagination.hasMore && page.pagination.cursor !== null ? page.pagination.cursor : undefined
  } while (cursor !== undefined)
  return entries
}

/** The ledger with paging, a kind filter and a CSV export. */
const LedgerTable = () => {
  const [kind, setKind] = useState<LedgerKind | undefined>(undefined)
  const pager = usePager()
  const loaded = useLoad(
    () =>
      keyCall((client) => client.balance.ledger({ limit: 20, ...(kind === undefined ? {} : { kind }), ...pager.params })),
    [kind, pager.cursor]
  )
  const exporting = useSubmit()
  return (
    <div class="card">
      <div class="row spread">
        <h2>Ledger</h2>
        <div class="row">
          <Field label="Kind">
            <Select
              name="kind"
              value={kind ?? ""}
              none="All"
              options={ledgerKinds}
              label={(k) => kindLabel[k]}
              onChange={(e) => {
                const value = e.currentTarget.value
                setKind(value === "" ? undefined : value as LedgerKind)
                pager.reset()
              }}
            />
          </Field>
          <ActionButton
            submission={exporting}
            run={() =>
              allEntries(kind).then((entries) =>
                download(
                  `mediagate-ledger-${localDay(new Date())}.csv`,
                  toCsv([
                    ["id", "created_at", "kind", "amount_usd", "task_id", "key_id", "month", "description"],
                    ...entries.map((e) => [e.id, e.created_at, e.kind, e.amount, e.task_id, e.key_id, e.month, e.description])
                  ])
                )
              )}
          >
            Export ledger CSV
          </ActionButton>
        </div>
      </div>
      {exporting.error === undefined ? null : <ErrorBox error={exporting.error} />}
      <ShowPage loaded={loaded} pager={pager} empty={<>No ledger entries{kind === undefined ? "" : ` of kind ${kindLabel[kind]}`}.</>}>
        {(entries) => (
          <Table class="ledger" columns={[`When (${timeZone})`, "Kind", ["Amount", "num"], "Task", "Description"]}>
            {entries.map((entry) => (
              <tr key={entry.id} data-kind={entry.kind}>
                <td>{time(entry.created_at)}</td>
                <td>{kindLabel[entry.kind]}</td>
                <td class={`num ${entry.amount < 0 ? "negative" : "positive"}`} title={moneyExact(entry.amount)}>{money(entry.amount)}</td>
                <td class="mono small">{entry.task_id === null ? "—" : <Link to={`/tasks/${entry.task_id}`}>{entry.task_id}</Link>}</td>
                <td>{entry.description}</td>
              </tr>
            ))}
          </Table>
        )}
      </ShowPage>
    </div>
  )
}

/** The balance view. */
export const BalanceView = () => {
  const loaded = useLoad(() => keyCall((client) => client.balance.get()), [])
  return (
    <section>
      <ViewHeader title="Balance and usage" />
      <Show
        loaded={loaded}
        hint={(error) => error.code === "KEY_PERMISSION_DENIED" ? "Reading the balance needs a key with balance:read." : undefined}
      >
        {(balance) => (
          <div class="stats">
            <Stat label="Balance" value={money(balance.balance)} title={moneyExact(balance.balance)} testid="balance" note={balance.billingMode} />
            <Stat
              label="Spent this month (UTC)"
              value={money(balance.monthToDateSpend)}
              title={moneyExact(balance.monthToDateSpend)}
              note={balance.monthlySpendLimit === null ? "no monthly limit" : `of ${money(balance.monthlySpendLimit)} monthly limit`}
            />
            <Stat
              label="Auto top-up"
              value={balance.autoTopUpEnabled ? "On" : "Off"}
              note={balance.autoTopUpEnabled ? `${money(balance.autoTopUpAmount)} when below ${money(balance.autoTopUpThreshold)}` : "—"}
            />
          </div>
        )}
      </Show>
      <UsageCharts />
      <LedgerTable />
      <p class="muted small">Updated {time(new Date().toISOString())}.</p>
    </section>
  )
}
