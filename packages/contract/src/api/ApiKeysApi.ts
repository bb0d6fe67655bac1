/**
 * API keys (`/api/v1/api-keys`): create, list (extension), delete.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { ApiKeyCreate, ApiKeyCreated, ApiKeyRecord } from "../ApiKey.js"
import { Deleted, success } from "../Envelope.js"
import { ApiKeyNotFound, IdempotencyKeyReused, ValidationError } from "../Errors.js"
import { authenticated, IdempotencyHeaders, PathId } from "./Common.js"

/**
 * `/api/v1/api-keys`: create, list (extension), delete.
 *
 * @since 0.1.0
 * @category api
 */
export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.post("create", "/api-keys")
      .setPayload(ApiKeyCreate)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(success(ApiKeyCreated, "ApiKeyCreatedResponse"), { status: 201 })
      .addError(Schema.Union(ValidationError.wire, IdempotencyKeyReused.wire))
      .annotate(OpenApi.Summary, "Create a key; the full key is shown only in this response")
  )
  .add(
    HttpApiEndpoint.get("list", "/api-keys")
      .addSuccess(success(Schema.Array(ApiKeyRecord), "ApiKeyListResponse"))
      .annotate(OpenApi.Summary, "List the account's keys (extension; never the full keys)")
  )
  .add(
    HttpApiEndpoint.del("delete", "/api-keys/:id")
      .setPath(PathId)
      .addSuccess(success(Deleted, "ApiKeyDeletedResponse"))
      .addError(ApiKeyNotFound.wire)
      .annotate(OpenApi.Summary, "Delete (revoke) a key")
  )
  .pipe(authenticated)
  .annotate(OpenApi.Title, "API keys")
  .annotate(OpenApi.Description, "Keys of the calling account, within the calling key's own rights (no escalation)")
{}
