CREATE TABLE "acls" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"entries" json NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "address_holds" (
	"address" text PRIMARY KEY NOT NULL,
	"pool_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"hold_until" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "address_pools" (
	"id" text PRIMARY KEY NOT NULL,
	"cidr" text NOT NULL,
	"description" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "certificates" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"certificate_pem" text NOT NULL,
	"private_key_pem" text NOT NULL,
	"subject" text NOT NULL,
	"issuer" text NOT NULL,
	"sans" json NOT NULL,
	"not_before" text NOT NULL,
	"not_after" text NOT NULL,
	"fingerprint" text NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cluster" (
	"singleton" integer PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"tenant_id" text NOT NULL,
	"key" text NOT NULL,
	"request_fingerprint" text NOT NULL,
	"status_code" integer NOT NULL,
	"response_body" text NOT NULL,
	"response_headers" json NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "idempotency_keys_tenant_id_key_pk" PRIMARY KEY("tenant_id","key")
);
--> statement-breakpoint
CREATE TABLE "lb_events" (
	"id" text PRIMARY KEY NOT NULL,
	"load_balancer_id" text NOT NULL,
	"kind" text NOT NULL,
	"at" text NOT NULL,
	"summary" text NOT NULL,
	"actor" json,
	"operation" text,
	"resource_id" text,
	"detail" json NOT NULL
);
--> statement-breakpoint
CREATE TABLE "listeners" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"load_balancer_id" text NOT NULL,
	"protocol" text NOT NULL,
	"transport" text NOT NULL,
	"port" integer NOT NULL,
	"backend_port" integer,
	"server_group_id" text NOT NULL,
	"scheduler" text NOT NULL,
	"persistence_timeout" integer NOT NULL,
	"sticky_session" json,
	"health_check" json NOT NULL,
	"proxy_protocol" text NOT NULL,
	"x_forwarded_for" boolean NOT NULL,
	"x_forwarded_for_mode" text DEFAULT 'replace' NOT NULL,
	"idle_timeout" integer NOT NULL,
	"request_timeout" integer,
	"connection_drain_timeout" integer NOT NULL,
	"certificate_id" text,
	"additional_certificate_ids" json NOT NULL,
	"acl_id" text,
	"acl_mode" text,
	"description" text NOT NULL,
	"max_connections" integer DEFAULT 16384 NOT NULL,
	"status" text NOT NULL,
	"l7_port" integer,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "load_balancers" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"address_type" text NOT NULL,
	"placement_mode" text NOT NULL,
	"placement_node_count" integer,
	"deletion_protection" boolean NOT NULL,
	"tags" json NOT NULL,
	"config_version" bigint DEFAULT 1 NOT NULL,
	"address" text,
	"address_pool_id" text,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "nodes" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text,
	"kind" text NOT NULL,
	"address" text NOT NULL,
	"capacity_weight" integer DEFAULT 100 NOT NULL,
	"drain" boolean DEFAULT false NOT NULL,
	"applied_config_version" bigint DEFAULT 0 NOT NULL,
	"last_heartbeat_at" text,
	"last_error" text,
	"vip_mode" text,
	"active_connections" bigint DEFAULT 0 NOT NULL,
	"new_connections_per_second" double precision DEFAULT 0 NOT NULL,
	"requests_per_second" double precision DEFAULT 0 NOT NULL,
	"credential_hash" text,
	"join_token_hash" text,
	"join_token_expires_at" text,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rules" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"listener_id" text NOT NULL,
	"domain" text,
	"path" text,
	"server_group_id" text NOT NULL,
	"priority" integer NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_groups" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"load_balancer_id" text NOT NULL,
	"name" text NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "servers" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_group_id" text NOT NULL,
	"address" text NOT NULL,
	"port" integer NOT NULL,
	"weight" integer NOT NULL,
	"description" text NOT NULL,
	"revision" bigint DEFAULT 1 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_health" (
	"listener_id" text NOT NULL,
	"server_id" text NOT NULL,
	"status" text NOT NULL,
	"since" text NOT NULL,
	"last_error" text,
	"updated_at" text NOT NULL,
	CONSTRAINT "server_health_listener_id_server_id_pk" PRIMARY KEY("listener_id","server_id")
);
--> statement-breakpoint
CREATE TABLE "tenant_backend_networks" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"networks" json NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tenant_quotas" (
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"limit" integer NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "tenant_quotas_tenant_id_name_pk" PRIMARY KEY("tenant_id","name")
);
--> statement-breakpoint
CREATE TABLE "tenants" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"secret_hash" text NOT NULL,
	"last_used_at" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "tokens_secret_hash_unique" UNIQUE("secret_hash")
);
--> statement-breakpoint
ALTER TABLE "address_holds" ADD CONSTRAINT "address_holds_pool_id_address_pools_id_fk" FOREIGN KEY ("pool_id") REFERENCES "public"."address_pools"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lb_events" ADD CONSTRAINT "lb_events_load_balancer_id_load_balancers_id_fk" FOREIGN KEY ("load_balancer_id") REFERENCES "public"."load_balancers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "listeners" ADD CONSTRAINT "listeners_load_balancer_id_load_balancers_id_fk" FOREIGN KEY ("load_balancer_id") REFERENCES "public"."load_balancers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "listeners" ADD CONSTRAINT "listeners_server_group_id_server_groups_id_fk" FOREIGN KEY ("server_group_id") REFERENCES "public"."server_groups"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "listeners" ADD CONSTRAINT "listeners_certificate_id_certificates_id_fk" FOREIGN KEY ("certificate_id") REFERENCES "public"."certificates"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "listeners" ADD CONSTRAINT "listeners_acl_id_acls_id_fk" FOREIGN KEY ("acl_id") REFERENCES "public"."acls"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "load_balancers" ADD CONSTRAINT "load_balancers_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "load_balancers" ADD CONSTRAINT "load_balancers_address_pool_id_address_pools_id_fk" FOREIGN KEY ("address_pool_id") REFERENCES "public"."address_pools"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rules" ADD CONSTRAINT "rules_listener_id_listeners_id_fk" FOREIGN KEY ("listener_id") REFERENCES "public"."listeners"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rules" ADD CONSTRAINT "rules_server_group_id_server_groups_id_fk" FOREIGN KEY ("server_group_id") REFERENCES "public"."server_groups"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_groups" ADD CONSTRAINT "server_groups_load_balancer_id_load_balancers_id_fk" FOREIGN KEY ("load_balancer_id") REFERENCES "public"."load_balancers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "servers" ADD CONSTRAINT "servers_server_group_id_server_groups_id_fk" FOREIGN KEY ("server_group_id") REFERENCES "public"."server_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_health" ADD CONSTRAINT "server_health_listener_id_listeners_id_fk" FOREIGN KEY ("listener_id") REFERENCES "public"."listeners"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_health" ADD CONSTRAINT "server_health_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tenant_backend_networks" ADD CONSTRAINT "tenant_backend_networks_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tenant_quotas" ADD CONSTRAINT "tenant_quotas_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "acls_tenant_idx" ON "acls" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE INDEX "address_holds_pool_idx" ON "address_holds" USING btree ("pool_id");--> statement-breakpoint
CREATE UNIQUE INDEX "address_pools_cidr_uq" ON "address_pools" USING btree ("cidr");--> statement-breakpoint
CREATE INDEX "certificates_tenant_idx" ON "certificates" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE INDEX "lb_events_lb_idx" ON "lb_events" USING btree ("load_balancer_id","id");--> statement-breakpoint
CREATE INDEX "lb_events_lb_kind_idx" ON "lb_events" USING btree ("load_balancer_id","kind","id");--> statement-breakpoint
CREATE UNIQUE INDEX "listeners_port_uq" ON "listeners" USING btree ("load_balancer_id","transport","port");--> statement-breakpoint
CREATE INDEX "listeners_sg_idx" ON "listeners" USING btree ("server_group_id");--> statement-breakpoint
CREATE INDEX "listeners_tenant_idx" ON "listeners" USING btree ("tenant_id");--> statement-breakpoint
CREATE UNIQUE INDEX "listeners_l7_port_uq" ON "listeners" USING btree ("l7_port") WHERE "listeners"."l7_port" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "load_balancers_tenant_idx" ON "load_balancers" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "load_balancers_address_uq" ON "load_balancers" USING btree ("address");--> statement-breakpoint
CREATE INDEX "load_balancers_pool_idx" ON "load_balancers" USING btree ("address_pool_id");--> statement-breakpoint
CREATE UNIQUE INDEX "nodes_credential_hash_idx" ON "nodes" USING btree ("credential_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "nodes_join_token_hash_idx" ON "nodes" USING btree ("join_token_hash");--> statement-breakpoint
CREATE INDEX "rules_listener_idx" ON "rules" USING btree ("listener_id","id");--> statement-breakpoint
CREATE INDEX "rules_sg_idx" ON "rules" USING btree ("server_group_id");--> statement-breakpoint
CREATE INDEX "server_groups_lb_idx" ON "server_groups" USING btree ("load_balancer_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "servers_endpoint_uq" ON "servers" USING btree ("server_group_id","address","port");--> statement-breakpoint
CREATE INDEX "servers_tenant_idx" ON "servers" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "tokens_tenant_idx" ON "tokens" USING btree ("tenant_id");