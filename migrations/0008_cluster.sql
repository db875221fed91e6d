CREATE TABLE `cluster` (
	`singleton` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`created_at` text NOT NULL
);
