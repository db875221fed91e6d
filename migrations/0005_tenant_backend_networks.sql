CREATE TABLE `tenant_backend_networks` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`networks` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE cascade
);
