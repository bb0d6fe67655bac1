/**
 * The playground journey in Chromium (after the customer journeys, signed in with the live key): forms built from
 * the API's schema, the price before a submit, a field's rule checked before sending, a double click that is one
 * task and one charge, an image and a video task watched live with their results previewed (the video played), a
 * file uploaded as a data URI, "Run again", and markup typed into the new fields shown as text.
 */
import { expect, it } from "@effect/vitest"
import { api, type Session, xssImage } from "./support.js"

/** A 1×1 PNG. */
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64"
)

/** Registers the playground journey on `session`. */
export const playgroundJourneys = (session: Session) => {
  it("starts an image and a video task from the playground, live; a double click is one task and one charge", async () => {
    const { page, running, shot } = session
    const total = async () => (await api(running, "GET", "/api/v1/tasks?limit=1")).body.pagination.total as number
    const charges = async () =>
      (await api(running, "GET", "/api/v1/balance/ledger?kind=charge&limit=100")).body.data as Array<
        { task_id: string }
      >

    await page.goto(`${running.baseUrl}/dashboard/tasks`)
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Playground" }).click()
    await page.getByRole("heading", { name: "Playground" }).waitFor()
    const form = page.getByRole("form", { name: "Generation" })
    await form.getByLabel("Endpoint").locator("option").first().waitFor({ state: "attached" })
    // every generation endpoint of the API, from its schema
    const endpoints = await form.getByLabel("Endpoint").locator("option").allTextContents()
    expect(endpoints).toContain("vendor4/text-to-image")
    expect(endpoints).toContain("vendor3/text-to-video")
    expect(endpoints.length).toBeGreaterThanOrEqual(15)

    // an image: the model, the prompt, a size; the price once the required fields are there
    await form.getByLabel("Endpoint").selectOption("vendor4/text-to-image")
    await form.getByLabel("Model").selectOption("vendor4-4-0")
    expect(page.url()).toContain("endpoint=vendor4%2Ftext-to-image")
    await page.getByText("Fill in the required fields to see the price.").waitFor()
    // the model's defaults before a required field is filled (an estimate with stand-ins for them)
    await page.waitForFunction(() =>
      document.querySelector("[data-field=\"watermark\"] option")?.textContent === "Default (true)"
    )
    await form.getByLabel("prompt (required)").fill("a paper lantern on a lake [sim:delay=2]")
    await form.getByLabel("size").fill("1K")
    const price = page.getByTestId("price")
    await price.waitFor()
    expect(await price.textContent()).toMatch(/^\$\d+\.\d{2} USD · about \d+ s$/)
    // the effective defaults of the model, from the estimate: watermark's default is shown on its field
    expect(await form.getByLabel("watermark").locator("option").first().textContent()).toBe("Default (true)")

    // a double click: one task, one charge
    const before = await total()
    const chargesBefore = (await charges()).length
    await form.getByRole("button", { name: "Generate" }).dblclick()
    const card = page.locator(".live-task")
    await card.waitFor()
    const link = card.locator("a.mono")
    const id = (await link.textContent())!
    expect(id).toMatch(/^task_/)
    // live: the task's states arrive on its stream until it succeeds; its image is previewed
    await card.locator("[data-status=\"succeeded\"]").waitFor({ timeout: 30_000 })
    await page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>(".live-task figure.preview img")
      return img !== null && img.complete && img.naturalWidth > 0
    })
    expect(await total()).toBe(before + 1)
    const charged = await charges()
    expect(charged.length).toBe(chargesBefore + 1)
    expect(charged.filter((entry) => entry.task_id === id)).toHaveLength(1)
    await shot("playground-image")

    // "Run again": a new task with the same input
    await form.getByRole("button", { name: "Run again (a new task)" }).click()
    await page.waitForFunction((first) => {
      const shown = document.querySelector(".live-task a.mono")?.textContent
      return shown !== undefined && shown !== null && shown !== first
    }, id)
    expect(await total()).toBe(before + 2)

    // a field's rule is checked before anything is sent, with the field's name
    await form.getByLabel("Endpoint").selectOption("vendor3/text-to-video")
    await form.getByLabel("prompt (required)").fill("a ferry crossing at dawn [sim:delay=2]")
    await form.getByLabel("seed").fill("5")
    const message = form.locator("[data-field=\"seed\"] [role=\"alert\"]")
    await message.waitFor()
    expect(await message.textContent()).toBe("input.seed: must be at least 10000")
    const tasksNow = await total()
    await form.getByRole("button", { name: "Generate" }).click()
    expect(await total()).toBe(tasksNow)
    await form.getByLabel("seed").fill("")

    // a video: watched live, then played in place
    await price.waitFor()
    const imageTask = await card.locator("a.mono").textContent()
    await form.getByRole("button", { name: "Generate" }).click()
    await page.waitForFunction(
      (before) => document.querySelector(".live-task a.mono")?.textContent !== before,
      imageTask
    )
    // live: while it waits or runs, its state and progress (from its event stream)
    await card.getByLabel("Progress").waitFor({ timeout: 10_000 })
    expect(await card.getByTestId("live-state").textContent()).toMatch(/^\d+%/)
    await page.waitForFunction(() => document.querySelector(".live-task [data-status=\"succeeded\"]") !== null, null, {
      timeout: 30_000
    })
    const video = card.locator("figure.preview video")
    await video.waitFor()
    const played = await video.evaluate(async (element: HTMLVideoElement) => {
      element.muted = true
      await element.play()
      await new Promise((resolve) => setTimeout(resolve, 500))
      return { duration: element.duration, time: element.currentTime, width: element.videoWidth }
    })
    expect(played.duration).toBeGreaterThan(0)
    expect(played.time).toBeGreaterThan(0)
    expect(played.width).toBeGreaterThan(0)
    await shot("playground-video")

    // a file uploaded to a data URI; markup typed into the fields is text, never markup
    await form.getByLabel("Endpoint").selectOption("vendor4/image-to-image")
    await form.getByLabel("prompt (required)").fill(`${xssImage} [sim:delay=0]`)
    await form.getByLabel("Upload image", { exact: true }).setInputFiles({
      name: "one.png",
      mimeType: "image/png",
      buffer: png
    })
    await page.getByTestId("image-file").waitFor()
    await form.getByLabel("size").fill("1K")
    await price.waitFor()
    const videoTask = await card.locator("a.mono").textContent()
    await form.getByRole("button", { name: "Generate" }).click()
    // the card shows the new task (not the video's, which had succeeded), then its end
    await page.waitForFunction(
      (before) => {
        const shown = document.querySelector(".live-task a.mono")?.textContent
        return shown !== before && document.querySelector(".live-task [data-status=\"succeeded\"]") !== null
      },
      videoTask,
      { timeout: 30_000 }
    )
    const uploadedTask = (await card.locator("a.mono").textContent())!
    const read = await api(running, "GET", `/api/v1/tasks/${uploadedTask}`)
    expect(read.body.data.input.image).toMatch(/^data:image\/png;base64,/)
    expect(read.body.data.input.prompt).toBe(`${xssImage} [sim:delay=0]`)
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
    expect(session.cspViolations).toEqual([])
  })
}
