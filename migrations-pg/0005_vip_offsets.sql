DROP INDEX "load_balancers_pool_idx";--> statement-breakpoint
ALTER TABLE "load_balancers" ADD COLUMN "address_offset" bigint;--> statement-breakpoint
CREATE INDEX "load_balancers_pool_idx" ON "load_balancers" USING btree ("address_pool_id","address_offset");--> statement-breakpoint
-- Each address pool's count of load balancers with a VIP from it (scope: the pool's id, name: addresses), kept
-- as migrations/0015 keeps it on SQLite: the allocator reads whether a pool's offsets are dense from one row.
CREATE OR REPLACE FUNCTION "usage_counts_recount"() RETURNS void LANGUAGE sql AS $$
  UPDATE "usage_counts" SET "used" = 0;
  INSERT INTO "usage_counts" ("scope", "name", "used")
    SELECT "tenant_id", 'loadBalancers', count(*) FROM "load_balancers" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'listeners', count(*) FROM "listeners" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'servers', count(*) FROM "servers" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'certificates', count(*) FROM "certificates" GROUP BY "tenant_id"
    UNION ALL SELECT "tenant_id", 'acls', count(*) FROM "acls" GROUP BY "tenant_id"
    UNION ALL SELECT '*', 'listeners', count(*) FROM "listeners" HAVING count(*) > 0
    UNION ALL SELECT '*', 'l7Ports', count("l7_port") FROM "listeners" HAVING count("l7_port") > 0
    UNION ALL SELECT "address_pool_id", 'addresses', count(*) FROM "load_balancers"
      WHERE "address_pool_id" IS NOT NULL GROUP BY "address_pool_id"
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = excluded."used";
$$;
--> statement-breakpoint
SELECT "usage_counts_recount"();
--> statement-breakpoint
-- A load balancer counts for its tenant and, with a VIP, for its pool.
CREATE FUNCTION "load_balancers_usage_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
  INSERT INTO "usage_counts" ("scope", "name", "used")
    SELECT "tenant_id", 'loadBalancers', sign * count(*) FROM moved GROUP BY "tenant_id"
    UNION ALL SELECT "address_pool_id", 'addresses', sign * count(*) FROM moved
      WHERE "address_pool_id" IS NOT NULL GROUP BY "address_pool_id"
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = "usage_counts"."used" + excluded."used";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "load_balancers_pool_usage"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "usage_counts" ("scope", "name", "used")
    SELECT OLD."address_pool_id", 'addresses', -1 WHERE OLD."address_pool_id" IS NOT NULL
    UNION ALL SELECT NEW."address_pool_id", 'addresses', 1 WHERE NEW."address_pool_id" IS NOT NULL
  ON CONFLICT ("scope", "name") DO UPDATE SET "used" = "usage_counts"."used" + excluded."used";
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER "load_balancers_usage_insert" ON "load_balancers";
--> statement-breakpoint
DROP TRIGGER "load_balancers_usage_delete" ON "load_balancers";
--> statement-breakpoint
CREATE TRIGGER "load_balancers_usage_insert" AFTER INSERT ON "load_balancers" REFERENCING NEW TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "load_balancers_usage_moved"();
--> statement-breakpoint
CREATE TRIGGER "load_balancers_usage_delete" AFTER DELETE ON "load_balancers" REFERENCING OLD TABLE AS moved
  FOR EACH STATEMENT EXECUTE FUNCTION "load_balancers_usage_moved"();
--> statement-breakpoint
CREATE TRIGGER "load_balancers_pool_usage" AFTER UPDATE OF "address_pool_id" ON "load_balancers"
  FOR EACH ROW WHEN (OLD."address_pool_id" IS DISTINCT FROM NEW."address_pool_id")
  EXECUTE FUNCTION "load_balancers_pool_usage"();
