/**
 * The operator console's routes: a chunk of its own, loaded by the app (`app.tsx`) only once the admin token is in
 * use, so an account's key holders never download the operator views.
 */
import { Link } from "../components.js"
import { AccountDetail, AccountList, AdminTaskDetail, AdminTasks, SystemView } from "./Admin.js"
import { ChannelList } from "./Channels.js"

const NotFound = () => (
  <section>
    <h1>Not found</h1>
    <p>This page does not exist. <Link to="/admin/accounts">Go to the accounts</Link>.</p>
  </section>
)

/** The operator view of a path under `/admin`. */
export const adminRoute = (path: string) => {
  const parts = path.split("/").filter((p) => p !== "").slice(1)
  const [section, id] = parts
  if (parts.length === 0 || (section === "accounts" && id === undefined)) return <AccountList />
  if (section === "accounts" && id !== undefined) return <AccountDetail id={decodeURIComponent(id)} />
  if (section === "system") return <SystemView />
  if (section === "channels" && id === undefined) return <ChannelList />
  if (section === "tasks" && id === undefined) return <AdminTasks />
  if (section === "tasks" && id !== undefined) return <AdminTaskDetail id={decodeURIComponent(id)} />
  return <NotFound />
}
