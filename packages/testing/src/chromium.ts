/**
 * Headless Chromium for the browser suites (the dashboard's, the embedding examples'): Debian's `chromium` at
 * `/usr/bin/chromium`, or `CHROMIUM_PATH`, driven by `playwright-core`. Without a browser a suite says so and
 * skips ({@link available}); under `CI=true` it fails instead (`.ci/run` installs Chromium with
 * `apt-get install -y --no-install-recommends chromium`).
 */
import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"

const candidates = [
  process.env["CHROMIUM_PATH"],
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome"
]

/** The browser found, if any. */
export const executablePath: string | undefined = candidates.find((path): path is string =>
  path !== undefined && path !== "" && existsSync(path)
)

/** Whether a missing browser fails the suites (`CI=true`) instead of skipping them. */
export const required: boolean = process.env["CI"] === "true"

/**
 * Whether a browser suite runs: with a browser, or under CI (where {@link launch} then fails). When it does not,
 * this prints why, naming `suite`.
 */
export const available = (suite: string): boolean => {
  if (executablePath !== undefined || required) return true
  console.warn(`${suite} skipped: no Chromium found (apt-get install chromium, or set CHROMIUM_PATH)`)
  return false
}

/** Starts headless Chromium; fails, saying how to install it, when there is none. */
export const launch = (): Promise<Browser> => {
  if (executablePath === undefined) {
    return Promise.reject(new Error("no Chromium found: apt-get install -y --no-install-recommends chromium"))
  }
  return chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage"] })
}
