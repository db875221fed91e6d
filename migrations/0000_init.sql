CREATE TABLE `acls` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`entries` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `acls_tenant_idx` ON `acls` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `certificates` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`certificate_pem` text NOT NULL,
	`private_key_pem` text NOT NULL,
	`subject` text NOT NULL,
	`issuer` text NOT NULL,
	`sans` text NOT NULL,
	`not_before` text NOT NULL,
	`not_after` text NOT NULL,
	`fingerprint` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `certificates_tenant_idx` ON `certificates` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`tenant_id` text NOT NULL,
	`key` text NOT NULL,
	`request_fingerprint` text NOT NULL,
	`status_code` integer NOT NULL,
	`response_body` text NOT NULL,
	`response_headers` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `listeners` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`load_balancer_id` text NOT NULL,
	`protocol` text NOT NULL,
	`transport` text NOT NULL,
	`port` integer NOT NULL,
	`backend_port` integer,
	`server_group_id` text NOT NULL,
	`scheduler` text NOT NULL,
	`persistence_timeout` integer NOT NULL,
	`sticky_session` text,
	`health_check` text NOT NULL,
	`proxy_protocol` text NOT NULL,
	`x_forwarded_for` integer NOT NULL,
	`idle_timeout` integer NOT NULL,
	`request_timeout` integer,
	`connection_drain_timeout` integer NOT NULL,
	`certificate_id` text,
	`additional_certificate_ids` text NOT NULL,
	`acl_id` text,
	`acl_mode` text,
	`description` text NOT NULL,
	`status` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`load_balancer_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`server_group_id`) REFERENCES `server_groups`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`certificate_id`) REFERENCES `certificates`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`acl_id`) REFERENCES `acls`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `listeners_port_uq` ON `listeners` (`load_balancer_id`,`transport`,`port`);--> statement-breakpoint
CREATE INDEX `listeners_sg_idx` ON `listeners` (`server_group_id`);--> statement-breakpoint
CREATE TABLE `load_balancers` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`address_type` text NOT NULL,
	`placement_mode` text NOT NULL,
	`placement_node_count` integer,
	`deletion_protection` integer NOT NULL,
	`tags` text NOT NULL,
	`config_version` integer DEFAULT 1 NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `load_balancers_tenant_idx` ON `load_balancers` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `nodes` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`address` text NOT NULL,
	`capacity_weight` integer DEFAULT 100 NOT NULL,
	`drain` integer DEFAULT false NOT NULL,
	`applied_config_version` integer DEFAULT 0 NOT NULL,
	`last_heartbeat_at` text,
	`last_error` text,
	`active_connections` integer DEFAULT 0 NOT NULL,
	`new_connections_per_second` real DEFAULT 0 NOT NULL,
	`requests_per_second` real DEFAULT 0 NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rules` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`listener_id` text NOT NULL,
	`domain` text,
	`path` text,
	`server_group_id` text NOT NULL,
	`priority` integer NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`listener_id`) REFERENCES `listeners`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`server_group_id`) REFERENCES `server_groups`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `rules_listener_idx` ON `rules` (`listener_id`,`id`);--> statement-breakpoint
CREATE INDEX `rules_sg_idx` ON `rules` (`server_group_id`);--> statement-breakpoint
CREATE TABLE `server_groups` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`load_balancer_id` text NOT NULL,
	`name` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`load_balancer_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `server_groups_lb_idx` ON `server_groups` (`load_balancer_id`,`id`);--> statement-breakpoint
CREATE TABLE `servers` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`server_group_id` text NOT NULL,
	`address` text NOT NULL,
	`port` integer NOT NULL,
	`weight` integer NOT NULL,
	`description` text NOT NULL,
	`revision` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`server_group_id`) REFERENCES `server_groups`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `servers_endpoint_uq` ON `servers` (`server_group_id`,`address`,`port`);--> statement-breakpoint
CREATE TABLE `tenants` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`role` text NOT NULL,
	`secret_hash` text NOT NULL,
	`last_used_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tokens_secret_hash_unique` ON `tokens` (`secret_hash`);--> statement-breakpoint
CREATE INDEX `tokens_tenant_idx` ON `tokens` (`tenant_id`);