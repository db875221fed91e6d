CREATE TABLE `tenant_quotas` (
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`limit` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `name`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `servers_tenant_idx` ON `servers` (`tenant_id`);