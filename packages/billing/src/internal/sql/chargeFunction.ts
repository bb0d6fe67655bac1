/**
 * PostgreSQL's charge function, `<prefix>billing_charge`: a batch of charges made in one call, and the version of
 * it that also checks a postpaid account's credit limit (created by billing's migrations; SQLite has none).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlStore from "@mediagate/persistence/SqlStore"
import * as Effect from "effect/Effect"
import { tables } from "./tables.js"

/** PostgreSQL's charge function: `<prefix>billing_charge` (see {@link createChargeFunction}). */
export const chargeFunction = (prefix: string = SqlStore.defaultPrefix): string => `${prefix}billing_charge`

/**
 * PostgreSQL: the function that makes a batch of charges in one call (SQLite: nothing; its charges run
 * synchronously on the write connection). `charges` is a JSON array of `{ account_id, key_id, task_id, amount,
 * description }`; `now_ms` and `month_text` are the charges' time and calendar month. It locks the accounts' rows
 * (in account order, one statement), then takes each charge in turn and answers one row for it, in order:
 * - `made`: the charge was written (the debit, its ledger entry, the spend of the key and its ancestors, or a new
 *   spend row for a key without one, and the month's spend); a charge of 0 is made and writes nothing;
 * - `deferred` (only with `defer_top_ups`): the charge would leave an account with auto top-up enabled below its
 *   threshold (or with none), so that a top-up may be due after it: it is not made, and the function stops there
 *   (the caller makes it and the charges after it in a transaction that can ask the payment provider);
 * - otherwise the charge is refused and writes nothing: `present` (the account exists), the account's row as it was
 *   (`billing_mode`, `balance_micros`, the monthly limit, the auto top-up settings), `funded` (postpaid, or prepaid
 *   with the balance covering the amount; an unknown mode funds nothing), `allowed` (no limit of the key's chain nor
 *   the monthly limit would be passed) and what the limits were checked on: the key or ancestor whose limit the
 *   charge would pass (`key_limit`, `key_spent`: the one with the least left), the month's spend (`month_spent`).
 * A made charge's row carries the same columns, read before the charge.
 */
