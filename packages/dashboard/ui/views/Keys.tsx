/**
 * API keys: the account's keys (never their secrets), creation with every option (permissions, providers, IP
 * whitelist, spend limit, expiry, environment, rate limits) with the full key shown once, and revocation. What a
 * key cannot do is explained next to the form, and a refusal says why.
 */
import type { ApiKey, ApiKeyCreated, RequestBody } from "@mediagate/client"
import { useState } from "preact/hooks"
import { keyCall } from "../client.js"
import { Check, Checks, ConfirmButton, ErrorBox, Field, FormCard, SecretOnce, ShowList, Table, useFields, useLoad, useSubmit, ViewHeader } from "../components.js"
import { money, time } from "../format.js"
import { permissionNames, taskFamilies } from "../generated/catalog.js"

type PermissionName = typeof permissionNames[number]
type Permissions = ApiKey["permissions"]

const permissionHelp: Record<PermissionName, string> = {
  "video:create": "create video tasks",
  "image:create": "create image, audio and music tasks",
  "tasks:read": "read and list tasks",
  "tasks:write": "retry and cancel tasks",
  "voices:read": "list voices",
  "balance:read": "read the balance and the ledger",
  "api-keys:write": "create, list and revoke keys",
  "webhooks:write": "manage webhooks and their deliveries"
}

/** What the permissions of a key grant, in words. */
const describePermissions = (permissions: Permissions): string => {
  // full access: no permission named and no provider list (the contract's `ApiKey.isFullAccess`)
  if (permissionNames.every((name) => permissions[name] === undefined) && permissions.providers === undefined) {
    return "Full access"
  }
  const names = permissionNames.filter((n) => permissions[n] === true)
  const providers = permissions.providers === undefined ? "" : ` · providers: ${permissions.providers.join(", ") || "none"}`
  return `${names.length === 0 ? "every permission" : names.join(", ")}${providers}`
}

