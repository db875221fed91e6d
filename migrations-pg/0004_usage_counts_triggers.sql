-- The triggers that keep usage_counts (packages/db/src/schema-pg/usage-counts.ts), as migrations/0012 keeps it on
-- SQLite: each tenant's tenant-wide quotas, and the fleet's listeners and L7 ports ('*'), moved in the transaction
-- of every insert, delete (cascades included) and L7 port change, so no code path can forget them. Inserts and
-- deletes fire once per statement and add each tenant's rows of it in one upsert (a cascade or a batch of 500
-- copied rows is one upsert per tenant, not one per row); PostgreSQL takes no transition table on a trigger
-- with a column list, so the L7 port change fires per row, as on SQLite.
CREATE FUNCTION "usage_counts_recount"() RETURNS void LANGUAGE sql AS $$
  UPDATE "usage_counts" SET "used" = 0;
  INSERT INTO "usage_counts" ("scope", "name", "used")
    SELECT "tenant_id", 'loadBalancers', count(*) FROM "load_balancers" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'listeners', count(*) FROM "listeners" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'servers', count(*) FROM "servers" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'certificates', count(*) FROM "certificates" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'acls', count(*) FROM "acls" GROUP BY "tenant_id"
    UNION ALL SELECT '*', 'listeners', count(*) FROM "listeners" HAVING count(*) > 0
    UNION ALL SELECT '*', 'l7Ports', count("l7_port") FROM "listeners" HAVING count("l7_port") > 0
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = excluded."used";
$$;
--> statement-breakpoint
-- A database this migration finds rows in (copied by a build that copied usage_counts as SQLite kept it) is
-- counted from its rows.
SELECT "usage_counts_recount"();
--> statement-breakpoint
-- Each trigger names its transition table moved (the rows inserted, or deleted), so one function serves both.
-- TG_ARGV[0]: the count's name.
CREATE FUNCTION "usage_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "usage_counts" ("scope", "name", "used")
    SELECT "tenant_id", TG_ARGV[0], CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END * count(*) FROM moved GROUP BY "tenant_id"
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = "usage_counts"."used" + excluded."used";
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- A listener counts for its tenant, for the fleet, and for the fleet's L7 ports when it holds one.
CREATE FUNCTION "listeners_usage_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
  INSERT INTO "usage_counts" ("scope", "name", "used")
    SELECT "tenant_id", 'listeners', sign * count(*) FROM moved GROUP BY "tenant_id"
    UNION ALL SELECT '*', 'listeners', sign * count(*) FROM moved HAVING count(*) > 0
    UNION ALL SELECT '*', 'l7Ports', sign * count("l7_port") FROM moved HAVING count("l7_port") > 0
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = "usage_counts"."used" + excluded."used";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "listeners_l7_port_usage"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "usage_counts" ("scope", "name", "used")
    VALUES ('*', 'l7Ports', CASE WHEN NEW."l7_port" IS NULL THEN -1 ELSE 1 END)
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = "usage_counts"."used" + excluded."used";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "load_balancers_usage_insert" AFTER INSERT ON "load_balancers" REFERENCING NEW TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('loadBalancers');
--> statement-breakpoint
CREATE TRIGGER "load_balancers_usage_delete" AFTER DELETE ON "load_balancers" REFERENCING OLD TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('loadBalancers');
--> statement-breakpoint
CREATE TRIGGER "servers_usage_insert" AFTER INSERT ON "servers" REFERENCING NEW TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('servers');
--> statement-breakpoint
CREATE TRIGGER "servers_usage_delete" AFTER DELETE ON "servers" REFERENCING OLD TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('servers');
--> statement-breakpoint
CREATE TRIGGER "certificates_usage_insert" AFTER INSERT ON "certificates" REFERENCING NEW TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('certificates');
--> statement-breakpoint
CREATE TRIGGER "certificates_usage_delete" AFTER DELETE ON "certificates" REFERENCING OLD TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('certificates');
--> statement-breakpoint
CREATE TRIGGER "acls_usage_insert" AFTER INSERT ON "acls" REFERENCING NEW TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('acls');
--> statement-breakpoint
CREATE TRIGGER "acls_usage_delete" AFTER DELETE ON "acls" REFERENCING OLD TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_counts_moved"('acls');
--> statement-breakpoint
CREATE TRIGGER "listeners_usage_insert" AFTER INSERT ON "listeners" REFERENCING NEW TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "listeners_usage_moved"();
--> statement-breakpoint
CREATE TRIGGER "listeners_usage_delete" AFTER DELETE ON "listeners" REFERENCING OLD TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "listeners_usage_moved"();
--> statement-breakpoint
CREATE TRIGGER "listeners_l7_port_usage" AFTER UPDATE OF "l7_port" ON "listeners"
  FOR EACH ROW WHEN ((OLD."l7_port" IS NULL) <> (NEW."l7_port" IS NULL)) EXECUTE FUNCTION "listeners_l7_port_usage"();
