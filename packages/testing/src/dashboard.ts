/**
 * Checks of the dashboard served below a mount path (an absolute URL with the host's or a proxy's prefix,
 * `http://127.0.0.1:3000/media`), for the suites that embed Mediagate: the embedding examples, the consumer test.
 *
 * - {@link expectAssetsBelow}: over plain HTTP, the page at three depths names assets that resolve below the mount.
 * - {@link expectSignIn}: in Chromium, sign in, a task listed and opened through the mounted API, no 404.
 */
import { expect } from "@effect/vitest"
import type { Browser, Page } from "playwright-core"

/**
 * The dashboard's page below `mount` at three depths (`/dashboard`, `/dashboard/`, a task's page) names a script,
 * a stylesheet and an app root (`<meta name="mediagate-root">`) that resolve below the mount, and the assets answer.
 */
export const expectAssetsBelow = async (mount: string): Promise<void> => {
  const prefix = new URL(mount).pathname.replace(/\/+$/, "")
  for (const page of ["/dashboard", "/dashboard/", "/dashboard/tasks/task_1?status=failed"]) {
    const url = `${mount}${page}`
    const answer = await fetch(url)
    expect(answer.status, url).toBe(200)
    const html = await answer.text()
    const script = /<script type="module" src="([^"]+)">/.exec(html)?.[1]
    const style = /<link rel="stylesheet" href="([^"]+)">/.exec(html)?.[1]
    const root = /<meta name="mediagate-root" content="([^"]+)">/.exec(html)?.[1]
    expect([script, style, root].every((found) => found !== undefined), url).toBe(true)
    expect(new URL(root!, url).pathname, url).toBe(`${prefix}/`)
    for (const [asset, contentType] of [[script!, "text/javascript"], [style!, "text/css"]] as const) {
      const resolved = new URL(asset, url)
      const expected = new RegExp(`^${prefix}/dashboard/assets/app-[A-Z0-9]{8}\\.`)
      expect(resolved.pathname, `${url}: ${asset}`).toMatch(expected)
      const fetched = await fetch(resolved)
      expect(fetched.status, `${url}: ${asset}`).toBe(200)
      expect(fetched.headers.get("content-type")).toContain(contentType)
    }
  }
}

/**
 * In Chromium: the dashboard at `<mount>/dashboard` signs in with `key` and lists the task; its page opens by a
 * client-side route and again from the server (two levels down); `<mount>/dashboard/` lists it too. Every request
 * of the pages to their origin stays below the mount, none answers 404 or fails, and the API is called there.
 */
export const expectSignIn = async (
  browser: Browser,
  mount: string,
  key: string,
  task: { readonly id: string; readonly prompt: string }
): Promise<void> => {
  const { origin, pathname } = new URL(mount)
  const prefix = pathname.replace(/\/+$/, "")
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page: Page = await context.newPage()
  const answers: Array<{ readonly url: string; readonly status: number }> = []
  const failed: Array<string> = []
  page.on("response", (response) => answers.push({ url: response.url(), status: response.status() }))
  page.on("requestfailed", (request) => {
    // a load the page's own navigation cancels (a result preview still loading at the reload) is not a failure
    const reason = request.failure()?.errorText ?? "failed"
    if (reason !== "net::ERR_ABORTED") failed.push(`${request.url()}: ${reason}`)
  })
  try {
    await page.goto(`${mount}/dashboard`)
    await page.getByRole("form", { name: "Sign in" }).waitFor()
    await page.getByLabel("API key").fill(key)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Tasks" }).waitFor()
    await page.locator(`tr[data-task="${task.id}"]`).waitFor()
    expect(new URL(page.url()).pathname.startsWith(`${prefix}/dashboard`)).toBe(true)
    // a client-side route, then the same page loaded from the server two levels down
    await page.getByRole("link", { name: task.id }).click()
    await page.getByTestId("task-input").waitFor()
    expect(new URL(page.url()).pathname).toBe(`${prefix}/dashboard/tasks/${task.id}`)
    await page.reload()
    await page.getByTestId("task-input").waitFor()
    expect(await page.getByTestId("task-input").textContent()).toContain(task.prompt)
    // with a trailing slash: the signed-in view again
    await page.goto(`${mount}/dashboard/`)
    await page.locator(`tr[data-task="${task.id}"]`).waitFor()
  } finally {
    await context.close()
  }
  expect(failed).toEqual([])
  expect(answers.filter((answer) => answer.status === 404)).toEqual([])
  const own = answers.filter((answer) => answer.url.startsWith(origin))
  expect(own.filter((answer) => !answer.url.startsWith(`${origin}${prefix}/`))).toEqual([])
  const calls = own.filter((answer) => answer.url.startsWith(`${origin}${prefix}/api/v1/`))
  expect(calls.some((answer) => answer.url.includes(`/api/v1/tasks/${task.id}`) && answer.status === 200)).toBe(true)
  expect(own.some((answer) => /\/dashboard\/assets\/app-[A-Z0-9]{8}\.js$/.test(answer.url) && answer.status === 200))
    .toBe(true)
}
