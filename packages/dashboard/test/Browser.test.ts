/**
 * The dashboard in a real browser: headless Chromium (Debian's `chromium`, or `CHROMIUM_PATH`) driven by
 * playwright-core, against the composed server on SQLite and PostgreSQL with the simulated upstreams. Without a
 * browser the suite says so and skips, except under `CI=true`, where it fails (`.ci/run` installs Chromium).
 *
 * Journeys (issue 15): sign in (the key in sessionStorage only, never in the URL or a cookie) and the first view
 * timed; a task created through the API finishing in the list without a reload; its preview and download link;
 * retrying a failed task; the XSS probes shown as text; registering a webhook (secret once), the test event, a
 * failed delivery (410) with its attempt, and its replay; creating a key with every option (shown once) and
 * revoking it; the balance, ledger, charts and CSV export; the operator crediting an account and seeing the balance
 * change, the system view and the task inspector; the operator's channels (issue 17: create a simulated and a relay
 * channel, the relay's key never shown again, edit, disable/enable, delete; light, dark and 375 px); 375 px width,
 * dark mode; sign out. Each journey saves a screenshot to `test-results/dashboard/`.
 *
 * The playground (issue 38): an image and a video task started from it and watched live, a double click that is one
 * task, a field's rule, an upload, "Run again", markup shown as text.
 *
 * The journeys live in `browser/customer.ts`, `browser/playground.ts` and `browser/operator.ts` (in this order, one page per database: each
 * goes on from where the one before left the page); `browser/support.ts` holds what they share.
 */
import { afterAll, beforeAll, describe } from "@effect/vitest"
import * as Chromium from "@mediagate/testing/chromium"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { customerJourneys } from "./browser/customer.js"
import { operatorJourneys } from "./browser/operator.js"
import { playgroundJourneys } from "./browser/playground.js"
import { type Session, shots } from "./browser/support.js"
import { databases, type Running, start } from "./server.js"

const describeBrowser = Chromium.available("dashboard browser suite") ? describe : describe.skip

for (const database of databases) {
  describeBrowser(`dashboard in Chromium (${database})`, () => {
    let running: Running
    let browser: Browser
    let context: BrowserContext
    let page: Page
    const cspViolations: Array<string> = []
    const shot = (name: string, target: Page = page) =>
      target.screenshot({ path: `${shots}${database}-${name}.png`, fullPage: true })

    beforeAll(async () => {
      // a channel key lets the operator store a relay channel's credentials (the channels journey)
      running = await start(database, { MEDIAGATE_CHANNEL_KEY: "5a".repeat(32) })
      // live tasks are charged: give the account money
      await running.mediagate.admin.credit(running.keys.account, { amount: 50, note: "test funds" })
      browser = await Chromium.launch()
      context = await browser.newContext({
        viewport: { width: 1280, height: 900 },
        colorScheme: "light",
        acceptDownloads: true
      })
      page = await context.newPage()
      page.on("console", (message) => {
        if (/Content.Security.Policy|Refused to/i.test(message.text())) cspViolations.push(message.text())
      })
    })
    afterAll(async () => {
      await browser?.close()
      await running?.close()
    })

    const session: Session = {
      database,
      get running() {
        return running
      },
      get context() {
        return context
      },
      get page() {
        return page
      },
      cspViolations,
      shot
    }
    customerJourneys(session)
    playgroundJourneys(session)
    operatorJourneys(session)
  })
}