export const createChargeFunction = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!SqlStore.columns(sql).pg) return
    const t = tables(prefix)
    yield* sql.unsafe(`CREATE FUNCTION ${chargeFunction(prefix)}(charges jsonb, now_ms bigint, month_text text,
  defer_top_ups boolean)
RETURNS TABLE (made boolean, deferred boolean, present boolean, funded boolean, allowed boolean, billing_mode text,
  balance_micros bigint, monthly_spend_limit_micros bigint, auto_top_up_enabled integer,
  auto_top_up_threshold_micros bigint, auto_top_up_amount_micros bigint, key_limit bigint, key_spent bigint,
  month_spent bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c jsonb;
  acct ${t.accounts}%ROWTYPE;
  amount bigint;
  k_id text;
  k_ancestors text;
  k_present boolean;
  k_chain text[];
BEGIN
  PERFORM 1 FROM ${t.accounts} WHERE account_id IN (SELECT e->>'account_id' FROM jsonb_array_elements(charges) AS e)
    ORDER BY account_id FOR UPDATE;
  FOR c IN SELECT e FROM jsonb_array_elements(charges) WITH ORDINALITY AS x(e, n) ORDER BY n LOOP
    amount := (c->>'amount')::bigint;
    made := false; deferred := false; present := NULL; funded := NULL; allowed := NULL; billing_mode := NULL;
    balance_micros := NULL; monthly_spend_limit_micros := NULL; auto_top_up_enabled := NULL;
    auto_top_up_threshold_micros := NULL; auto_top_up_amount_micros := NULL; key_limit := NULL; key_spent := NULL;
    month_spent := NULL;
    IF amount = 0 THEN
      made := true;
      RETURN NEXT;
      CONTINUE;
    END IF;
    k_id := c->>'key_id';
    SELECT * INTO acct FROM ${t.accounts} WHERE account_id = c->>'account_id';
    present := FOUND;
    IF NOT present THEN
      RETURN NEXT;
      CONTINUE;
    END IF;
    billing_mode := acct.billing_mode;
    balance_micros := acct.balance_micros;
    monthly_spend_limit_micros := acct.monthly_spend_limit_micros;
    auto_top_up_enabled := acct.auto_top_up_enabled;
    auto_top_up_threshold_micros := acct.auto_top_up_threshold_micros;
    auto_top_up_amount_micros := acct.auto_top_up_amount_micros;
    funded := CASE acct.billing_mode WHEN 'postpaid' THEN true WHEN 'prepaid' THEN acct.balance_micros >= amount
      ELSE false END;
    -- the key's chain: the key and its ancestors, their spend rows locked
    SELECT ancestors INTO k_ancestors FROM ${t.keySpend} WHERE key_id = k_id FOR UPDATE;
    k_present := FOUND;
    k_chain := ARRAY[k_id];
    IF k_present AND k_ancestors <> '[]' THEN
      k_chain := k_chain || ARRAY(SELECT jsonb_array_elements_text(k_ancestors::jsonb));
      PERFORM 1 FROM ${t.keySpend} WHERE key_id = ANY(k_chain) FOR UPDATE;
    END IF;
    SELECT s.spend_limit_micros, s.spent_micros INTO key_limit, key_spent FROM ${t.keySpend} AS s
      WHERE s.key_id = ANY(k_chain) AND s.spend_limit_micros IS NOT NULL AND s.spent_micros + amount > s.spend_limit_micros
      ORDER BY s.spend_limit_micros - s.spent_micros, s.key_id LIMIT 1;
    SELECT m.spent_micros INTO month_spent FROM ${t.monthSpend} AS m
      WHERE m.account_id = acct.account_id AND m.month = month_text;
    allowed := key_limit IS NULL AND (acct.monthly_spend_limit_micros IS NULL
      OR COALESCE(month_spent, 0) + amount <= acct.monthly_spend_limit_micros);
    IF funded AND allowed AND defer_top_ups AND acct.auto_top_up_enabled = 1
      AND NOT COALESCE(acct.balance_micros - amount >= acct.auto_top_up_threshold_micros, false) THEN
      deferred := true;
      RETURN NEXT;
      RETURN;
    END IF;
    IF funded AND allowed THEN
      made := true;
      UPDATE ${t.accounts} SET balance_micros = balance_micros - amount, updated_at = now_ms
        WHERE account_id = acct.account_id;
      INSERT INTO ${t.ledger} (account_id, kind, amount_micros, key_id, task_id, description, month, created_at)
        VALUES (acct.account_id, 'charge', -amount, k_id, c->>'task_id', c->>'description', month_text, now_ms);
      IF k_present THEN
        UPDATE ${t.keySpend} SET spent_micros = spent_micros + amount WHERE key_id = ANY(k_chain);
      ELSE
        INSERT INTO ${t.keySpend} (key_id, account_id, spend_limit_micros, spent_micros)
          VALUES (k_id, acct.account_id, NULL, amount)
          ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${t.keySpend}.spent_micros + excluded.spent_micros;
      END IF;
      INSERT INTO ${t.monthSpend} (account_id, month, spent_micros) VALUES (acct.account_id, month_text, amount)
        ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${t.monthSpend}.spent_micros + excluded.spent_micros;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$`)
  })

/** The arguments, answers and language of the charge function since the credit limit (`0004_credit_limit`). */
const creditLimitSignature = `(charges jsonb, now_ms bigint, month_text text,
  defer_top_ups boolean, default_credit_limit bigint)
RETURNS TABLE (made boolean, deferred boolean, present boolean, funded boolean, allowed boolean, billing_mode text,
  balance_micros bigint, monthly_spend_limit_micros bigint, auto_top_up_enabled integer,
  auto_top_up_threshold_micros bigint, auto_top_up_amount_micros bigint, credit_limit_micros bigint,
  key_limit bigint, key_spent bigint, month_spent bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column`

/**
 * The charge function's start since the credit limit: the accounts' rows locked in account order, then each charge in
 * turn with its answer's columns cleared; a charge of 0 is made and writes nothing.
 */
const eachCharge = (accounts: string) =>
  `  PERFORM 1 FROM ${accounts} WHERE account_id IN (SELECT e->>'account_id' FROM jsonb_array_elements(charges) AS e)
    ORDER BY account_id FOR UPDATE;
  FOR c IN SELECT e FROM jsonb_array_elements(charges) WITH ORDINALITY AS x(e, n) ORDER BY n LOOP
    amount := (c->>'amount')::bigint;
    made := false; deferred := false; present := NULL; funded := NULL; allowed := NULL; billing_mode := NULL;
    balance_micros := NULL; monthly_spend_limit_micros := NULL; auto_top_up_enabled := NULL;
    auto_top_up_threshold_micros := NULL; auto_top_up_amount_micros := NULL; credit_limit_micros := NULL;
    key_limit := NULL; key_spent := NULL; month_spent := NULL;
    IF amount = 0 THEN
      made := true;
      RETURN NEXT;
      CONTINUE;
    END IF;`

