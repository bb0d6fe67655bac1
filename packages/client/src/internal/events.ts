/**
 * Server-sent events read from a response body (the `text/event-stream` format of the HTML standard): each event's
 * `id`, `event`, `data` and `retry` fields as sent; comment lines and events without fields are skipped.
 */

/** One event: the fields it had (`data` lines joined with a line feed). */
export interface ServerEvent {
  readonly id?: string
  readonly event?: string
  readonly data?: string
  readonly retry?: string
}

/** The events of `body` in order; the body is cancelled when the reader stops early. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  let fields: Record<string, string> = {}
  try {
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) return
      buffer += decoder.decode(chunk.value, { stream: true })
      let end: number
      while ((end = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1))
        if (line === "") {
          if (Object.keys(fields).length > 0) yield fields
          fields = {}
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":")
          const name = colon === -1 ? line : line.slice(0, colon)
          const value = colon === -1 ? "" : line.slice(colon + (line[colon + 1] === " " ? 2 : 1))
          fields[name] = name === "data" && fields["data"] !== undefined ? `${fields["data"]}\n${value}` : value
        }
      }
    }
  } finally {
    // an early stop (a terminal state, a break, an abort) closes the connection
    await reader.cancel().catch(() => undefined)
  }
}
