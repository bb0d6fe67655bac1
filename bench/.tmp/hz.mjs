import pg from "pg"
const c = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" })
await c.connect()
const holders = []
for (let i = 0; i < 8; i++) { const h = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" }); await h.connect(); await h.query("BEGIN"); await h.query("SELECT pg_advisory_xact_lock_shared(1835495266, 42)"); if (i % 2) await h.query("SELECT txid_current()"); holders.push(h) }
const A = `WITH s AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next)
  SELECT COALESCE(MIN(((s.next >> 32) << 32) + a.xid - CASE WHEN a.xid > (s.next & 4294967295) THEN 4294967296 ELSE 0 END), MIN(s.next)) AS horizon
  FROM s LEFT JOIN (SELECT act.backend_xid::text::bigint AS xid FROM pg_locks l JOIN pg_stat_activity act ON act.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.classid = 1835495266 AND l.objid = 42 AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND act.backend_xid IS NOT NULL) a ON true`
const B = `WITH s AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next),
  l AS MATERIALIZED (SELECT locktype, classid, objid, objsubid, database, pid, transactionid FROM pg_lock_status() WHERE locktype IN ('advisory', 'transactionid') AND granted)
  SELECT COALESCE(MIN(((s.next >> 32) << 32) + a.xid - CASE WHEN a.xid > (s.next & 4294967295) THEN 4294967296 ELSE 0 END), MIN(s.next)) AS horizon
  FROM s LEFT JOIN (SELECT x.transactionid::text::bigint AS xid FROM l JOIN l x ON x.pid = l.pid AND x.locktype = 'transactionid'
    WHERE l.locktype = 'advisory' AND l.classid = 1835495266 AND l.objid = 42 AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())) a ON true`
for (const [n, q] of [["A", A], ["B", B], ["A", A], ["B", B]]) {
  const r = await c.query(q); const t0 = performance.now(); for (let i = 0; i < 500; i++) await c.query(q); console.log(n, ((performance.now() - t0) / 500).toFixed(3), "ms", r.rows[0])
}
for (const h of holders) { await h.query("ROLLBACK"); await h.end() }
await c.end()