/**
 * PostgreSQL: the charge function of {@link createChargeFunction} replaced by one that also takes the default credit
 * limit (`default_credit_limit`) and answers the account's `credit_limit_micros`: a postpaid charge is `funded` only
 * when the balance after it stays at or above `-COALESCE(credit_limit_micros, default_credit_limit)`.
 */
export const createChargeFunctionWithCreditLimit = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!SqlStore.columns(sql).pg) return
    const t = tables(prefix)
    yield* sql.unsafe(`DROP FUNCTION ${chargeFunction(prefix)}(jsonb, bigint, text, boolean)`)
    yield* sql.unsafe(`CREATE FUNCTION ${chargeFunction(prefix)}${creditLimitSignature}
DECLARE
  c jsonb;
  acct ${t.accounts}%ROWTYPE;
  amount bigint;
  k_id text;
  k_ancestors text;
  k_present boolean;
  k_chain text[];
BEGIN
${eachCharge(t.accounts)}
    k_id := c->>'key_id';
    SELECT * INTO acct FROM ${t.accounts} WHERE account_id = c->>'account_id';
    present := FOUND;
    IF NOT present THEN
      RETURN NEXT;
      CONTINUE;
    END IF;
    billing_mode := acct.billing_mode;
    balance_micros := acct.balance_micros;
    monthly_spend_limit_micros := acct.monthly_spend_limit_micros;
    auto_top_up_enabled := acct.auto_top_up_enabled;
    auto_top_up_threshold_micros := acct.auto_top_up_threshold_micros;
    auto_top_up_amount_micros := acct.auto_top_up_amount_micros;
    credit_limit_micros := acct.credit_limit_micros;
    funded := CASE acct.billing_mode
      WHEN 'postpaid' THEN acct.balance_micros - amount >= -COALESCE(acct.credit_limit_micros, default_credit_limit)
      WHEN 'prepaid' THEN acct.balance_micros >= amount
      ELSE false END;
    -- the key's chain: the key and its ancestors, their spend rows locked
    SELECT ancestors INTO k_ancestors FROM ${t.keySpend} WHERE key_id = k_id FOR UPDATE;
    k_present := FOUND;
    k_chain := ARRAY[k_id];
    IF k_present AND k_ancestors <> '[]' THEN
      k_chain := k_chain || ARRAY(SELECT jsonb_array_elements_text(k_ancestors::jsonb));
      PERFORM 1 FROM ${t.keySpend} WHERE key_id = ANY(k_chain) FOR UPDATE;
    END IF;
    SELECT s.spend_limit_micros, s.spent_micros INTO key_limit, key_spent FROM ${t.keySpend} AS s
      WHERE s.key_id = ANY(k_chain) AND s.spend_limit_micros IS NOT NULL AND s.spent_micros + amount > s.spend_limit_micros
      ORDER BY s.spend_limit_micros - s.spent_micros, s.key_id LIMIT 1;
    SELECT m.spent_micros INTO month_spent FROM ${t.monthSpend} AS m
      WHERE m.account_id = acct.account_id AND m.month = month_text;
    allowed := key_limit IS NULL AND (acct.monthly_spend_limit_micros IS NULL
      OR COALESCE(month_spent, 0) + amount <= acct.monthly_spend_limit_micros);
    IF funded AND allowed AND defer_top_ups AND acct.auto_top_up_enabled = 1
      AND NOT COALESCE(acct.balance_micros - amount >= acct.auto_top_up_threshold_micros, false) THEN
      deferred := true;
      RETURN NEXT;
      RETURN;
    END IF;
    IF funded AND allowed THEN
      made := true;
      UPDATE ${t.accounts} SET balance_micros = balance_micros - amount, updated_at = now_ms
        WHERE account_id = acct.account_id;
      INSERT INTO ${t.ledger} (account_id, kind, amount_micros, key_id, task_id, description, month, created_at)
        VALUES (acct.account_id, 'charge', -amount, k_id, c->>'task_id', c->>'description', month_text, now_ms);
      IF k_present THEN
        UPDATE ${t.keySpend} SET spent_micros = spent_micros + amount WHERE key_id = ANY(k_chain);
      ELSE
        INSERT INTO ${t.keySpend} (key_id, account_id, spend_limit_micros, spent_micros)
          VALUES (k_id, acct.account_id, NULL, amount)
          ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${t.keySpend}.spent_micros + excluded.spent_micros;
      END IF;
      INSERT INTO ${t.monthSpend} (account_id, month, spent_micros) VALUES (acct.account_id, month_text, amount)
        ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${t.monthSpend}.spent_micros + excluded.spent_micros;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$`)
  })

