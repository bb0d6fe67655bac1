/**
 * The dashboard's operator journeys in Chromium, after the customer's on the same page: crediting an account, the
 * system view and the task inspector, the channels (create, edit, disable, enable, delete), a test key's console
 * against the operator's environment filter, and signing out with no CSP violation reported.
 */
import { expect, it } from "@effect/vitest"
import { adminToken } from "../server.js"
import { api, built, createImage, scriptsLoaded, type Session, shots, waitForStatus } from "./support.js"

/** Registers the operator journeys on `session` (after the customer journeys, whose tasks they inspect). */
export const operatorJourneys = (session: Session) => {
  it("operator: credits an account and sees the balance change; system view and task inspector", async () => {
    const { page, running, shot } = session
    await page.goto(`${running.baseUrl}/dashboard/admin`)
    await page.getByRole("form", { name: "Operator sign-in" }).waitFor()
    await page.getByLabel("Admin token").fill(adminToken)
    // the operator console is a chunk of its own, loaded once the admin token is in use
    const scripts = await scriptsLoaded(page, async () => {
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.getByRole("heading", { name: "Accounts" }).waitFor()
    })
    expect(scripts).toContain(built().operator)
    const create = page.getByRole("form", { name: "Create an account" })
    await create.getByLabel("Name").fill("Acme Studio")
    await create.getByLabel(/Opening credit/).fill("3")
    await create.getByLabel("Billing mode").selectOption("postpaid")
    await create.getByRole("button", { name: "Create account" }).click()
    const acme = page.locator("tr[data-account]").filter({ hasText: "Acme Studio" })
    await acme.waitFor()
    expect(await acme.textContent()).toContain("$3.00 USD")
    expect(await acme.textContent()).toContain("postpaid")
    await page.getByLabel(/Search/).fill(running.keys.account)
    await page.getByRole("button", { name: "Search" }).click()
    const row = page.locator(`tr[data-account="${running.keys.account}"]`)
    await row.waitFor()
    await shot("15-operator-accounts")
    await row.getByRole("link").click()
    const shown = page.getByTestId("account-balance")
    await shown.waitFor()
    const before = (await api(running, "GET", "/api/v1/balance")).body.data.balance as number
    const form = page.getByRole("form", { name: "Credit the account" })
    await form.getByLabel("Amount, USD").fill("5")
    await form.getByLabel(/Note/).fill("goodwill")
    await form.getByRole("button", { name: "Credit" }).click()
    await page.getByText(/Credited \$5\.00 USD/).waitFor()
    const after = (await api(running, "GET", "/api/v1/balance")).body.data.balance as number
    expect(after).toBeCloseTo(before + 5, 6)
    const cents = (n: number) => `$${n.toFixed(2)} USD`
    await page.getByTestId("account-balance").filter({ hasText: cents(after) }).waitFor()
    await shot("16-operator-credited")
    const settings = page.getByRole("form", { name: "Limits and billing mode" })
    await settings.getByLabel(/Monthly spend limit/).fill("100")
    await settings.getByRole("button", { name: "Save" }).click()
    await page.getByText("limit $100.00 USD").waitFor()
    expect((await api(running, "GET", "/api/v1/balance")).body.data.monthlySpendLimit).toBe(100)
    // the credit limit of a postpaid account (issue 35)
    await settings.getByLabel("Billing mode").selectOption("postpaid")
    await settings.getByLabel(/Credit limit/).fill("250")
    await settings.getByRole("button", { name: "Save" }).click()
    await page.getByText("credit limit $250.00 USD").waitFor()
    const adminAccount = await api(
      running,
      "GET",
      `/admin/v1/accounts/${running.keys.account}`,
      undefined,
      adminToken
    )
    expect(adminAccount.body.data).toMatchObject({ billingMode: "postpaid", creditLimit: 250 })
    await page.getByRole("link", { name: "System" }).click()
    await page.getByRole("heading", { name: "Tasks by state" }).waitFor()
    await page.getByRole("heading", { name: "Nodes" }).waitFor()
    await shot("17-operator-system")
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tasks" }).click()
    await page.getByRole("heading", { name: "Task inspector" }).waitFor()
    const taskLink = page.locator("a[href^=\"/dashboard/admin/tasks/task_\"]").first()
    // found by the start of its id, applied on Enter
    const taskId = (await taskLink.textContent())!
    await page.getByLabel("Task id starts with").fill(taskId.slice(0, 22))
    await page.getByLabel("Task id starts with").press("Enter")
    await page.waitForFunction(() => document.querySelectorAll("tr[data-task]").length === 1)
    expect(await page.locator("tr[data-task]").getAttribute("data-task")).toBe(taskId)
    await taskLink.click()
    await page.getByText("Claims · polls").waitFor()
    // the channel a task ran on is the operators' to see (issue 17); a live task of these journeys ran on the
    // environment's default channel, a test task on none
    const channelFact = page.getByText("Upstream channel · job").locator("xpath=following-sibling::dd[1]")
    expect(await channelFact.textContent()).toMatch(/^(default:simulated|—) · /)
    await shot("18-operator-task")
  })

  it("operator: creates, edits, disables, re-enables and deletes channels; a relay key is never shown again", async () => {
    const { context, database, page, running, shot } = session
    const admin = (method: string, path: string, body?: unknown) => api(running, method, path, body, adminToken)
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Channels" }).click()
    await page.getByRole("heading", { name: "Channels" }).waitFor()
    await page.getByText("No channels: every family runs on its default upstream").waitFor()
    // the environment's default channel: listed, marked, read-only
    const environment = page.locator("tr[data-channel=\"default:simulated\"]")
    await environment.waitFor()
    expect(await environment.textContent()).toContain("from the environment")
    expect(await environment.getByRole("button").count()).toBe(0)
    // a simulated channel for vendor1, weight 3
    const create = page.getByRole("form", { name: "Create a channel" })
    await create.getByLabel("Name").fill("vendor1 simulated")
    await create.getByLabel("Transport").selectOption("simulated")
    await create.locator("input[name=\"family\"][value=\"vendor1\"]").check()
    await create.getByLabel("Weight").fill("3")
    await create.getByRole("button", { name: "Create channel" }).click()
    const simulated = page.locator("tr[data-channel]").filter({ hasText: "vendor1 simulated" })
    await simulated.waitFor()
    await simulated.locator("[data-breaker=\"closed\"]").waitFor()
    expect(await simulated.locator("[data-breaker]").textContent()).toBe("closed")
    expect(await simulated.textContent()).toContain("no limit")
    expect(await page.getByText("No channels: every family runs on its default upstream").count()).toBe(0)
    const simulatedId = (await simulated.getAttribute("data-channel"))!
    expect(simulatedId).toMatch(/^ch_/)
    const stored = (await admin("GET", `/admin/v1/channels/${simulatedId}`)).body.data
    expect(stored).toMatchObject({
      name: "vendor1 simulated",
      transport: "simulated",
      families: ["vendor1"],
      weight: 3,
      concurrency: 0,
      enabled: true
    })
    // a vendor1 task runs on it: the row counts it in flight, and deleting the channel is refused meanwhile
    const busy = await api(running, "POST", "/api/v1/vendor1/text-to-video", {
      model: "vendor1-1-5-pro",
      input: { prompt: "a kite routed through a channel [sim:delay=800]", duration: 5 }
    })
    expect(busy.status, JSON.stringify(busy.body)).toBe(201)
    await simulated.getByTestId("in-flight").filter({ hasText: /^1$/ }).waitFor({ timeout: 15_000 })
    await simulated.getByRole("button", { name: "Delete" }).click()
    await simulated.getByRole("button", { name: "Confirm delete" }).click()
    const refusal = page.getByRole("alert").filter({ hasText: "CHANNEL_IN_USE" })
    await refusal.waitFor()
    expect(await refusal.textContent()).toContain("HTTP 409")
    expect(await simulated.count()).toBe(1)
    // a relay channel with an API key: after saving, only its hint is shown
    const relayKey = "relay-secret-key-Zq7Xw9Pk4Lm2"
    await create.getByLabel("Name").fill("vendor1 relay")
    await create.getByLabel("Transport").selectOption("relay")
    await create.locator("input[name=\"family\"][value=\"vendor1\"]").check()
    await create.getByLabel("Priority").fill("-1")
    await create.getByLabel("Concurrency").fill("4")
    await create.getByLabel("Base URL").fill("https://upstream.example.com")
    await create.getByLabel("API key").fill(relayKey)
    expect(await create.getByLabel("API key").getAttribute("type")).toBe("password")
    await create.getByRole("button", { name: "Create channel" }).click()
    const relay = page.locator("tr[data-channel]").filter({ hasText: "vendor1 relay" })
    await relay.waitFor()
    const relayId = (await relay.getAttribute("data-channel"))!
    expect(await page.getByTestId("saved-hint").textContent()).toContain(relayKey.slice(-4))
    expect(await relay.getByTestId("credentials-hint").textContent()).toContain(relayKey.slice(-4))
    expect(await page.locator("body").innerText()).not.toContain(relayKey)
    expect(await page.content()).not.toContain(relayKey)
    expect(
      await page.locator("input").evaluateAll(
        (inputs, key) => inputs.some((i) => (i as HTMLInputElement).value === key),
        relayKey
      )
    ).toBe(false)
    expect(JSON.stringify((await admin("GET", "/admin/v1/channels")).body)).not.toContain(relayKey)
    const created = (await admin("GET", `/admin/v1/channels/${relayId}`)).body.data
    expect(created).toMatchObject({ transport: "relay", priority: -1, concurrency: 4, credentials_set: true })
    expect(created.credentials_hint).toContain(relayKey.slice(-4))
    expect(await relay.textContent()).toContain("https://upstream.example.com")
    // a fal channel (its base URL may be left out) with a mapping in the advanced settings: a mapping that does not
    // compile is refused by the API, naming the model and the expression, and the form keeps what was typed
    // the vendor1 task that ran on the simulated channel has ended before the next change (the usage report is read
    // again after each change on the page)
    await expect.poll(
      async () => (await api(running, "GET", `/api/v1/tasks/${busy.body.data.id}`)).body.data.status,
      {
        timeout: 30_000
      }
    ).toBe("succeeded")
    const advanced = create.getByLabel("Advanced settings (JSON, optional)")
    const mappingOf = (input: string) =>
      JSON.stringify({ mapping: { "vendor4-3-0-t2i": { target: "fal-ai/flux/dev", input } } })
    await create.getByLabel("Name").fill("vendor4 fal")
    await create.getByLabel("Transport").selectOption("fal")
    await create.locator("input[name=\"family\"][value=\"vendor4\"]").check()
    await create.getByLabel("API key").fill("fal-key-0123456789")
    await advanced.fill(mappingOf(`{ "prompt": `))
    await create.getByRole("button", { name: "Create channel" }).click()
    await page.getByRole("alert").filter({ hasText: "settings.mapping.vendor4-3-0-t2i.input" }).waitFor()
    await advanced.fill("{ not json")
    await create.getByRole("button", { name: "Create channel" }).click()
    await page.getByRole("alert").filter({ hasText: "Advanced settings: not JSON" }).waitFor()
    await advanced.fill(mappingOf(`{ "prompt": input.prompt }`))
    await create.getByRole("button", { name: "Create channel" }).click()
    const fal = page.locator("tr[data-channel]").filter({ hasText: "vendor4 fal" })
    await fal.waitFor()
    const falStored = (await admin("GET", `/admin/v1/channels/${await fal.getAttribute("data-channel")}`)).body.data
    expect(falStored).toMatchObject({
      transport: "fal",
      credentials_set: true,
      settings: { mapping: { "vendor4-3-0-t2i": { target: "fal-ai/flux/dev", input: `{ "prompt": input.prompt }` } } }
    })
    // the usage report shows the live task that ended on the simulated channel (charged, no upstream cost); the fal
    // channel goes (no vendor4 task may reach it)
    const usage = page.locator(`.channel-usage tr[data-usage="${simulatedId}/vendor1-1-5-pro"]`)
    await usage.waitFor()
    expect(await usage.textContent()).toContain("vendor1 simulated")
    expect(await usage.textContent()).toContain("not reported")
    await fal.getByRole("button", { name: "Delete" }).click()
    await fal.getByRole("button", { name: "Confirm delete" }).click()
    await fal.waitFor({ state: "detached" })
    await shot("19-channels-light")
    await page.emulateMedia({ colorScheme: "dark" })
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe("rgb(15, 18, 23)")
    await shot("20-channels-dark")
    await page.emulateMedia({ colorScheme: "light" })
    // edit with the key left empty: the stored key is kept
    await relay.getByRole("button", { name: "Edit vendor1 relay" }).click()
    const edit = page.getByRole("form", { name: "Edit the channel" })
    await edit.waitFor()
    expect(await edit.getByLabel("API key").inputValue()).toBe("")
    await edit.getByText("Leave empty to keep the stored key").waitFor()
    await edit.getByLabel("Priority").fill("2")
    await edit.getByRole("button", { name: "Save changes" }).click()
    await edit.waitFor({ state: "detached" })
    const edited = (await admin("GET", `/admin/v1/channels/${relayId}`)).body.data
    expect(edited).toMatchObject({
      priority: 2,
      credentials_set: true,
      concurrency: 4,
      settings: { base_url: "https://upstream.example.com" }
    })
    expect(edited.credentials_hint).toBe(created.credentials_hint)
    // the higher priority lists it first (once the list, read again after the save, is drawn)
    await expect.poll(() => page.locator("tr[data-channel]").first().getAttribute("data-channel"), { timeout: 5000 })
      .toBe(relayId)
    // disable, then enable again
    await relay.getByRole("button", { name: "Disable" }).click()
    await relay.locator("[data-enabled=\"false\"]").waitFor()
    const disabled = (await admin("GET", `/admin/v1/channels/${relayId}`)).body.data
    expect(disabled.enabled).toBe(false)
    // the reason the API records is shown with the state
    expect(typeof disabled.disabled_reason).toBe("string")
    await relay.locator(".disabled-reason").filter({ hasText: disabled.disabled_reason }).waitFor()
    await relay.getByRole("button", { name: "Enable" }).click()
    await relay.locator("[data-enabled=\"true\"]").waitFor()
    expect((await admin("GET", `/admin/v1/channels/${relayId}`)).body.data).toMatchObject({
      enabled: true,
      disabled_reason: null
    })
    // at 375 px, dark: no horizontal overflow of the page
    const phone = await context.browser()!.newContext({
      viewport: { width: 375, height: 812 },
      colorScheme: "dark",
      isMobile: true
    })
    try {
      const small = await phone.newPage()
      await small.goto(`${running.baseUrl}/dashboard/admin/channels`)
      await small.getByLabel("Admin token").fill(adminToken)
      await small.getByRole("button", { name: "Sign in" }).click()
      await small.locator(`tr[data-channel="${relayId}"]`).waitFor()
      expect(await small.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
      await small.screenshot({ path: `${shots}${database}-21-channels-phone.png`, fullPage: false })
    } finally {
      await phone.close()
    }
    // delete both, with a confirmation (the vendor1 task has finished: nothing in flight any more)
    await waitForStatus(running, busy.body.data.id, ["succeeded"])
    for (const [row, id] of [[relay, relayId], [simulated, simulatedId]] as const) {
      await row.getByRole("button", { name: "Delete" }).click()
      await row.getByRole("button", { name: "Confirm delete" }).click()
      await page.locator(`tr[data-channel="${id}"]`).waitFor({ state: "detached" })
      expect((await admin("GET", `/admin/v1/channels/${id}`)).status).toBe(404)
    }
    await page.getByText("No channels: every family runs on its default upstream").waitFor()
  })

  it("a test key's console is the test view (banner, test data only); the operator filters tasks by environment", async () => {
    const { page, running, shot } = session
    const live = await createImage(running, "a live heron")
    const test = await api(running, "POST", "/api/v1/vendor4/text-to-image", {
      model: "vendor4-4-0",
      input: { prompt: "a test heron", size: "1K" }
    }, running.keys.test)
    expect(test.status, JSON.stringify(test.body)).toBe(201)
    const testId = test.body.data.id as string
    await page.goto(`${running.baseUrl}/dashboard/tasks`)
    await page.getByRole("heading", { name: "Tasks" }).waitFor()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").fill(running.keys.test)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Tasks" }).waitFor()
    const banner = page.getByRole("status", { name: "Test mode" })
    await banner.waitFor()
    expect(await banner.textContent()).toContain("you see only test data")
    expect(await page.locator("header.top [data-environment]").textContent()).toBe("Test")
    await page.locator(`tr[data-task="${testId}"]`).waitFor()
    expect(await page.locator(`tr[data-task="${live}"]`).count()).toBe(0)
    // the live task's page is not found for a test key
    await page.goto(`${running.baseUrl}/dashboard/tasks/${live}`)
    await page.getByText("TASK_NOT_FOUND").waitFor()
    await shot("19-test-mode")
    // back to the live view
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").fill(running.keys.live)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.locator(`tr[data-task="${live}"]`).waitFor()
    expect(await page.locator(`tr[data-task="${testId}"]`).count()).toBe(0)
    expect(await page.getByRole("status", { name: "Test mode" }).count()).toBe(0)

    // the test/live switch (as Stripe's test mode), within one sign-in: without a test key it asks for one
    const toggle = page.getByRole("switch", { name: "Test data" })
    expect(await toggle.getAttribute("aria-checked")).toBe("false")
    await toggle.click()
    const ask = page.getByRole("form", { name: "View test data" })
    await ask.getByLabel("A test API key").fill(running.keys.live)
    await ask.getByRole("button", { name: "Use this key" }).click()
    expect(await ask.getByRole("alert").textContent()).toContain("That is not a test key")
    // a test key made for this tab, from the live key
    await ask.getByRole("button", { name: "Make a test key for this tab" }).click()
    await banner.waitFor()
    expect(await page.locator("header.top [data-environment]").textContent()).toBe("Test")
    expect(await toggle.getAttribute("aria-checked")).toBe("true")
    await page.locator(`tr[data-task="${testId}"]`).waitFor()
    expect(await page.locator(`tr[data-task="${live}"]`).count()).toBe(0)
    const kept = await page.evaluate(
      () => [sessionStorage.getItem("mediagate.apiKey"), sessionStorage.getItem("mediagate.apiKey.other")]
    )
    expect(kept[0]).toMatch(/^mg_test_/)
    expect(kept[1]).toBe(running.keys.live)
    // back and forth at once: both keys are kept in the tab
    await toggle.click()
    await page.locator(`tr[data-task="${live}"]`).waitFor()
    expect(await page.locator("header.top [data-environment]").textContent()).toBe("Live")
    expect(await page.getByRole("status", { name: "Test mode" }).count()).toBe(0)
    await toggle.click()
    await page.locator(`tr[data-task="${testId}"]`).waitFor()
    await shot("19b-test-switch")
    await toggle.click()
    await page.locator(`tr[data-task="${live}"]`).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem("mediagate.apiKey"))).toBe(running.keys.live)

    // the operator's task inspector: both environments, a column and a filter
    await page.goto(`${running.baseUrl}/dashboard/admin/tasks`)
    await page.getByRole("heading", { name: "Task inspector" }).waitFor()
    const testRow = page.locator(`tr[data-task="${testId}"]`)
    await testRow.waitFor()
    expect(await testRow.locator("[data-environment]").textContent()).toBe("Test")
    expect(await page.locator(`tr[data-task="${live}"] [data-environment]`).textContent()).toBe("Live")
    await page.getByLabel("Environment").selectOption("test")
    await page.locator(`tr[data-task="${live}"]`).waitFor({ state: "detached" })
    await testRow.waitFor()
    const environments = await page.locator("tr[data-task] [data-environment]").allTextContents()
    expect(environments.length).toBeGreaterThan(0)
    expect(new Set(environments)).toEqual(new Set(["Test"]))
    await shot("20-operator-tasks-test")

    // the page is in the address: 21 newer test tasks push this one to page 2; reload and Back keep their page
    for (let i = 0; i < 21; i++) {
      const more = await api(running, "POST", "/api/v1/vendor4/text-to-image", {
        model: "vendor4-4-0",
        input: { prompt: `a test heron, page ${i}`, size: "1K" }
      }, running.keys.test)
      expect(more.status).toBe(201)
    }
    await page.goto(`${running.baseUrl}/dashboard/tasks`)
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").fill(running.keys.test)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText(/^Page 1 · 20 shown of 22$/).waitFor()
    expect(await page.locator(`tr[data-task="${testId}"]`).count()).toBe(0)
    await page.getByRole("button", { name: "Older →" }).click()
    await page.locator(`tr[data-task="${testId}"]`).waitFor()
    const second = new URL(page.url())
    expect(second.searchParams.get("page")).toBe("2")
    expect(second.searchParams.getAll("cursor")).toHaveLength(1)
    await page.reload()
    await page.getByText(/^Page 2 · 2 shown of 22$/).waitFor()
    await page.locator(`tr[data-task="${testId}"]`).waitFor()
    await page.goBack()
    await page.getByText(/^Page 1 · 20 shown of 22$/).waitFor()
    expect(new URL(page.url()).searchParams.has("page")).toBe(false)
    await page.goForward()
    await page.locator(`tr[data-task="${testId}"]`).waitFor()
    await page.getByRole("button", { name: "← Newer" }).click()
    await page.getByText(/^Page 1 · 20 shown of 22$/).waitFor()
    // the live key's console again, as the next journey expects
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").fill(running.keys.live)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.locator(`tr[data-task="${live}"]`).waitFor()
    await page.goto(`${running.baseUrl}/dashboard/admin/tasks`)
    await page.getByRole("heading", { name: "Task inspector" }).waitFor()
  })

  it("signs out: the credentials are forgotten; no CSP violation was reported", async () => {
    const { cspViolations, page, running } = session
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("form", { name: "Operator sign-in" }).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem("mediagate.adminToken"))).toBeNull()
    await page.goto(`${running.baseUrl}/dashboard/tasks`)
    await page.getByRole("heading", { name: "Tasks" }).waitFor()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("form", { name: "Sign in" }).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem("mediagate.apiKey"))).toBeNull()
    expect(await page.evaluate(() => sessionStorage.getItem("mediagate.apiKey.other"))).toBeNull()
    expect(cspViolations).toEqual([])
  })
}
