/**
 * Client-side routes under the mount path (`/dashboard/tasks/task_…`): the History API, links that navigate
 * without a reload, and the current path as a Preact hook. The server answers every such path with index.html.
 */
import { useEffect, useState } from "preact/hooks"
import { base, type CredentialKind } from "./session.js"

const listeners = new Set<() => void>()

/** The current route: the path below the mount, `/` at least, and its query. */
export const current = (): { readonly path: string; readonly query: URLSearchParams } => {
  const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : location.pathname
  return { path: path === "" ? "/" : path, query: new URLSearchParams(location.search) }
}

/** Goes to a route (`/tasks?status=failed`). */
export const navigate = (to: string, options: { readonly replace?: boolean } = {}): void => {
  const url = base + (to.startsWith("/") ? to : `/${to}`)
  if (options.replace === true) history.replaceState(null, "", url)
  else history.pushState(null, "", url)
  for (const listener of listeners) listener()
  window.scrollTo(0, 0)
}

/** The current route, re-rendering on navigation. */
export const useRoute = () => {
  const [route, setRoute] = useState(current)
  useEffect(() => {
    const update = () => setRoute(current())
    listeners.add(update)
    window.addEventListener("popstate", update)
    return () => {
      listeners.delete(update)
      window.removeEventListener("popstate", update)
    }
  }, [])
  return route
}

/** The console a path belongs to: the operator's under `/admin`, else the account's. */
export const consoleOf = (path: string): CredentialKind =>
  path === "/admin" || path.startsWith("/admin/") ? "admin" : "key"

/** The href of a route (for real links: open in a new tab works). */
export const href = (to: string): string => base + to

/** A click handler that navigates in place unless a modifier asks for a new tab. */
export const onLink = (to: string) => (event: MouseEvent): void => {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  event.preventDefault()
  navigate(to)
}