/**
 * PostgreSQL: the charge function of {@link createChargeFunctionWithCreditLimit} replaced by one that answers the
 * same rows but writes a batch's charges together: each account, key and month row is read (and locked) once, the
 * charges are judged in order on what the charges before them made, and the writes go out at the end, one statement
 * each (the debits, the months' spend, the keys' spend, the ledger entries in the charges' order): a burst of one
 * account's tasks makes one new version of each of its rows, not one a charge that every later statement of the batch
 * walks past, and plans no statement per charge.
 */
export const createBatchedChargeFunction = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!SqlStore.columns(sql).pg) return
    const t = tables(prefix)
    yield* sql.unsafe(`CREATE OR REPLACE FUNCTION ${chargeFunction(prefix)}${creditLimitSignature}
DECLARE
  c jsonb;
  amount bigint;
  a_id text;
  k_id text;
  -- account id -> null (no such account) or {row, month (the month's spend row, null without one), debit, spend}
  accts jsonb := '{}';
  a jsonb;
  a_row jsonb;
  month_base bigint;
  -- key id -> {present, existed (a row before this call), limit, spent, ancestors, account, added}
  keys jsonb := '{}';
  k jsonb;
  chain text[];
  i integer;
  member text;
  least_id text;
  m_lim bigint;
  m_spent bigint;
  m_anc text;
  ledger jsonb := '[]';
BEGIN
${eachCharge(t.accounts)}
    a_id := c->>'account_id';
    k_id := c->>'key_id';
    IF NOT accts ? a_id THEN
      SELECT to_jsonb(r) INTO a_row FROM ${t.accounts} AS r WHERE r.account_id = a_id;
      IF a_row IS NULL THEN
        accts := accts || jsonb_build_object(a_id, 'null'::jsonb);
      ELSE
        SELECT m.spent_micros INTO month_base FROM ${t.monthSpend} AS m
          WHERE m.account_id = a_id AND m.month = month_text;
        accts := accts || jsonb_build_object(a_id, jsonb_build_object('row', a_row, 'month', month_base, 'debit', 0,
          'spend', 0));
      END IF;
    END IF;
    a := accts->a_id;
    present := a <> 'null'::jsonb;
    IF NOT present THEN
      RETURN NEXT;
      CONTINUE;
    END IF;
    a_row := a->'row';
    billing_mode := a_row->>'billing_mode';
    balance_micros := (a_row->>'balance_micros')::bigint - (a->>'debit')::bigint;
    monthly_spend_limit_micros := (a_row->>'monthly_spend_limit_micros')::bigint;
    auto_top_up_enabled := (a_row->>'auto_top_up_enabled')::integer;
    auto_top_up_threshold_micros := (a_row->>'auto_top_up_threshold_micros')::bigint;
    auto_top_up_amount_micros := (a_row->>'auto_top_up_amount_micros')::bigint;
    credit_limit_micros := (a_row->>'credit_limit_micros')::bigint;
    funded := CASE billing_mode
      WHEN 'postpaid' THEN balance_micros - amount >= -COALESCE(credit_limit_micros, default_credit_limit)
      WHEN 'prepaid' THEN balance_micros >= amount
      ELSE false END;
    -- the key's chain: the key and its ancestors, their spend rows read and locked on first use
    chain := ARRAY[k_id];
    i := 1;
    WHILE i <= cardinality(chain) LOOP
      member := chain[i];
      IF NOT keys ? member THEN
        SELECT s.spend_limit_micros, s.spent_micros, s.ancestors INTO m_lim, m_spent, m_anc FROM ${t.keySpend} AS s
          WHERE s.key_id = member FOR UPDATE;
        keys := keys || jsonb_build_object(member, jsonb_build_object('present', FOUND, 'existed', FOUND,
          'limit', m_lim, 'spent', COALESCE(m_spent, 0), 'ancestors', COALESCE(m_anc, '[]')::jsonb, 'added', 0));
      END IF;
      IF i = 1 AND (keys->member->>'present')::boolean AND keys->member->'ancestors' <> '[]'::jsonb THEN
        chain := chain || ARRAY(SELECT jsonb_array_elements_text(keys->member->'ancestors'));
      END IF;
      i := i + 1;
    END LOOP;
    k := keys->k_id;
    -- the limit of the chain the charge would pass with the least left (ties: the lowest key id)
    FOREACH member IN ARRAY chain LOOP
      IF (keys->member->>'present')::boolean AND keys->member->>'limit' IS NOT NULL THEN
        m_lim := (keys->member->>'limit')::bigint;
        m_spent := (keys->member->>'spent')::bigint + (keys->member->>'added')::bigint;
        IF m_spent + amount > m_lim AND (key_limit IS NULL OR m_lim - m_spent < key_limit - key_spent
          OR (m_lim - m_spent = key_limit - key_spent AND member < least_id)) THEN
          key_limit := m_lim;
          key_spent := m_spent;
          least_id := member;
        END IF;
      END IF;
    END LOOP;
    month_spent := CASE WHEN a->>'month' IS NULL AND (a->>'spend')::bigint = 0 THEN NULL
      ELSE COALESCE((a->>'month')::bigint, 0) + (a->>'spend')::bigint END;
    allowed := key_limit IS NULL AND (monthly_spend_limit_micros IS NULL
      OR COALESCE(month_spent, 0) + amount <= monthly_spend_limit_micros);
    IF funded AND allowed AND defer_top_ups AND auto_top_up_enabled = 1
      AND NOT COALESCE(balance_micros - amount >= auto_top_up_threshold_micros, false) THEN
      deferred := true;
      RETURN NEXT;
      EXIT;
    END IF;
    IF funded AND allowed THEN
      made := true;
      accts := jsonb_set(jsonb_set(accts, ARRAY[a_id, 'debit'], to_jsonb((a->>'debit')::bigint + amount)),
        ARRAY[a_id, 'spend'], to_jsonb((a->>'spend')::bigint + amount));
      ledger := ledger || jsonb_build_array(jsonb_build_object('account_id', a_id, 'key_id', k_id,
        'task_id', c->>'task_id', 'description', c->>'description', 'amount', amount));
      IF (k->>'present')::boolean THEN
        FOREACH member IN ARRAY chain LOOP
          IF (keys->member->>'present')::boolean THEN
            keys := jsonb_set(keys, ARRAY[member, 'added'], to_jsonb((keys->member->>'added')::bigint + amount));
          END IF;
        END LOOP;
      ELSE
        -- a key without a spend row gets one (no limit, no ancestors), which the charges after it see
        keys := jsonb_set(keys, ARRAY[k_id], jsonb_build_object('present', true, 'existed', false, 'limit', NULL,
          'spent', 0, 'ancestors', '[]'::jsonb, 'account', a_id, 'added', amount));
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
  -- the writes of the charges made
  UPDATE ${t.accounts} AS acc SET balance_micros = acc.balance_micros - (v.value->>'debit')::bigint,
      updated_at = now_ms
    FROM jsonb_each(accts) AS v
    WHERE acc.account_id = v.key AND v.value <> 'null'::jsonb AND (v.value->>'debit')::bigint > 0;
  INSERT INTO ${t.ledger} (account_id, kind, amount_micros, key_id, task_id, description, month, created_at)
    SELECT l.e->>'account_id', 'charge', -(l.e->>'amount')::bigint, l.e->>'key_id', l.e->>'task_id',
      l.e->>'description', month_text, now_ms
    FROM jsonb_array_elements(ledger) WITH ORDINALITY AS l(e, n) ORDER BY l.n;
  UPDATE ${t.keySpend} AS s SET spent_micros = s.spent_micros + (v.value->>'added')::bigint
    FROM jsonb_each(keys) AS v
    WHERE s.key_id = v.key AND (v.value->>'existed')::boolean AND (v.value->>'added')::bigint > 0;
  INSERT INTO ${t.keySpend} (key_id, account_id, spend_limit_micros, spent_micros)
    SELECT v.key, v.value->>'account', NULL, (v.value->>'added')::bigint FROM jsonb_each(keys) AS v
    WHERE NOT (v.value->>'existed')::boolean AND (v.value->>'added')::bigint > 0
    ON CONFLICT (key_id) DO UPDATE SET spent_micros = ${t.keySpend}.spent_micros + excluded.spent_micros;
  INSERT INTO ${t.monthSpend} (account_id, month, spent_micros)
    SELECT v.key, month_text, (v.value->>'spend')::bigint FROM jsonb_each(accts) AS v
    WHERE v.value <> 'null'::jsonb AND (v.value->>'spend')::bigint > 0
    ON CONFLICT (account_id, month) DO UPDATE SET spent_micros = ${t.monthSpend}.spent_micros + excluded.spent_micros;
END
$$`)
  })
