/**
 * Serving the dashboard: the static assets built by `scripts/build.mjs` (Preact, bundled by esbuild into
 * `dist/assets`) at `/dashboard`, as an `HttpApp` to mount next to the API (docs/dashboard.md).
 *
 * - `GET|HEAD /dashboard/assets/<name>`: a built file; hashed names are immutable (cached for a year), a gzip twin
 *   is sent to clients that accept it; an unknown asset is a 404 in the API's error envelope.
 * - `GET|HEAD` of any other path under `/dashboard`: `index.html` (the client-side routes), never cached.
 * - other methods: 405 with `Allow: GET, HEAD`.
 *
 * Mount paths: every URL of `index.html` is relative to the page's own URL ({@link rootOf}), so the dashboard works
 * wherever the host mounts the app that serves it (`app.use("/media", ...)`, a proxy prefix) without knowing the
 * prefix. The page is therefore written per request (a template with two placeholders; the few variants are kept).
 *
 * Every answer carries a strict Content-Security-Policy ({@link contentSecurityPolicy}: no inline script or style,
 * `default-src 'self'`, `connect-src 'self'`, `frame-ancestors 'none'`), `X-Content-Type-Options: nosniff` and
 * `Referrer-Policy: no-referrer`. The files are read once, on the first request, and kept in memory (≈ 0.6 MB);
 * a request costs a map lookup. Without a build the dashboard answers 503 saying how to build it.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/**
 * Where the dashboard is served by default.
 *
 * @since 0.1.0
 * @category constants
 */
export const basePath = "/dashboard"

/**
 * The Content-Security-Policy of every answer. Result previews may come from the file store's own host (S3 or a
 * CDN: `https:`); everything else only from this origin.
 *
 * @since 0.1.0
 * @category constants
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob: https:",
  "media-src 'self' blob: https:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

/**
 * The routes the dashboard answers, for a router or an envelope that lists known routes.
 *
 * @since 0.1.0
 * @category routing
 */
export const routes = (base: string = basePath) =>
  [
    { method: "GET", path: base },
    { method: "HEAD", path: base },
    { method: "GET", path: `${base}/*` },
    { method: "HEAD", path: `${base}/*` }
  ] as const

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The path the dashboard is served under, as the app serving it sees requests (default {@link basePath}). A host
   * that mounts that app under a prefix strips the prefix; the browser's URLs keep it.
   */
  readonly basePath?: string
  /**
   * The API's base path as the browser sees it (`/mg`; the dashboard calls `<apiBase>/api/v1/...` and
   * `<apiBase>/admin/v1/...`). Default: the root of the app serving the dashboard, wherever it is mounted (the
   * page's URL minus `basePath` and what follows it): right whenever one app serves both, as `@mediagate/node`'s does.
   */
  readonly apiBase?: string
  /** The directory of the built assets (default: this package's `dist/assets`). */
  readonly assetsDir?: string
}

/**
 * The built assets of this package.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultAssetsDir: string = fileURLToPath(new URL("../dist/assets/", import.meta.url))

interface Asset {
  readonly body: Uint8Array
  readonly gzip: Uint8Array | undefined
  readonly contentType: string
  readonly immutable: boolean
}

const contentTypes: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  html: "text/html; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  map: "application/json; charset=utf-8",
  json: "application/json; charset=utf-8",
  txt: "text/plain; charset=utf-8"
}

const contentTypeOf = (name: string) =>
  contentTypes[name.slice(name.lastIndexOf(".") + 1)] ?? "application/octet-stream"

/** A name esbuild hashed (`app-4F2K7XQZ.js`): its content never changes. */
const isHashed = (name: string) => /-[A-Z0-9]{8}\.[a-z]+$/.test(name)

const escapeAttribute = (value: string) => value.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * The way from a page at `path` (as the app serving it sees it: no mount prefix, no query) back to that app's root,
 * as a relative URL: `./` for `/dashboard`, `../` for `/dashboard/` and `/dashboard/tasks`, `../../` for
 * `/dashboard/tasks/task_1`. The browser resolves it against the page's URL, mount prefix included; a proxy or host
 * that strips a prefix leaves the part below it, which is all this counts.
 *
 * @since 0.1.0
 * @category utils
 */
export const rootOf = (path: string): string => {
  const depth = path.slice(0, path.lastIndexOf("/") + 1).split("/").length - 2
  return depth <= 0 ? "./" : "../".repeat(depth)
}

