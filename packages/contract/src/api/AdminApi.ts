/**
 * The operator API (`/admin/v1`, decisions.md §5): accounts, credits and keys; accounts, keys, tasks and webhook
 * deliveries across accounts and the system status (docs/operations.md "Operator endpoints and CLI"). Enabled only
 * when an admin token is configured.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Account, AccountCreate, AccountUpdate, CreditRequest } from "../Account.js"
import {
  AccountListQuery,
  AdminDelivery,
  AdminDeliveryListQuery,
  AdminTask,
  AdminTaskListQuery,
  AdminTaskSummary,
  SystemStatus
} from "../Admin.js"
import { ApiKeyCreate, ApiKeyCreated, ApiKeyRecord } from "../ApiKey.js"
import { Deleted, page, success } from "../Envelope.js"
import { AccountNotFound, ApiKeyNotFound, ServiceUnavailable, TaskNotFound, ValidationError } from "../Errors.js"
import { AdminAuthentication } from "../Security.js"
import { PathId } from "./Common.js"

const AccountResponse = success(Account, "AccountResponse")

/**
 * The admin endpoints.
 *
 * @since 0.1.0
 * @category api
 */
export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createAccount", "/accounts")
      .setPayload(AccountCreate)
      .addSuccess(AccountResponse, { status: 201 })
      .addError(ValidationError.wire)
      .annotate(OpenApi.Summary, "Create an account")
  )
  .add(
    HttpApiEndpoint.get("getAccount", "/accounts/:id")
      .setPath(PathId)
      .addSuccess(AccountResponse)
      .addError(AccountNotFound.wire)
      .annotate(OpenApi.Summary, "Read an account")
  )
  .add(
    HttpApiEndpoint.patch("updateAccount", "/accounts/:id")
      .setPath(PathId)
      .setPayload(AccountUpdate)
      .addSuccess(AccountResponse)
      .addError(Schema.Union(AccountNotFound.wire, ValidationError.wire))
      .annotate(OpenApi.Summary, "Change an account's name or billing settings")
  )
  .add(
    HttpApiEndpoint.post("credit", "/accounts/:id/credits")
      .setPath(PathId)
      .setPayload(CreditRequest)
      .addSuccess(AccountResponse)
      .addError(Schema.Union(AccountNotFound.wire, ValidationError.wire))
      .annotate(OpenApi.Summary, "Credit an account (a ledger entry)")
  )
  .add(
    HttpApiEndpoint.post("createKey", "/accounts/:id/api-keys")
      .setPath(PathId)
      .setPayload(ApiKeyCreate)
      .addSuccess(success(ApiKeyCreated, "AdminApiKeyCreatedResponse"), { status: 201 })
      .addError(Schema.Union(AccountNotFound.wire, ValidationError.wire))
      .annotate(OpenApi.Summary, "Create a key for an account (no escalation rules)")
  )
  .add(
    HttpApiEndpoint.get("listAccounts", "/accounts")
      .setUrlParams(AccountListQuery)
      .addSuccess(page(Account, "AccountListResponse"))
      .addError(ValidationError.wire)
      .annotate(OpenApi.Summary, "List accounts with their balance, newest first (search: id or name prefix)")
  )
  .add(
    HttpApiEndpoint.get("listKeys", "/accounts/:id/api-keys")
      .setPath(PathId)
      .addSuccess(success(Schema.Array(ApiKeyRecord), "AdminApiKeyListResponse"))
      .addError(AccountNotFound.wire)
      .annotate(OpenApi.Summary, "List the unrevoked keys of an account (never the secrets)")
  )
  .add(
    HttpApiEndpoint.del("revokeKey", "/api-keys/:id")
      .setPath(PathId)
      .addSuccess(success(Deleted, "AdminApiKeyDeletedResponse"))
      .addError(ApiKeyNotFound.wire)
      .annotate(OpenApi.Summary, "Revoke a key of any account and the keys derived from it")
  )
  .add(
    HttpApiEndpoint.get("listTasks", "/tasks")
      .setUrlParams(AdminTaskListQuery)
      .addSuccess(page(AdminTaskSummary, "AdminTaskListResponse"))
      .addError(ValidationError.wire)
      .annotate(
        OpenApi.Summary,
        "List tasks across accounts, newest first, with the task list's filters and account_id"
      )
  )
  .add(
    HttpApiEndpoint.get("getTask", "/tasks/:id")
      .setPath(PathId)
      .addSuccess(success(AdminTask, "AdminTaskResponse"))
      .addError(TaskNotFound.wire)
      .annotate(OpenApi.Summary, "Read a task of any account, with its claims, lease and timings")
  )
  .add(
    HttpApiEndpoint.get("listDeliveries", "/webhooks/deliveries")
      .setUrlParams(AdminDeliveryListQuery)
      .addSuccess(page(AdminDelivery, "AdminDeliveryListResponse"))
      .addError(ValidationError.wire)
      .annotate(OpenApi.Summary, "List webhook deliveries across accounts, newest first, with their attempts")
  )
  .add(
    HttpApiEndpoint.get("system", "/system")
      .addSuccess(success(SystemStatus, "SystemStatusResponse"))
      .annotate(OpenApi.Summary, "Tasks by state, queue depth, webhook backlog and worker nodes")
  )
  .addError(ServiceUnavailable.wire)
  .middleware(AdminAuthentication)
  .prefix("/admin/v1")
  .annotate(OpenApi.Title, "Admin")
  .annotate(OpenApi.Description, "Operator API, enabled only when MEDIAGATE_ADMIN_TOKEN is set")
{}
