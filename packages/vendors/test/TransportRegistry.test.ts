/**
 * The transport registry (`transports/index.ts`) against what restates it: the contract's `channelTransports` (the
 * admin API's Schema, which cannot import the registry) names the same transports in the same order, and
 * docs/channels.md's tables list every transport with its submit recovery. Also the facts that must agree within
 * an entry.
 */
import { describe, expect, it } from "@effect/vitest"
import { Channel } from "@mediagate/contract"
import { readFileSync } from "node:fs"
import { checkBaseUrl } from "../src/ChannelAdmin.js"
import * as Transports from "../src/transports/index.js"

const names = Transports.registry.map((transport) => transport.name)

/** The rows of the markdown table whose header starts with `header`, as cells without their backticks. */
const tableRows = (markdown: string, header: string): Array<Array<string>> => {
  const lines = markdown.split("\n")
  const start = lines.findIndex((line) => line.startsWith(header))
  expect(start).toBeGreaterThanOrEqual(0)
  const rows: Array<Array<string>> = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break
    rows.push(line.split("|").slice(1, -1).map((cell) => cell.trim().replace(/`/g, "")))
  }
  return rows
}

describe("the transport registry", () => {
  it("names the contract's transports, in its order", () => {
    expect(names).toEqual([...Channel.channelTransports])
  })

  it("holds facts that agree: defaults are URLs a channel could give, callback recovery needs callbacks", () => {
    for (const transport of Transports.registry) {
      if (typeof transport.baseUrl === "object") expect(checkBaseUrl(transport.baseUrl.default)).toBeUndefined()
      if (transport.submitRecovery === "callback") expect(transport.callbacks).toBe(true)
      if (transport.baseUrl === "none") expect(transport.submitRecovery).toBe("in-process")
      expect(transport.summary).not.toBe("")
    }
  })

  it("is what docs/channels.md lists: every transport, and each one's submit recovery", () => {
    const doc = readFileSync(new URL("../../../docs/channels.md", import.meta.url), "utf8")
    expect(tableRows(doc, "| Transport | Reaches |").map(([name]) => name)).toEqual(names)
    const recovery = tableRows(doc, "| Transport | Strategy")
    expect(Object.fromEntries(recovery.map(([name, strategy]) => [name, strategy]))).toEqual(
      Object.fromEntries(Transports.registry.map((transport) => [transport.name, transport.submitRecovery]))
    )
  })
})
