/**
 * The accounts conformance suite, run on every backend (memory, SQLite, PostgreSQL): authentication in the order of
 * decisions.md §5, whitelists, stored hashes only, batched lastUsedAt, key creation without escalation, list/revoke,
 * idempotent creation, the admin API and the bootstrap.
 */
import { describe } from "@effect/vitest"
import { accountsAdminSuite } from "./AccountsAdminSuite.js"
import { accountsAuthenticationSuite } from "./AccountsAuthenticationSuite.js"
import { accountsIdempotencySuite } from "./AccountsIdempotencySuite.js"
import { accountsKeyCacheSuite } from "./AccountsKeyCacheSuite.js"
import { accountsKeyCreationSuite } from "./AccountsKeyCreationSuite.js"
import { accountsKeyListSuite } from "./AccountsKeyListSuite.js"
import { accountsKeyTreeSuite } from "./AccountsKeyTreeSuite.js"
import type { Backend } from "./AccountsSuiteSupport.js"

export { type Backend, Calls, Dump } from "./AccountsSuiteSupport.js"

/** Runs the suite on one backend: the cases of each concern, in this order. */
export const accountsSuite = (name: string, backend: Backend) => {
  describe(`accounts (${name})`, () => {
    accountsAuthenticationSuite(backend)
    accountsKeyCreationSuite(backend)
    accountsKeyCacheSuite(backend)
    accountsKeyTreeSuite(backend)
    accountsKeyListSuite(backend)
    accountsIdempotencySuite(backend)
    accountsAdminSuite(backend)
  })
}
