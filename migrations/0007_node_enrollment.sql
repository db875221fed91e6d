ALTER TABLE `nodes` ADD `name` text;--> statement-breakpoint
ALTER TABLE `nodes` ADD `credential_hash` text;--> statement-breakpoint
ALTER TABLE `nodes` ADD `join_token_hash` text;--> statement-breakpoint
ALTER TABLE `nodes` ADD `join_token_expires_at` text;--> statement-breakpoint
CREATE UNIQUE INDEX `nodes_credential_hash_idx` ON `nodes` (`credential_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `nodes_join_token_hash_idx` ON `nodes` (`join_token_hash`);