CREATE TABLE `server_health` (
	`listener_id` text NOT NULL,
	`server_id` text NOT NULL,
	`status` text NOT NULL,
	`since` text NOT NULL,
	`last_error` text,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`listener_id`, `server_id`),
	FOREIGN KEY (`listener_id`) REFERENCES `listeners`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE cascade
);