/** Why a key may be refused: the rules of docs/security.md, in a user's words. */
export const KeyRules = () => (
  <aside class="card rules" aria-label="What a key cannot do">
    <h2>What a key cannot do</h2>
    <ul>
      <li>Grant more than the key that creates it: permissions, providers, spend limit, rate limits and expiry of a new key stay within yours (no escalation). Creating keys needs <code>api-keys:write</code>.</li>
      <li>Act outside its permissions: a key without <code>tasks:write</code> cannot retry or cancel; without <code>video:create</code> it cannot create videos; with a provider list, only those providers.</li>
      <li>Spend beyond its spend limit (or the account's monthly limit, or a prepaid balance): such tasks are refused with <code>SPEND_LIMIT_EXCEEDED</code> / <code>INSUFFICIENT_BALANCE</code>.</li>
      <li>Be used from another address when it has an IP whitelist, or after it expires or is revoked (revoking a key revokes the keys created with it).</li>
      <li>Be read again: the full key is shown once, at creation. Test keys (<code>mg_test_</code>) run in the free sandbox and are never charged.</li>
      <li>Reach the operator API (<code>/admin/v1</code>): that takes the admin token.</li>
    </ul>
  </aside>
)

const CreateForm = (props: { readonly onCreated: (created: ApiKeyCreated) => void }) => {
  const fields = useFields({ name: "", ipWhitelist: "", spendLimit: "", expiresAt: "", requestsPerMinute: "", maxInFlightTasks: "" })
  const { expiresAt, ipWhitelist, maxInFlightTasks, name, requestsPerMinute, spendLimit } = fields.values
  const [environment, setEnvironment] = useState<"" | "live" | "test">("")
  const [full, setFull] = useState(true)
  const [permissions, setPermissions] = useState<ReadonlyArray<PermissionName>>(["tasks:read"])
  const [providers, setProviders] = useState<ReadonlyArray<typeof taskFamilies[number]>>([])
  const [restrictProviders, setRestrictProviders] = useState(false)
  const submit = (_: HTMLFormElement, key: string) => {
    const payload: { -readonly [K in keyof RequestBody<"apiKeys.create">]: RequestBody<"apiKeys.create">[K] } = { name }
    if (environment !== "") payload.environment = environment
    if (!full || restrictProviders) {
      const granted: Record<string, unknown> = {}
      if (!full) for (const p of permissions) granted[p] = true
      if (restrictProviders) granted["providers"] = providers
      payload.permissions = granted as Permissions
    }
    const whitelist = ipWhitelist.split(/[\s,]+/).filter((s) => s !== "")
    if (whitelist.length > 0) payload.ipWhitelist = whitelist
    if (spendLimit !== "") payload.spendLimit = Number(spendLimit)
    // a local time as typed, sent as the instant it is here (an unreadable one goes as typed: the API says why)
    if (expiresAt !== "") {
      const instant = new Date(expiresAt)
      payload.expiresAt = Number.isNaN(instant.getTime()) ? expiresAt : instant.toISOString()
    }
    if (requestsPerMinute !== "" || maxInFlightTasks !== "") {
      payload.rateLimit = {
        ...(requestsPerMinute === "" ? {} : { requestsPerMinute: Number(requestsPerMinute) }),
        ...(maxInFlightTasks === "" ? {} : { maxInFlightTasks: Number(maxInFlightTasks) })
      }
    }
    return keyCall((client) => client.apiKeys.create(payload, { idempotencyKey: key })).then((created) => {
        fields.set({ name: "" })
        props.onCreated(created)
      })
  }
  return (
    <FormCard
      label="Create a key"
      onSubmit={submit}
      hint={(error) =>
        error.code === "KEY_PERMISSION_DENIED" || error.code === "VALIDATION_ERROR"
          ? "A new key cannot grant more than the key you signed in with: see “What a key cannot do”."
          : undefined}
      actions={(busy) => <button type="submit" class="primary" disabled={busy}>Create key</button>}
    >
      <Field label="Name">
        <input type="text" required maxLength={100} {...fields.bind("name")} />
      </Field>
      <Field label="Environment" help="Default: the environment of the key you signed in with">
        <select name="environment" value={environment} onChange={(e) => setEnvironment(e.currentTarget.value as "" | "live" | "test")}>
          <option value="">Same as mine</option>
          <option value="live">live (charged)</option>
          <option value="test">test (free sandbox)</option>
        </select>
      </Field>
      <fieldset>
        <legend>Permissions</legend>
        <Check name="full" checked={full} onChange={setFull}>Full access (everything my key may do)</Check>
        {full ? null : (
          <Checks
            name="permission"
            options={permissionNames}
            chosen={permissions}
            onChange={setPermissions}
            label={(p) => <><code>{p}</code> <span class="muted small">{permissionHelp[p]}</span></>}
          />
        )}
      </fieldset>
      <fieldset>
        <legend>Providers</legend>
        <Check name="restrictProviders" checked={restrictProviders} onChange={setRestrictProviders}>Only some providers</Check>
        {restrictProviders ? <Checks name="provider" options={taskFamilies} chosen={providers} onChange={setProviders} /> : null}
      </fieldset>
      <Field label="IP whitelist (optional)" help="Addresses or CIDR ranges, separated by spaces or commas">
        <textarea rows={2} {...fields.bind("ipWhitelist")} />
      </Field>
      <div class="grid2">
        <Field label="Spend limit, USD (optional)">
          <input type="number" min="0" step="0.01" {...fields.bind("spendLimit")} />
        </Field>
        <Field label="Expires (optional, your time zone)">
          <input type="datetime-local" {...fields.bind("expiresAt")} />
        </Field>
        <Field label="Requests per minute (optional)">
          <input type="number" min="1" step="1" {...fields.bind("requestsPerMinute")} />
        </Field>
        <Field label="Tasks in flight (optional)">
          <input type="number" min="1" step="1" {...fields.bind("maxInFlightTasks")} />
        </Field>
      </div>
    </FormCard>
  )
}

/** The key list. */
export const KeyList = () => {
  const loaded = useLoad(() => keyCall((client) => client.apiKeys.list()), [])
  const [created, setCreated] = useState<ApiKeyCreated | undefined>(undefined)
  const action = useSubmit()
  return (
    <section>
      <ViewHeader title="API keys" />
      {created === undefined ? null : <SecretOnce title={`The key “${created.name}”`} value={created.key} onDone={() => setCreated(undefined)} />}
      {action.error === undefined ? null : <ErrorBox error={action.error} />}
      <ShowList
        loaded={loaded}
        empty="No keys to show."
        hint={(error) => error.code === "KEY_PERMISSION_DENIED" ? "Listing keys needs a key with api-keys:write." : undefined}
      >
        {(keys) => (
          <Table
            class="keys cards"
            columns={["Name", "Key", "Permissions", ["Spent / limit", "num"], "Expires", "Last used", "Actions"]}
          >
            {keys.map((key) => (
              <tr key={key.id} data-key={key.id}>
                {/* each cell's content in one element: on a narrow screen a cell is a grid of its label and content */}
                <td data-label="Name">
                  <div>{key.name}<div class="muted small">{key.environment} · created {time(key.createdAt)}</div></div>
                </td>
                <td data-label="Key" class="mono"><div>{key.maskedKey}</div></td>
                <td data-label="Permissions">
                  <div>
                    {describePermissions(key.permissions)}
                    {key.ipWhitelist.length === 0 ? null : <div class="muted small">IPs: {key.ipWhitelist.join(", ")}</div>}
                  </div>
                </td>
                <td data-label="Spent / limit" class="num">
                  <div>{money(key.spent)} / {key.spendLimit === null ? "no limit" : money(key.spendLimit)}</div>
                </td>
                <td data-label="Expires"><div>{key.expiresAt === null ? "never" : time(key.expiresAt)}</div></td>
                <td data-label="Last used"><div>{time(key.lastUsedAt)}</div></td>
                <td>
                  <ConfirmButton
                    label="Revoke"
                    confirm="Confirm revoke"
                    onConfirm={() => action.submit(() => keyCall((client) => client.apiKeys.delete(key.id)).then(loaded.reload))}
                  />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </ShowList>
      <div class="split">
        <CreateForm
          onCreated={(key) => {
            setCreated(key)
            loaded.reload()
          }}
        />
        <KeyRules />
      </div>
    </section>
  )
}
