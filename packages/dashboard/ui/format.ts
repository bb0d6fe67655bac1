/**
 * How values are shown: money to the cent with its unit, times in the viewer's time zone, sizes and durations.
 */

const usd = new Intl.NumberFormat(undefined, {
  style: "currency",
  currency: "USD",
  minimumFractionDigits: 2,
  maximumFractionDigits: 2
})
const usdExact = new Intl.NumberFormat(undefined, {
  style: "currency",
  currency: "USD",
  minimumFractionDigits: 2,
  maximumFractionDigits: 6
})

/** USD to the cent, with the unit: `$12.50 USD`. */
export const money = (amount: number | null | undefined): string =>
  amount === null || amount === undefined ? "—" : `${usd.format(amount)} USD`

/** USD with every micro-dollar (for a title). */
export const moneyExact = (amount: number): string => `${usdExact.format(amount)} USD`

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" })

/** The viewer's time zone, e.g. `Europe/Paris`. */
export const timeZone: string = Intl.DateTimeFormat().resolvedOptions().timeZone

/** A timestamp in the viewer's time zone. */
export const time = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return "—"
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date)
}

/** The local calendar day of a timestamp, `YYYY-MM-DD`. */
export const localDay = (date: Date): string =>
  `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, "0")}-${String(date.getDate()).padStart(2, "0")}`

/** Seconds between two timestamps, in words. */
export const duration = (from: string | null, to: string | null): string => {
  if (from === null || to === null) return "—"
  const ms = new Date(to).getTime() - new Date(from).getTime()
  if (!Number.isFinite(ms)) return "—"
  return ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`
}

/** Bytes in words. */
export const bytes = (n: number): string =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`

/** A value as a CSV field. */
export const csvField = (value: unknown): string => {
  const text = value === null || value === undefined ? "" : String(value)
  // a leading =, +, - or @ would be a formula in a spreadsheet
  const safe = /^[=+\-@\t\r]/.test(text) && !/^-?\d/.test(text) ? `'${text}` : text
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll("\"", "\"\"")}"` : safe
}

/** Rows as CSV text. */
export const toCsv = (rows: ReadonlyArray<ReadonlyArray<unknown>>): string =>
  rows.map((row) => row.map(csvField).join(",")).join("\r\n") + "\r\n"

/** Offers text as a file download. */
export const download = (name: string, text: string, type = "text/csv;charset=utf-8"): void => {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const link = document.createElement("a")
  link.href = url
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