/** The built files, and `index.html` as a template: `%ROOT%` (see {@link rootOf}) left for each request. */
const load = (dir: string, base: string, apiBase: string | undefined) =>
  Effect.promise(async () => {
    const names = await readdir(dir).catch(() => [] as Array<string>)
    if (!names.includes("index.html")) return undefined
    const assets = new Map<string, Asset>()
    let page = ""
    // a file gone since the folder was listed (a build replacing it meanwhile) is left out
    const read = (name: string) => readFile(join(dir, name)).catch(() => undefined)
    for (const name of names) {
      if (name.endsWith(".gz")) continue
      const body: Uint8Array | undefined = await read(name)
      if (body === undefined) continue
      if (name === "index.html") {
        page = new TextDecoder().decode(body)
          .replaceAll("%ASSETS%", `%ROOT%${escapeAttribute(`${base}/assets`.slice(1))}`)
          .replaceAll("%BASE%", escapeAttribute(base))
          .replaceAll("%API_BASE%", escapeAttribute(apiBase ?? ""))
      }
      const gzip = name !== "index.html" && names.includes(`${name}.gz`) ? await read(`${name}.gz`) : undefined
      assets.set(name, { body, gzip, contentType: contentTypeOf(name), immutable: isHashed(name) })
    }
    return { assets, index: index(page) }
  })

/** `index.html` for the page at a path: its relative URLs filled in, one copy kept per depth (up to 32). */
const index = (page: string) => {
  const kept = new Map<string, Asset>()
  const encoder = new TextEncoder()
  return (path: string): Asset => {
    const root = rootOf(path)
    const cached = kept.get(root)
    if (cached !== undefined) return cached
    const asset = {
      body: encoder.encode(page.replaceAll("%ROOT%", root)),
      gzip: undefined,
      contentType: contentTypes["html"]!,
      immutable: false
    }
    if (kept.size < 32) kept.set(root, asset)
    return asset
  }
}

const securityHeaders = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

const envelope = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ success: false, error: { code, message } }, {
    status,
    headers: { ...securityHeaders, "cache-control": "no-store", ...headers }
  })

const respond = (asset: Asset, request: HttpServerRequest.HttpServerRequest) => {
  const gzip = asset.gzip !== undefined && /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
  return HttpServerResponse.uint8Array(gzip ? asset.gzip! : asset.body, {
    contentType: asset.contentType,
    headers: {
      ...securityHeaders,
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      vary: "accept-encoding",
      ...(gzip ? { "content-encoding": "gzip" } : {})
    }
  })
}

/**
 * The dashboard: whether a path is its own, and the app answering such paths.
 *
 * @since 0.1.0
 * @category models
 */
export interface Dashboard {
  /** The path the dashboard is served under. */
  readonly basePath: string
  /** Whether a request path (no query) belongs to the dashboard. */
  readonly owns: (path: string) => boolean
  /** Answers a request whose path the dashboard {@link owns}. */
  readonly httpApp: HttpApp.Default
}

/**
 * Makes the dashboard's app (nothing is read until the first request).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Dashboard => {
  const base = (options.basePath ?? basePath).replace(/\/+$/, "")
  const assetsPrefix = `${base}/assets/`
  const loaded = Effect.runSync(Effect.cached(load(options.assetsDir ?? defaultAssetsDir, base, options.apiBase)))
  const owns = (path: string) => path === base || path.startsWith(`${base}/`)
  const httpApp: HttpApp.Default = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return Effect.succeed(
        envelope(405, "METHOD_NOT_ALLOWED", `${request.method} is not allowed on the dashboard; allowed: GET, HEAD`, {
          allow: "GET, HEAD"
        })
      )
    }
    return Effect.map(loaded, (built) => {
      if (built === undefined) {
        return envelope(
          503,
          "SERVICE_UNAVAILABLE",
          "the dashboard is not built: run `npm run build` (or `node packages/dashboard/scripts/build.mjs`)"
        )
      }
      const query = request.url.indexOf("?")
      const path = query === -1 ? request.url : request.url.slice(0, query)
      if (path.startsWith(assetsPrefix)) {
        const asset = built.assets.get(path.slice(assetsPrefix.length))
        return asset === undefined || asset.contentType === contentTypes["html"]
          ? envelope(404, "NOT_FOUND", `no dashboard asset ${path}`)
          : respond(asset, request)
      }
      return respond(built.index(path), request)
    })
  })
  return { basePath: base, owns, httpApp }
}

/**
 * Puts the dashboard in front of an app: requests under its base path go to the dashboard, every other request to
 * `app` (whose 404s stay its own).
 *
 * @since 0.1.0
 * @category routing
 */
export const route = <E, R>(app: HttpApp.Default<E, R>, dashboard: Dashboard = make()): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const query = request.url.indexOf("?")
    return dashboard.owns(query === -1 ? request.url : request.url.slice(0, query)) ? dashboard.httpApp : app
  })
