/**
 * The operator API (`/admin/v1`, decisions.md §5): accounts, credits and keys. Enabled only when an admin token is
 * configured.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Account, AccountCreate, AccountUpdate, CreditRequest } from "../Account.js"
import { ApiKeyCreate, ApiKeyCreated } from "../ApiKey.js"
import { success } from "../Envelope.js"
import { AccountNotFound, ServiceUnavailable, ValidationError } from "../Errors.js"
import { AdminAuthentication } from "../Security.js"
import { PathId } from "./Common.js"

const AccountResponse = success(Account, "AccountResponse")

/** The admin endpoints. */
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
  .addError(ServiceUnavailable.wire)
  .middleware(AdminAuthentication)
  .prefix("/admin/v1")
  .annotate(OpenApi.Title, "Admin")
  .annotate(OpenApi.Description, "Operator API, enabled only when MEDIAGATE_ADMIN_TOKEN is set")
{}
