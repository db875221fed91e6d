CREATE TABLE `address_holds` (
	`address` text PRIMARY KEY NOT NULL,
	`pool_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`hold_until` text NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `address_pools`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `address_holds_pool_idx` ON `address_holds` (`pool_id`);--> statement-breakpoint
CREATE TABLE `address_pools` (
	`id` text PRIMARY KEY NOT NULL,
	`cidr` text NOT NULL,
	`description` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `address_pools_cidr_uq` ON `address_pools` (`cidr`);--> statement-breakpoint
DROP INDEX `listeners_transport_port_idx`;--> statement-breakpoint
ALTER TABLE `listeners` ADD `l7_port` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `listeners_l7_port_uq` ON `listeners` (`l7_port`) WHERE "listeners"."l7_port" IS NOT NULL;--> statement-breakpoint
ALTER TABLE `load_balancers` ADD `address` text;--> statement-breakpoint
ALTER TABLE `load_balancers` ADD `address_pool_id` text REFERENCES address_pools(id);--> statement-breakpoint
CREATE UNIQUE INDEX `load_balancers_address_uq` ON `load_balancers` (`address`);--> statement-breakpoint
CREATE INDEX `load_balancers_pool_idx` ON `load_balancers` (`address_pool_id`);--> statement-breakpoint
ALTER TABLE `nodes` ADD `vip_mode` text;